package rest

import (
	"net/http"
	"strings"

	"github.com/allot-sched/allot/internal/api"
)

// localPaths are served by every replica, leading or not: probes, metrics
// and the API description say something about the replica itself.
var localPaths = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true, "/openapi.json": true}

// leaderOnly answers not_leader, with the leader's URL, to every request
// but localPaths while Options.Leadership says this replica does not lead:
// only the leader runs the loop that serves them. It runs after
// authentication, so that only callers with a token learn where the leader
// is (the dashboard's pages, which check tokens and cookies themselves,
// get the answer without the leader). Without a Leadership the server
// always leads.
//
// A follower with Options.FollowerReads serves the job reads from the
// shared store (followerRead) instead (docs/ha.md).
func (s *Server) leaderOnly(next http.Handler) http.Handler {
	if s.opt.Leadership == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if localPaths[r.URL.Path] || (s.ctrl == nil && s.opt.FollowerReads != nil && followerRead(r)) {
			next.ServeHTTP(w, r)
			return
		}
		if leading, leader := s.opt.Leadership.Leader(); !leading {
			if s.opt.Auth != nil && principal(r).Role == "" {
				// The dashboard's pages authenticate themselves, after
				// this: a caller not known yet is not told where the
				// leader is.
				leader = ""
			}
			s.fail(w, &api.NotLeaderError{Leader: leader})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// notLeading reports whether a Leadership says this replica does not
// lead, and the leader's URL then.
func (s *Server) notLeading() (bool, string) {
	if s.opt.Leadership == nil {
		return false, ""
	}
	leading, leader := s.opt.Leadership.Leader()
	return !leading, leader
}

// followerRead reports whether r is a read a follower serves from the
// store: GET /v1/jobs, /v1/jobs/{id}, /v1/jobs/{id}/logs and /v1/events.
func followerRead(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	if r.URL.Path == "/v1/jobs" || r.URL.Path == "/v1/events" {
		return true
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/jobs/")
	if !ok || rest == "" {
		return false
	}
	id, tail, nested := strings.Cut(rest, "/")
	return id != "" && (!nested || tail == "logs")
}
