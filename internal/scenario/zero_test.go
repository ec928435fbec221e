package scenario

import (
	"strings"
	"testing"
)

// A field that is written counts as written: `count: 0` is no copies, not
// one, and a zero that means nothing is refused by name instead of being
// read as "unset" and replaced by a default.
func TestZeroIsAValueNotUnset(t *testing.T) {
	t.Run("count 0 of workers and jobs is none", func(t *testing.T) {
		s, err := Parse([]byte(`
workers:
  - {name: big, count: 3}
  - {name: off, count: 0}
  - {name: one}
jobs:
  - {id: a, count: 0, tasks: [{name: t}]}
  - {id: b, count: 2, tasks: [{name: t}]}
  - {id: c, tasks: [{name: t}]}
`))
		if err != nil {
			t.Fatal(err)
		}
		var workers, jobs []string
		for _, w := range s.Workers {
			workers = append(workers, w.Name)
		}
		for _, j := range s.Jobs {
			jobs = append(jobs, j.ID)
		}
		if got := strings.Join(workers, " "); got != "big-0 big-1 big-2 one" {
			t.Errorf("workers = %s, want big-0 big-1 big-2 one (count 0 is none, no count is one)", got)
		}
		if got := strings.Join(jobs, " "); got != "b-0 b-1 c" {
			t.Errorf("jobs = %s, want b-0 b-1 c (count 0 is none, no count is one)", got)
		}
	})
	refused := []struct {
		name, doc, want string
	}{
		{"a task entry of count 0", `
jobs:
  - id: a
    tasks:
      - {name: t, count: 0}
`, `line 5: jobs[0].tasks[0].count: must be at least 1 (got 0): leave count out for one task, or remove the entry`},
		{"load 0", `
endpoints: [{name: det, type: instance-backed, instances: 1}]
jobs:
  - {id: a, endpoint: det, load: 0, tasks: [{name: t}]}
`, `line 4: jobs[0].load: must be at least 1 (got 0): leave load out to estimate it from regions or the image`},
		{"regions 0", `
jobs: [{id: a, regions: 0, tasks: [{name: t}]}]
`, `jobs[0].regions: must be at least 1 (got 0)`},
		{"regionSize and tileSize 0", `
jobs: [{id: a, image: {width: 10, height: 10}, regionSize: 0, tileSize: 0, tasks: [{name: t}]}]
`, `jobs[0].regionSize: must be at least 1 (got 0)`},
		{"tileSize 0", `
jobs: [{id: a, image: {width: 10, height: 10}, tileSize: 0, tasks: [{name: t}]}]
`, `jobs[0].tileSize: must be at least 1 (got 0)`},
		{"maxSlots 0", `
jobs: [{id: a, maxSlots: 0, tasks: [{name: t}]}]
`, `jobs[0].maxSlots: must be at least 1 (got 0): leave maxSlots out for no limit`},
		{"maxAttempts 0", `
jobs: [{id: a, tasks: [{name: t, maxAttempts: 0}]}]
`, `jobs[0].tasks[0].maxAttempts: must be at least 1 (got 0): leave it out for one attempt`},
		{"worker slots 0", `
workers: [{name: w, slots: 0}]
`, `workers[0].slots: must be at least 1 (got 0): leave slots out for one; to keep a worker from taking tasks, set state: disabled`},
		{"throttling defaults 0", `
throttling: {defaultInstanceConcurrency: 0}
`, `throttling.defaultInstanceConcurrency: must be at least 1 (got 0): leave it out for the default, 2`},
		{"http concurrency 0", `
throttling: {defaultHttpEndpointConcurrency: 0}
`, `throttling.defaultHttpEndpointConcurrency: must be at least 1 (got 0): leave it out for the default, 10`},
		{"tile workers 0", `
throttling: {tileWorkersPerInstance: 0}
`, `throttling.tileWorkersPerInstance: must be at least 1 (got 0): leave it out for the default, 4`},
		{"an endpoint's instance concurrency 0", `
endpoints: [{name: det, type: instance-backed, instances: 1, instanceConcurrency: 0}]
`, `endpoints[0].instanceConcurrency: must be at least 1 (got 0)`},
		{"a variant's instance concurrency 0", `
endpoints: [{name: det, type: instance-backed, variants: [{name: v, instances: 1, instanceConcurrency: 0}]}]
`, `endpoints[0].variants[0].instanceConcurrency: must be at least 1 (got 0)`},
		{"priority levels 0", `
queues: [{name: q, policy: {kind: priority, priority: {levels: 0}}}]
`, `queues[0].policy.priority.levels: must be between 2 and 1000 (got 0): leave levels out for the default, 10`},
		{"priority usage window 0", `
queues: [{name: q, policy: {kind: priority, priority: {usageWindow: 0s}}}]
`, `queues[0].policy.priority.usageWindow: must be above 0 (got 0s)`},
		{"priority preemption threshold 0", `
queues: [{name: q, policy: {kind: priority, priority: {preemptThreshold: 0s}}}]
`, `queues[0].policy.priority.preemptThreshold: must be above 0 (got 0s)`},
		{"sla usage window 0", `
queues: [{name: q, policy: {kind: sla, sla: {groups: [{name: g, value: 1}], usageWindow: 0s}}}]
`, `queues[0].policy.sla.usageWindow: must be above 0 (got 0s)`},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
	t.Run("JSON too", func(t *testing.T) {
		_, err := Parse([]byte(`{"jobs": [{"id": "a", "tasks": [{"name": "t", "count": 0}]}]}`))
		if err == nil || !strings.Contains(err.Error(), `jobs[0].tasks[0].count: must be at least 1 (got 0)`) {
			t.Fatalf("err = %v", err)
		}
	})
}

// A scenario's jobs meet their queue's policy as a server's submissions do:
// a job the policy cannot take is refused naming its field.
func TestScenarioJobsAreCheckedByTheirQueuesPolicy(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"a share with a star", `
queues: [{name: q, policy: {kind: fairshare, fairshare: {shares: [{share: "UserA*", weightFactor: 0.5}]}}}]
jobs: [{id: a, share: "UserA*", tasks: [{name: t}]}]
`, `line 3: jobs[0].share: "UserA*": a share identifier cannot contain '*'`},
		{"a priority outside the levels", `
queues: [{name: q, policy: {kind: priority}}]
jobs: [{id: a, priority: 12, tasks: [{name: t}]}]
`, `line 3: jobs[0].priority: 12 is outside levels 0-9`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant %q", err, tc.want)
			}
		})
	}
}
