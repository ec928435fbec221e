package rest

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
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

// aliasBomb is a 95 KB YAML job whose tasks all reuse one anchored mapping
// of a 65,000-byte value: 130 MB once expanded.
func aliasBomb(tasks int) string {
	var b strings.Builder
	b.WriteString("queue: batch\ntasks:\n  - {name: t0, run: x, env: &e {A: \"" + strings.Repeat("y", 65000) + "\"}}\n")
	for i := 1; i < tasks; i++ {
		fmt.Fprintf(&b, "  - {name: t%d, run: x, env: *e}\n", i)
	}
	return b.String()
}

// allocated returns the bytes allocated, by the server too, while fn runs.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestAJobSubmissionIsOneDocumentNamedExactly: POST /v1/jobs takes one job
// document, whole. Text after it (a second document, garbage), aliases
// that expand it past the stored job's limit, a key given twice and a
// name that count also makes are each a 400 naming the field, and nothing
// is stored.
func TestAJobSubmissionIsOneDocumentNamedExactly(t *testing.T) {
	srv := newServer(t, 1<<20)
	for _, tc := range []struct {
		name, body, field string
		line              int
		words             []string
	}{
		{"a second YAML document", "id: y-1\nqueue: batch\ntasks: [{name: x, run: 'true'}]\n---\nid: y-2\nqueue: batch\ntasks: [{name: x, run: 'true'}]\n", "body", 5, []string{"one job per request", "/v1/jobs/bulk"}},
		{"text after JSON", `{"id":"g-1","queue":"batch","tasks":[{"name":"x","run":"true"}]} GARBAGE`, "body", 1, []string{"one job per request", "GARBAGE"}},
		{"brackets after JSON", `{"id":"b-1","queue":"batch","tasks":[{"name":"x","run":"true"}]}]]]`, "body", 1, []string{"one job per request"}},
		{"a second JSON object", `{"id":"o-1","queue":"batch","tasks":[{"name":"x","run":"true"}]} {"id":"o-2"}`, "body", 1, []string{"one job per request"}},
		{"aliases past the stored limit", aliasBomb(2000), "body", 19, []string{"alias", "1048576"}},
		{"a queue given twice", `{"queue":"gpu","queue":"batch","share":"teama","tasks":[{"name":"t","run":"x"}]}`, "queue", 1, []string{"twice"}},
		{"an id given twice", `{"id":"d1","id":"d2","queue":"batch","tasks":[{"name":"t","run":"x"}]}`, "id", 1, []string{"twice"}},
		{"a task name given twice", `{"queue":"batch","tasks":[{"name":"t","name":"u","run":"x","priority":1}]}`, "tasks[0].name", 1, []string{"twice"}},
		{"a name count also makes", `{"queue":"batch","tasks":[{"name":"a","run":"x","count":2},{"name":"a-0","run":"y"}]}`, "tasks[1].name", 1, []string{"a-0", "count", "tasks[0]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct := "application/yaml"
			if strings.HasPrefix(tc.body, "{") {
				ct = "application/json"
			}
			var status int
			var eb api.ErrorBody
			var raw []byte
			bytes := allocated(func() { status, eb, raw = call(t, srv, "POST", "/v1/jobs", ct, tc.body) })
			if status != 400 || eb.Error.Field != tc.field || eb.Error.Line != tc.line {
				t.Fatalf("%d %.300s; want 400 naming %s on line %d", status, raw, tc.field, tc.line)
			}
			for _, w := range tc.words {
				if !strings.Contains(eb.Error.Message, w) {
					t.Errorf("message %q does not say %q", eb.Error.Message, w)
				}
			}
			if bytes > 50<<20 {
				t.Errorf("refusing a %d-byte body allocated %d MB", len(tc.body), bytes>>20)
			}
		})
	}
	if _, _, raw := call(t, srv, "GET", "/v1/jobs", "", ""); strings.Contains(string(raw), `"id"`) {
		t.Errorf("jobs stored after refused submissions: %.300s", raw)
	}
}

// In a bulk body each document is bounded and read whole as in a single
// submission: an NDJSON line of two objects and a YAML document whose
// aliases expand past the limit are refused on their own, naming the body
// and their line, and the others are created.
func TestABulkDocumentIsOneDocumentOfBoundedSize(t *testing.T) {
	srv := newServer(t, 1<<20)
	for _, tc := range []struct {
		name, contentType, body string
		refused, line           int
	}{
		{"two objects on an NDJSON line", "application/x-ndjson",
			`{"id":"bk-4","queue":"batch","tasks":[{"name":"x","run":"true"}]}` + "\n" +
				`{"id":"bk-5","queue":"batch","tasks":[{"name":"x","run":"true"}]} {"id":"bk-6","queue":"batch","tasks":[{"name":"x","run":"true"}]}` + "\n",
			1, 2},
		{"aliases past the limit in a YAML stream", "application/yaml",
			"id: bk-7\nqueue: batch\ntasks: [{name: x, run: 'true'}]\n---\n" + aliasBomb(2000), 1, 23},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var status int
			var raw []byte
			bytes := allocated(func() { status, _, raw = call(t, srv, "POST", "/v1/jobs/bulk", tc.contentType, tc.body) })
			var res api.BulkResults
			if err := json.Unmarshal(raw, &res); status != 200 || err != nil || len(res.Results) != 2 {
				t.Fatalf("%d %.300s; want 200 with two results", status, raw)
			}
			for i, r := range res.Results {
				if i != tc.refused {
					if r.Status != api.BulkCreated {
						t.Errorf("document %d: %+v %+v, want created", i, r, r.Error)
					}
					continue
				}
				if r.Status != api.BulkRefused || r.Error == nil || r.Error.Field != "body" || r.Error.Line != tc.line {
					t.Errorf("document %d: %+v %+v, want refused naming body on line %d", i, r, r.Error, tc.line)
				}
			}
			if bytes > 50<<20 {
				t.Errorf("refusing a %d-byte body allocated %d MB", len(tc.body), bytes>>20)
			}
		})
	}
	for _, id := range []string{"bk-5", "bk-6"} {
		if status, _, _ := call(t, srv, "GET", "/v1/jobs/"+id, "", ""); status != 404 {
			t.Errorf("GET %s: %d, want 404 (its line was refused)", id, status)
		}
	}
}
