package rest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/fairshare"
	"github.com/allot-sched/allot/internal/engine/policy/sla"
	"github.com/allot-sched/allot/internal/spec"
)

func policyQueues() spec.Scheduling {
	return spec.Scheduling{Queues: []spec.Queue{
		{Name: "grid", Policy: policy.Config{Kind: "priority"}},
		{Name: "sla", Policy: policy.Config{Kind: "sla", Settings: &sla.Config{Groups: []sla.Group{{Name: "gold", Value: 2}, {Name: "bronze", Value: 1}}}}},
		{Name: "fair", Policy: policy.Config{Kind: "fairshare", Settings: &fairshare.Config{
			Shares: []fairshare.ShareWeight{{Share: "green", WeightFactor: fairshare.Weight(0.5)}, {Share: "blue"}}}}},
	}}
}

func TestSubmissionIsCheckedAgainstTheQueuesPolicy(t *testing.T) {
	srv := newServerWith(t, 0, policyQueues())
	cases := []struct {
		name, body, field string
	}{
		{"priority outside the levels", "queue: grid\npriority: 12\ntasks: [{name: x, run: 'true'}]\n", "priority"},
		{"no SLA group", "queue: sla\ntasks: [{name: x, run: 'true'}]\n", "slaGroup"},
		{"unknown SLA group", "queue: sla\nslaGroup: platinum\ntasks: [{name: x, run: 'true'}]\n", "slaGroup"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, eb, raw := call(t, srv, "POST", "/v1/jobs", "application/yaml", tc.body)
			if status != 400 || eb.Error.Field != tc.field {
				t.Fatalf("%d %s, want 400 naming %s", status, raw, tc.field)
			}
		})
	}
	if status, _, raw := call(t, srv, "POST", "/v1/jobs", "application/yaml", "id: ok\nqueue: sla\nslaGroup: gold\ntasks: [{name: x, run: 'true'}]\n"); status != 201 {
		t.Fatalf("valid SLA job: %d %s", status, raw)
	}
}

func TestPriorityChangesAtRunTime(t *testing.T) {
	srv := newServerWith(t, 0, policyQueues())
	if status, _, raw := call(t, srv, "POST", "/v1/jobs", "application/yaml", "id: j\nqueue: grid\npriority: 3\ntasks: [{name: x, run: 'true'}]\n"); status != 201 {
		t.Fatalf("submit: %d %s", status, raw)
	}
	status, _, raw := call(t, srv, "POST", "/v1/jobs/j/priority", "application/json", `{"priority": 8, "urgent": true}`)
	var j api.Job
	if status != 200 || json.Unmarshal(raw, &j) != nil || j.Priority != 8 || !j.Urgent {
		t.Fatalf("change: %d %s", status, raw)
	}
	if status, eb, raw := call(t, srv, "POST", "/v1/jobs/j/priority", "application/json", `{"priority": 10}`); status != 400 || eb.Error.Field != "priority" {
		t.Fatalf("priority outside the levels: %d %s", status, raw)
	}
	if status, _, _ := call(t, srv, "POST", "/v1/jobs/nope/priority", "application/json", `{"priority": 1}`); status != 404 {
		t.Fatalf("unknown job: %d", status)
	}
	var events []api.Event
	_, _, raw = call(t, srv, "GET", "/v1/events?job=j", "", "")
	_ = json.Unmarshal(raw, &events)
	if !strings.Contains(string(raw), "priority_changed") {
		t.Errorf("no priority_changed event: %s", raw)
	}
}

func TestFairshareQueueReportsShares(t *testing.T) {
	srv := newServerWith(t, 0, policyQueues())
	call(t, srv, "POST", "/v1/jobs", "application/yaml", "queue: fair\nshare: green\ntasks: [{name: x, count: 3, run: 'true'}]\n")
	_, _, raw := call(t, srv, "GET", "/v1/queues", "", "")
	var qs []struct {
		Name   string `json:"name"`
		Status []struct {
			Share            string  `json:"share"`
			WeightFactor     float64 `json:"weightFactor"`
			EntitledFraction float64 `json:"entitledFraction"`
		} `json:"status"`
	}
	if err := json.Unmarshal(raw, &qs); err != nil {
		t.Fatal(err, string(raw))
	}
	for _, q := range qs {
		if q.Name != "fair" {
			continue
		}
		got := map[string]float64{}
		for _, s := range q.Status {
			got[s.Share] = s.WeightFactor
		}
		if got["green"] != 0.5 || got["blue"] != 1 {
			t.Fatalf("fair queue status %s", raw)
		}
		return
	}
	t.Fatalf("no fair queue in %s", raw)
}
