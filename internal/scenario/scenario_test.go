package scenario

import (
	"strings"
	"testing"
	"time"
)

func TestParseRejectsBadInputNamingFieldAndLine(t *testing.T) {
	cases := []struct {
		name string
		doc  string
		want []string // substrings of the error, each must appear
	}{
		{"unknown field", `
jobs:
  - id: a
    tasks:
      - name: x
        bogus: 1
`, []string{`line 6: jobs[0].tasks[0].bogus: unknown field "bogus"`}},
		{"wrong type", `
jobs:
  - id: a
    priority: high
    tasks: [{name: x}]
`, []string{`line 4: jobs[0].priority: wrong type: got string "high", want an integer`}},
		{"negative worker count", `
workers:
  - name: w
    count: -2
`, []string{`line 4: workers[0].count: must be between 0`}},
		{"negative task count", `
jobs:
  - id: a
    tasks:
      - name: x
        count: -1
`, []string{`line 6: jobs[0].tasks[0].count: must not be negative`}},
		{"a job count near the largest integer", `
jobs:
  - id: a
    count: 9223372036854775807
    tasks: [{name: x}]
`, []string{`line 4: jobs[0].count: must be at most 100000`}},
		{"a task count that would wrap the job's total", `
jobs:
  - id: a
    tasks: [{name: x}, {name: y, count: 9223372036854775807}]
`, []string{`jobs[0].tasks[1].count: the job would have more than 100000 tasks`}},
		{"a worker with quantities past what the server holds", `
workers: [{name: w, resources: {cpu: 1e30, memory: 1e30, gpus: 1e30}, slots: 2.7}]
`, []string{`workers[0].resources.cpu`, `workers[0].resources.memory`, `workers[0].resources.gpus`, `workers[0].slots: must be a whole number`}},
		{"needs cycle", `
jobs:
  - id: a
    tasks:
      - {name: x, needs: [z]}
      - {name: y, needs: [x]}
      - {name: z, needs: [y]}
`, []string{`line 4: jobs[0].tasks: dependency cycle x → z → y → x`}},
		{"dangling need", `
jobs:
  - id: a
    tasks:
      - {name: x, needs: [nope]}
`, []string{`jobs[0].tasks[0].needs[0]: no task "nope" in this job`}},
		{"unknown queue", `
queues: [{name: batch}, {name: gpu}]
jobs:
  - {id: a, queue: cpu, tasks: [{name: x}]}
`, []string{`line 4: jobs[0].queue: no queue "cpu" is defined`}},
		{"queue required with several queues", `
queues: [{name: batch}, {name: gpu}]
jobs:
  - {id: a, tasks: [{name: x}]}
`, []string{`jobs[0].queue: required`}},
		{"unknown policy", `
queues:
  - name: q
    policy: {kind: lottery}
`, []string{`line 4: queues[0].policy.kind: unknown policy "lottery"`}},
		{"bad quantity", `
workers:
  - name: w
    resources: {memory: lots}
`, []string{`line 4: workers[0].resources.memory: "lots" is not a memory size`}},
		{"running above count", `
jobs:
  - id: a
    tasks:
      - {name: x, count: 2, running: 3}
`, []string{`jobs[0].tasks[0].running: must be between 0 and the task count 2`}},
		{"duplicate job", `
jobs:
  - {id: a, tasks: [{name: x}]}
  - {id: a, tasks: [{name: x}]}
`, []string{`line 4: jobs[1].id: job "a" is already defined at jobs[0]`}},
		{"duplicate worker", `
workers:
  - {name: w, count: 3}
  - {name: w-1}
`, []string{`workers[1].name: worker "w-1" is already defined at workers[0]`}},
		{"gpu memory without gpus", `
jobs:
  - id: a
    tasks: [{name: x, resources: {gpuMemory: 8Gi}}]
`, []string{`jobs[0].tasks[0].resources.gpuMemory: is per GPU`}},
		{"bad strategy", `
placement: {strategy: random}
`, []string{`placement.strategy: unknown selection strategy "random"`}},
		{"several problems at once", `
workers:
  - {name: w, slots: -1}
jobs:
  - {id: a, tasks: [{name: x, count: -1}], maxSlots: -2}
`, []string{`workers[0].slots: must not be negative`, `jobs[0].maxSlots: must not be negative`, `jobs[0].tasks[0].count: must not be negative`}},
		{"syntax error", "jobs: [\n", []string{"syntax error"}},
		{"empty", "", []string{"document is empty"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.doc))
			if err == nil {
				t.Fatalf("Parse succeeded (%d jobs); want an error", len(s.Jobs))
			}
			if s != nil {
				t.Errorf("Parse returned a scenario alongside the error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func TestParseExpandsCountsAndNeeds(t *testing.T) {
	s, err := Parse([]byte(`
start: 2026-03-01T10:00:00Z
workers:
  - {name: cpu, count: 12, resources: {cpu: 4, memory: 8Gi}}
jobs:
  - id: fan
    tasks:
      - {name: shard, count: 10, running: 4, runningFor: 5m, duration: 1m}
      - {name: merge, needs: [shard]}
  - id: late
    submitAt: 90s
    count: 3
    tasks: [{name: t}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.Workers); got != 12 || s.Workers[0].Name != "cpu-00" || s.Workers[11].Name != "cpu-11" {
		t.Errorf("workers = %d (%s..%s), want 12 named cpu-00..cpu-11", got, s.Workers[0].Name, s.Workers[len(s.Workers)-1].Name)
	}
	if s.Workers[0].Capacity.MemoryMB != 8192 || s.Workers[0].Capacity.MilliCPU != 4000 || s.Workers[0].Slots != 1 {
		t.Errorf("worker capacity = %+v slots %d", s.Workers[0].Capacity, s.Workers[0].Slots)
	}
	fan := s.Jobs[0]
	if len(fan.Tasks) != 11 || fan.Tasks[0].Name != "shard-0" || fan.Tasks[9].Name != "shard-9" {
		t.Fatalf("fan tasks = %v", fan.Tasks)
	}
	if merge := fan.Tasks[10]; len(merge.Needs) != 10 || merge.Needs[0] != "shard-0" {
		t.Errorf("merge needs = %v, want all ten shards", merge.Needs)
	}
	if len(s.Running) != 4 || s.Running[3].Task != "shard-3" {
		t.Errorf("running = %+v, want shard-0..shard-3", s.Running)
	}
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	if !s.Running[0].Started.Equal(start.Add(-5 * time.Minute)) {
		t.Errorf("running started %v, want 5m before start", s.Running[0].Started)
	}
	var ids []string
	for _, j := range s.Jobs {
		ids = append(ids, j.ID)
	}
	if strings.Join(ids, ",") != "fan,late-0,late-1,late-2" {
		t.Errorf("job ids = %v", ids)
	}
	if !s.Jobs[1].Submitted.Equal(start.Add(90 * time.Second)) {
		t.Errorf("late submitted %v", s.Jobs[1].Submitted)
	}
	e, err := s.Engine()
	if err != nil {
		t.Fatal(err)
	}
	d := e.Cycle(s.Start)
	// 12 workers, 4 busy with running shards: 6 more shards and 2 late jobs start.
	if len(d.Starts) != 8 {
		t.Errorf("starts = %d, want 8", len(d.Starts))
	}
}

func TestParseReadsJSON(t *testing.T) {
	s, err := Parse([]byte(`{"workers":[{"name":"w","count":2}],"jobs":[{"id":"a","tasks":[{"name":"x","count":3}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Workers) != 2 || len(s.Jobs[0].Tasks) != 3 {
		t.Fatalf("got %d workers, %d tasks", len(s.Workers), len(s.Jobs[0].Tasks))
	}
}
