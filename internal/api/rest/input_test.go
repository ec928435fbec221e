package rest

import (
	"strings"
	"testing"
)

// TestNoBodyCarriesAQuantityOrNumberTheServerCannotHold sends every route
// that takes a quantity, a count or a duration values that overflow, are
// not whole, are not numbers or exceed the documented maximum. Each is a
// 400 naming the field, and nothing is stored.
func TestNoBodyCarriesAQuantityOrNumberTheServerCannotHold(t *testing.T) {
	srv := newServer(t, 0)
	if status, _, raw := call(t, srv, "POST", "/v1/jobs", "application/yaml", "id: a\nqueue: batch\ntasks: [{name: x, run: 'true'}]\n"); status != 201 {
		t.Fatalf("submit: %d %s", status, raw)
	}
	for _, tc := range []struct {
		name, method, path, body, field string
		words                           []string
	}{
		{"job: memory that overflows", "POST", "/v1/jobs", `{"queue":"batch","tasks":[{"name":"x","run":"true","resources":{"memory":"1e30"}}]}`, "tasks[0].resources.memory", nil},
		{"job: cpu that overflows", "POST", "/v1/jobs", "queue: batch\ntasks: [{name: x, run: 'true', resources: {cpu: 1e30}}]", "tasks[0].resources.cpu", nil},
		{"job: a fractional count", "POST", "/v1/jobs", "queue: batch\ntasks: [{name: x, run: 'true', count: 2.7}]", "tasks[0].count", nil},
		{"job: a huge negative priority", "POST", "/v1/jobs", "queue: batch\npriority: -1e308\ntasks: [{name: x, run: 'true'}]", "priority", []string{"-1000000", "1000000"}},
		{"job: a type error in one-line JSON", "POST", "/v1/jobs", `{"id":"b","tasks":[{"name":"x","count":"many","run":"true"}]}`, "tasks[0].count", nil},
		{"job: the id .", "POST", "/v1/jobs", "id: '.'\nqueue: batch\ntasks: [{name: x, run: 'true'}]", "id", nil},
		{"job: the id ..", "POST", "/v1/jobs", `{"id":"..","queue":"batch","tasks":[{"name":"x","run":"true"}]}`, "id", nil},
		{"worker: memory that overflows", "POST", "/v1/workers", `{"name":"w","resources":{"memory":"1e30","cpu":"1"}}`, "resources.memory", nil},
		{"worker: cpu that overflows", "POST", "/v1/workers", `{"name":"w","resources":{"cpu":1e30}}`, "resources.cpu", nil},
		{"worker: gpu memory with a unit that overflows", "POST", "/v1/workers", `{"name":"w","resources":{"gpus":1,"gpuMemory":"1e300Ti"}}`, "resources.gpuMemory", nil},
		{"worker: gpus past the maximum", "POST", "/v1/workers", `{"name":"w","resources":{"gpus":200000}}`, "resources.gpus", nil},
		{"worker: fractional slots", "POST", "/v1/workers", `{"name":"w","slots":2.7}`, "slots", nil},
		{"worker: slots past the maximum", "POST", "/v1/workers", `{"name":"w","slots":9223372036854775807}`, "slots", nil},
		{"worker: a cost past the maximum", "POST", "/v1/workers", `{"name":"w","costPerHour":1e308}`, "costPerHour", nil},
		{"worker: too many cache hints", "POST", "/v1/workers", `{"name":"w","cache":[` + strings.Repeat(`{"kind":"model","name":"m"},`, 1001) + `{"kind":"model","name":"m"}]}`, "cache", nil},
		{"worker: too many cached names", "POST", "/v1/workers", `{"name":"w","cached":[` + strings.Repeat(`"m",`, 1001) + `"m"]}`, "cached", nil},
		{"worker: a label value past its bound", "POST", "/v1/workers", `{"name":"w","labels":{"zone":"` + strings.Repeat("z", 257) + `"}}`, "labels", nil},
		{"worker: the name ..", "POST", "/v1/workers", `{"name":".."}`, "name", nil},
		{"worker: a type error in the second cache hint", "POST", "/v1/workers", `{"name":"w","cache":[{"kind":"model","name":"m"},{"kind":3,"name":"n"}]}`, "cache[1].kind", nil},
		{"endpoint: a capacity that overflows", "PUT", "/v1/endpoints/e", `{"type":"serverless","maxConcurrency":1e30}`, "maxConcurrency", nil},
		{"endpoint: a capacity past the maximum", "PUT", "/v1/endpoints/e", `{"type":"serverless","maxConcurrency":9223372036854775807}`, "maxConcurrency", nil},
		{"endpoint: instances past the maximum", "PUT", "/v1/endpoints/e", `{"type":"instance-backed","instances":9223372036854775807,"instanceConcurrency":9223372036854775807}`, "instances", nil},
		{"endpoint: a weight past the maximum", "PUT", "/v1/endpoints/e", `{"type":"serverless","variants":[{"name":"a","maxConcurrency":1},{"name":"b","maxConcurrency":1,"weight":1e308}]}`, "variants[1].weight", nil},
		{"throttling: a percentage that overflows", "PUT", "/v1/throttling", `{"capacityTargetPercentage":1e400}`, "capacityTargetPercentage", nil},
		{"throttling: a concurrency past the maximum", "PUT", "/v1/throttling", `{"defaultInstanceConcurrency":9223372036854775807}`, "defaultInstanceConcurrency", nil},
		{"throttling: a starvation wait that overflows", "PUT", "/v1/throttling", `{"starvationWait":"1e300"}`, "starvationWait", nil},
		{"priority: past the range", "POST", "/v1/jobs/a/priority", `{"priority":-5000000}`, "priority", []string{"-1000000", "1000000"}},
		{"priority: a number that overflows", "POST", "/v1/jobs/a/priority", `{"priority":-1e308}`, "priority", nil},
		{"token: an expiry past the maximum", "POST", "/v1/tokens", `{"role":"admin","expiresIn":"2562047h"}`, "expiresIn", []string{"at most"}},
		{"token: an expiry that overflows", "POST", "/v1/tokens", `{"role":"admin","expiresIn":"1e300"}`, "expiresIn", nil},
		{"lease: a wait that overflows", "POST", "/v1/workers/w1/lease", `{"wait":"1e300"}`, "wait", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct := "application/yaml"
			if strings.HasPrefix(tc.body, "{") {
				ct = "application/json"
			}
			status, eb, raw := call(t, srv, tc.method, tc.path, ct, tc.body)
			if status != 400 || eb.Error.Field != tc.field {
				t.Fatalf("%s %s: %d %s; want 400 naming %s", tc.method, tc.path, status, raw, tc.field)
			}
			for _, w := range tc.words {
				if !strings.Contains(eb.Error.Message, w) {
					t.Errorf("message %q does not say %q", eb.Error.Message, w)
				}
			}
		})
	}
	_, _, raw := call(t, srv, "GET", "/v1/workers", "", "")
	if strings.TrimSpace(string(raw)) != "[]" {
		t.Errorf("workers stored after refused registrations: %s", raw)
	}
	_, _, raw = call(t, srv, "GET", "/v1/endpoints", "", "")
	if strings.Contains(string(raw), `"name": "e"`) {
		t.Errorf("endpoint stored after refused changes: %s", raw)
	}
}

