package rest

import (
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
)

func TestElasticToggleIsAdminOnlyAndRefusedInsideTheCooldown(t *testing.T) {
	s := newAuthServer(t, "batch")
	sub := s.token(t, api.CreateToken{Role: "submitter", Queues: []string{"*"}, Shares: []string{"*"}})
	wk := s.token(t, api.CreateToken{Role: "worker", Workers: []string{"w1"}})
	s.must(t, 200, wk.Secret, "POST", "/v1/workers", `{"name":"w1"}`, nil)

	for _, who := range []struct{ role, secret string }{{"submitter", sub.Secret}, {"worker", wk.Secret}} {
		status, eb, raw, _ := s.as(t, who.secret, "POST", "/v1/workers/w1/elastic", `{"enabled":false}`)
		if status != 403 || eb.Error.Code != api.CodeForbidden {
			t.Errorf("%s toggling: %d %s, want 403", who.role, status, raw)
		}
	}
	var w api.Worker
	s.must(t, 200, s.admin, "POST", "/v1/workers/w1/elastic", `{"enabled":false}`, &w)
	if w.State != "disabled" || w.DisabledBy != "manual" {
		t.Fatalf("after toggling off: %+v, want disabled by manual", w)
	}
	status, eb, raw, _ := s.as(t, s.admin, "POST", "/v1/workers/w1/elastic", `{"enabled":true}`)
	if status != 409 || eb.Error.Code != api.CodeConflict || !strings.Contains(eb.Error.Message, "toggleCooldownSeconds") {
		t.Errorf("toggling back at once: %d %s, want 409 naming the cooldown", status, raw)
	}
	status, eb, raw, _ = s.as(t, s.admin, "POST", "/v1/workers/ghost/elastic", `{"enabled":true}`)
	if status != 404 || eb.Error.Code != api.CodeNotFound {
		t.Errorf("unknown worker: %d %s, want 404", status, raw)
	}
	status, eb, raw, _ = s.as(t, s.admin, "POST", "/v1/workers/w1/elastic", `{}`)
	if status != 400 || eb.Error.Field != "enabled" {
		t.Errorf("no enabled field: %d %s, want 400 naming enabled", status, raw)
	}
	var ws []api.Worker
	s.must(t, 200, sub.Secret, "GET", "/v1/workers", "", &ws)
	if len(ws) != 1 || ws[0].State != "disabled" || ws[0].DisabledBy != "manual" {
		t.Errorf("listing %+v: the disabled worker is listed with who disabled it", ws)
	}
}

func TestHeartbeatCarriesCacheHintsAndDensityIsServed(t *testing.T) {
	s := newAuthServer(t, "batch")
	wk := s.token(t, api.CreateToken{Role: "worker", Workers: []string{"w1"}})
	s.must(t, 200, wk.Secret, "POST", "/v1/workers", `{"name":"w1","cache":[{"kind":"model","name":"llama-8b"}]}`, nil)
	s.must(t, 204, wk.Secret, "POST", "/v1/workers/w1/heartbeat", `{"cache":[{"kind":"dataset","name":"squad"}]}`, nil)
	s.must(t, 204, wk.Secret, "POST", "/v1/workers/w1/heartbeat", ``, nil)
	status, eb, raw, _ := s.as(t, wk.Secret, "POST", "/v1/workers/w1/heartbeat", `{"cache":[{"kind":"weights","name":"x"}]}`)
	if status != 400 || eb.Error.Field != "cache[0].kind" {
		t.Errorf("bad hint kind: %d %s, want 400 naming cache[0].kind", status, raw)
	}
	var ws []api.Worker
	s.must(t, 200, s.admin, "GET", "/v1/workers", "", &ws)
	if len(ws) != 1 || len(ws[0].Cache) != 2 || ws[0].Cache[0].Name != "llama-8b" || ws[0].Cache[1].Kind != "dataset" ||
		ws[0].Cache[0].Expires.Sub(ws[0].Cache[0].At).Hours() != 1 {
		t.Errorf("worker view %+v, want both hints, each fresh for the default hour", ws)
	}
	var d api.Density
	s.must(t, 200, s.admin, "GET", "/v1/density", "", &d)
	if d.BucketSeconds != 60 || len(d.Buckets) == 0 || d.Buckets[len(d.Buckets)-1].EnabledWorkers != 1 {
		t.Errorf("density %+v, want 60 s buckets counting the one enabled worker", d)
	}
	status, _, raw, _ = s.as(t, wk.Secret, "GET", "/v1/density", "")
	if status != 403 {
		t.Errorf("a worker reading the density: %d %s, want 403", status, raw)
	}
}
