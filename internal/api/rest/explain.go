package rest

import (
	"net/http"

	"github.com/allot-sched/allot/internal/auth"
)

// explain answers GET /v1/jobs/{id}/explain: why the job's waiting tasks
// are not running and when it should start. A submitter may explain the
// jobs it may read; another team's job is not found, as for getJob.
func (s *Server) explain(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.allow(w, r, auth.ReadJobs) || !s.visible(w, r, id) {
		return
	}
	x, err := s.ctrl.Explain(r.Context(), id)
	s.reply(w, x, err)
}
