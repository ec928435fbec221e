package rest

import (
	"net/http"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
)

func TestExplainRouteAnswersReadersOnly(t *testing.T) {
	s := newAuthServer(t, "batch")
	alice := s.token(t, api.CreateToken{Role: "submitter", Queues: []string{"*"}, Shares: []string{"research"}})
	wk := s.token(t, api.CreateToken{Role: "worker", Workers: []string{"w1"}})
	s.must(t, 200, wk.Secret, "POST", "/v1/workers", `{"name":"w1"}`, nil)
	// blocker takes w1's only slot; its timeout (10 minutes) is the
	// estimate of its runtime, as nothing of its stage has run yet.
	s.must(t, 201, s.admin, "POST", "/v1/jobs", "id: blocker\nshare: ops\ntasks: [{name: x, run: 'sleep 600', timeout: 10m}]\n", nil)
	s.must(t, 201, alice.Secret, "POST", "/v1/jobs", "id: mine\nshare: research\ntasks: [{name: x, run: 'true'}]\n", nil)

	var x api.Explanation
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.must(t, 200, alice.Secret, "GET", "/v1/jobs/mine/explain", "", &x)
		if len(x.Pending) > 0 && x.Pending[0].Reason.Code == model.ReasonNoFreeSlot || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if x.Job != "mine" || len(x.Pending) != 1 || x.Pending[0].Reason.Code != model.ReasonNoFreeSlot {
		t.Fatalf("explanation = %+v, want mine waiting for the busy slot", x)
	}
	if p := x.Pending[0].Placement; p == nil || p.Closest == nil || p.Closest.Worker != "w1" || p.FitNow != 0 {
		t.Errorf("placement = %+v, want w1 closest (busy)", p)
	}
	if e := x.Estimate; e == nil || !e.Known || e.Wait() > 10*time.Minute || e.Wait() < 9*time.Minute || e.Worker != "w1" {
		t.Errorf("estimate = %+v, want a start on w1 when blocker's 10-minute timeout ends", e)
	}

	for _, tc := range []struct {
		name, token, path string
		want              int
		code              string
	}{
		{"another team's job is not found", alice.Secret, "/v1/jobs/blocker/explain", http.StatusNotFound, api.CodeNotFound},
		{"an unknown job is not found", s.admin, "/v1/jobs/nope/explain", http.StatusNotFound, api.CodeNotFound},
		{"a worker may not read jobs", wk.Secret, "/v1/jobs/mine/explain", http.StatusForbidden, api.CodeForbidden},
		{"no token", "", "/v1/jobs/mine/explain", http.StatusUnauthorized, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, eb, raw, _ := s.as(t, tc.token, "GET", tc.path, "")
			if status != tc.want || tc.code != "" && eb.Error.Code != tc.code {
				t.Errorf("%d %s, want %d %s", status, raw, tc.want, tc.code)
			}
		})
	}
	var admin api.Explanation
	s.must(t, 200, s.admin, "GET", "/v1/jobs/blocker/explain", "", &admin)
	if admin.Tasks.Running != 1 || len(admin.Pending) != 0 {
		t.Errorf("blocker = %+v, want its one task running and nothing pending", admin)
	}
	if admin.Queue != "batch" {
		t.Errorf("queue = %q", admin.Queue)
	}
}
