package rest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/spec"
)

func endpointsConfig() spec.Scheduling {
	return spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}},
		Endpoints: []spec.Endpoint{{Name: "det", Type: "instance-backed", Instances: 1, InstanceConcurrency: 2}}}
}

func TestBadEndpointAndThrottlingBodiesAre400NamingTheFieldAndChangeNothing(t *testing.T) {
	srv := newServerWith(t, 0, endpointsConfig())
	_, _, before := call(t, srv, "GET", "/v1/endpoints", "", "")
	cases := []struct {
		name, method, path, body string
		status                   int
		field                    string
	}{
		{"negative instances", "PUT", "/v1/endpoints/det", `{"type":"instance-backed","instances":-1}`, 400, "instances"},
		{"negative concurrency", "PUT", "/v1/endpoints/det", `{"type":"instance-backed","instances":1,"instanceConcurrency":-2}`, 400, "instanceConcurrency"},
		{"all-zero weights", "PUT", "/v1/endpoints/det", `{"type":"http","variants":[{"name":"a","weight":0},{"name":"b","weight":0}]}`, 400, "variants"},
		{"negative weight", "PUT", "/v1/endpoints/det", `{"type":"http","variants":[{"name":"a","weight":-1}]}`, 400, "variants[0].weight"},
		{"unknown type", "PUT", "/v1/endpoints/det", `{"type":"gpu"}`, 400, "type"},
		{"zero instance concurrency", "PUT", "/v1/endpoints/det", `{"type":"instance-backed","instances":1,"instanceConcurrency":0}`, 400, "instanceConcurrency"},
		{"zero http concurrency", "PUT", "/v1/endpoints/det", `{"type":"http","maxConcurrency":0}`, 400, "maxConcurrency"},
		{"zero variant concurrency", "PUT", "/v1/endpoints/det", `{"type":"http","variants":[{"name":"a","maxConcurrency":0}]}`, 400, "variants[0].maxConcurrency"},
		{"unknown field", "PUT", "/v1/endpoints/det", `{"type":"http","replicas":3}`, 400, "replicas"},
		{"wrong type", "PUT", "/v1/endpoints/det", `{"type":"http","maxConcurrency":"ten"}`, 400, "maxConcurrency"},
		{"name differs from the path", "PUT", "/v1/endpoints/det", `{"name":"geo","type":"http"}`, 400, "name"},
		{"bad name", "PUT", "/v1/endpoints/a%20b", `{"type":"http"}`, 400, "name"},
		{"empty body", "PUT", "/v1/endpoints/det", ``, 400, "body"},
		{"delete unknown", "DELETE", "/v1/endpoints/nope", ``, 404, ""},
		{"target percentage above 1.5", "PUT", "/v1/throttling", `{"capacityTargetPercentage":1.6}`, 400, "capacityTargetPercentage"},
		{"negative target percentage", "PUT", "/v1/throttling", `{"capacityTargetPercentage":-0.1}`, 400, "capacityTargetPercentage"},
		{"throttling: unknown field", "PUT", "/v1/throttling", `{"targetPercentage":0.8}`, 400, "targetPercentage"},
		{"throttling: wrong type", "PUT", "/v1/throttling", `{"throttlingEnabled":"yes"}`, 400, "throttlingEnabled"},
		{"throttling: zero instance concurrency", "PUT", "/v1/throttling", `{"defaultInstanceConcurrency":0}`, 400, "defaultInstanceConcurrency"},
		{"throttling: zero http concurrency", "PUT", "/v1/throttling", `{"defaultHttpEndpointConcurrency":0}`, 400, "defaultHttpEndpointConcurrency"},
		{"throttling: zero tile workers", "PUT", "/v1/throttling", `{"tileWorkersPerInstance":0}`, 400, "tileWorkersPerInstance"},
		{"redrive unknown", "POST", "/v1/deadletters/nope/redrive", ``, 404, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, eb, raw := call(t, srv, tc.method, tc.path, "application/json", tc.body)
			if status != tc.status || eb.Error.Message == "" {
				t.Fatalf("%s %s: %d %s, want %d", tc.method, tc.path, status, raw, tc.status)
			}
			if tc.field != "" && eb.Error.Field != tc.field {
				t.Errorf("field %q, want %q (%s)", eb.Error.Field, tc.field, raw)
			}
		})
	}
	_, _, after := call(t, srv, "GET", "/v1/endpoints", "", "")
	var b, a api.EndpointList
	if json.Unmarshal(before, &b) != nil || json.Unmarshal(after, &a) != nil {
		t.Fatalf("GET /v1/endpoints: %s", after)
	}
	bc, _ := json.Marshal(b.Endpoints[0].Config)
	ac, _ := json.Marshal(a.Endpoints[0].Config)
	if len(a.Endpoints) != 1 || string(ac) != string(bc) || *a.Throttling.CapacityTargetPercentage != 1 {
		t.Errorf("refused changes changed something: before %s, after %s", before, after)
	}
}