// TestEveryRouteBoundsItsBody: routes that take small documents refuse a
// body far larger than any of them with 413, however large the server's
// body limit; the others keep the configured limit.
func TestEveryRouteBoundsItsBody(t *testing.T) {
	srv := newServer(t, 64<<20)
	big := `{"name":"` + strings.Repeat("x", 2<<20) + `"}`
	for _, route := range []struct{ method, path string }{
		{"POST", "/v1/jobs/a/priority"},
		{"POST", "/v1/workers/w/state"},
		{"POST", "/v1/workers/w/elastic"},
		{"POST", "/v1/workers/w/lease"},
		{"POST", "/v1/workers/w/heartbeat"},
		{"POST", "/v1/workers"},
		{"POST", "/v1/tokens"},
		{"PUT", "/v1/queues/batch/policy"},
		{"PUT", "/v1/endpoints/e"},
		{"PUT", "/v1/throttling"},
	} {
		status, eb, raw := call(t, srv, route.method, route.path, "application/json", big)
		if status != 413 || eb.Error.Field != "body" {
			t.Errorf("%s %s with a 2 MiB body: %d %.200s; want 413", route.method, route.path, status, raw)
		}
	}
	job := "queue: batch\ntasks: [{name: x, run: 'true'}]\n# " + strings.Repeat("x", 2<<20) + "\n"
	if status, _, raw := call(t, srv, "POST", "/v1/jobs", "application/yaml", job); status != 201 {
		t.Errorf("a 2 MiB job document under a 64 MiB limit: %d %.200s", status, raw)
	}
}
