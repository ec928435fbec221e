package rest

import (
	"net/http"

	"github.com/allot-sched/allot/internal/auth"
)

// requeue runs a job's tasks, or one task, again (allot requeue). It is
// allowed to whoever may cancel the job: a submitter acts on its own jobs
// only.
func (s *Server) requeue(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.CancelJobs) || !s.visible(w, r, r.PathValue("id")) {
		return
	}
	job, err := s.ctrl.Requeue(r.Context(), r.PathValue("id"), r.PathValue("task"))
	s.reply(w, job, err)
}

// cancelTask cancels one task of a job (allot cancel JOB/TASK), with the
// same authorisation as cancelling the job.
func (s *Server) cancelTask(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.CancelJobs) || !s.visible(w, r, r.PathValue("id")) {
		return
	}
	job, err := s.ctrl.CancelTask(r.Context(), r.PathValue("id"), r.PathValue("task"))
	s.reply(w, job, err)
}