func TestEndpointsThrottlingAndDeadLettersOverHTTP(t *testing.T) {
	srv := newServerWith(t, 0, endpointsConfig())
	var e api.Endpoint
	status, _, raw := call(t, srv, "PUT", "/v1/endpoints/det", "application/json", `{"type":"instance-backed","instances":3,"instanceConcurrency":2}`)
	if status != 200 || json.Unmarshal(raw, &e) != nil || e.Config == nil || e.Config.Instances != 3 {
		t.Fatalf("PUT det: %d %s", status, raw)
	}
	if e.Stats == nil || e.Stats.MaxCapacity != 6 || e.Stats.TargetCapacity != 6 {
		t.Errorf("det after 3 instances: %s, want max and target 6", raw)
	}
	if status, _, raw = call(t, srv, "PUT", "/v1/throttling", "application/json", `{"capacityTargetPercentage":0.5}`); status != 200 {
		t.Fatalf("PUT throttling: %d %s", status, raw)
	}
	var th spec.Throttling
	if _, _, raw = call(t, srv, "GET", "/v1/throttling", "", ""); json.Unmarshal(raw, &th) != nil ||
		*th.CapacityTargetPercentage != 0.5 || !*th.ThrottlingEnabled || th.TileWorkersPerInstance != 4 {
		t.Errorf("GET throttling: %s, want 0.5 and the defaults", raw)
	}
	var l api.EndpointList
	if _, _, raw = call(t, srv, "GET", "/v1/endpoints", "", ""); json.Unmarshal(raw, &l) != nil || len(l.Endpoints) != 1 ||
		l.Endpoints[0].Stats == nil || l.Endpoints[0].Stats.TargetCapacity != 3 {
		t.Errorf("GET endpoints: %s, want det with target 6 × 0.5 = 3", raw)
	}

	missing := filepath.Join(t.TempDir(), "scene.ntf")
	job := `{"id":"img","endpoint":"det","load":2,"inputs":["` + missing + `"],"tasks":[{"name":"t","run":"true"}]}`
	var j api.Job
	if status, _, raw = call(t, srv, "POST", "/v1/jobs", "application/json", job); status != 201 || json.Unmarshal(raw, &j) != nil ||
		j.State != "dead_lettered" || j.Admission == nil || j.Admission.Reason == nil {
		t.Fatalf("submitting a job with a missing input: %d %s", status, raw)
	}
	var dl api.DeadLetterList
	if _, _, raw = call(t, srv, "GET", "/v1/deadletters", "", ""); json.Unmarshal(raw, &dl) != nil || len(dl.DeadLetters) != 1 || dl.DeadLetters[0].Job != "img" {
		t.Fatalf("GET deadletters: %s", raw)
	}
	// A corrupt file is still refused.
	if err := os.WriteFile(missing, []byte("<html>not found</html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	var r api.Redriven
	if _, _, raw = call(t, srv, "POST", "/v1/deadletters/img/redrive", "", ""); json.Unmarshal(raw, &r) != nil || r.Redriven ||
		r.Job.Admission == nil || r.Job.Admission.Reason == nil {
		t.Fatalf("redrive of a corrupt file: %s, want still dead-lettered", raw)
	}
	if err := os.WriteFile(missing, []byte("NITF02.10 header"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, raw = call(t, srv, "POST", "/v1/deadletters/img/redrive", "", ""); json.Unmarshal(raw, &r) != nil || !r.Redriven || r.Job.State != "pending" {
		t.Fatalf("redrive after the fix: %s", raw)
	}
	if status, _, raw = call(t, srv, "DELETE", "/v1/endpoints/det", "", ""); status != 204 {
		t.Errorf("DELETE det: %d %s", status, raw)
	}
	if status, _, raw = call(t, srv, "GET", "/v1/jobs/img", "", ""); status != 200 || json.Unmarshal(raw, &j) != nil || j.Admission == nil || j.Admission.Endpoint != "det" {
		t.Errorf("a job of a removed endpoint: %d %s", status, raw)
	}
}
