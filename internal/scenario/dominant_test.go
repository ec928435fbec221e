package scenario

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

// examples/fairshare-dominant.yaml: under usage: dominant a GPU-heavy and a
// CPU-heavy team end at the same dominant share, up to one task; under
// usage: slots (the seeds' rule) the same file takes turns task for task.
func TestDominantUsageEqualisesAGPUAndACPUTeam(t *testing.T) {
	cases := []struct {
		usage      policy.Usage
		train, etl int
	}{
		{policy.UsageDominant, 7, 57},
		{policy.UsageSlots, 8, 56},
	}
	for _, tc := range cases {
		t.Run(string(tc.usage), func(t *testing.T) {
			s, err := Load(filepath.Join("..", "..", "examples", "fairshare-dominant.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			s.Config.Queues[0].Policy.Usage = string(tc.usage)
			e, err := s.Engine()
			if err != nil {
				t.Fatal(err)
			}
			d := e.Cycle(s.Start)
			got := map[string]int{}
			for _, g := range d.Groups {
				got[g.Group] = g.Starts
			}
			if got["train"] != tc.train || got["etl"] != tc.etl {
				t.Fatalf("starts %v, want train %d, etl %d", got, tc.train, tc.etl)
			}
			// The pool: 32 GPUs, 256 CPUs. A training task holds 4 GPUs
			// (1/8), an ETL task 4 CPUs (1/64).
			train, etl := float64(got["train"])*4/32, float64(got["etl"])*4/256
			if tc.usage == policy.UsageDominant && (train-etl > 1.0/8 || etl-train > 1.0/64) {
				t.Errorf("dominant shares train %.4f, etl %.4f: further apart than one task", train, etl)
			}
		})
	}
}

// A policy that does not measure usage by dominant share (fifo) refuses
// usage: dominant at the field, and an unknown usage is refused for every
// policy.
func TestUsageDominantIsRefusedWhereThePolicyCannotMeasureIt(t *testing.T) {
	cases := []struct{ name, policy, want string }{
		{"fifo", `{kind: fifo, usage: dominant}`, "queues[0].policy.usage"},
		{"unknown usage", `{kind: fairshare, usage: cores}`, "queues[0].policy.usage"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := "queues:\n  - name: q\n    policy: " + tc.policy + "\nworkers: [{name: w}]\njobs: [{id: j, tasks: [{name: t}]}]\n"
			_, err := Parse([]byte(doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error at %s", err, tc.want)
			}
		})
	}
	for _, pol := range []string{`{kind: fairshare, usage: slots}`, `{kind: fairshare, usage: dominant}`, `{kind: priority, usage: dominant}`,
		`{kind: classload, usage: dominant, classload: {classes: [{name: a, percent: 100}]}}`,
		`{kind: sla, usage: dominant, sla: {groups: [{name: a, value: 1}]}}`} {
		doc := "queues:\n  - name: q\n    policy: " + pol + "\nworkers: [{name: w}]\njobs: [{id: j, slaGroup: a, tasks: [{name: t}]}]\n"
		if _, err := Parse([]byte(doc)); err != nil {
			t.Errorf("%s: %v", pol, err)
		}
	}
}

// examples/fairshare-dominant.yaml over time, with the training team
// starting from a window of past usage (it held every GPU for the last ten
// minutes): ETL first gets more than its half of the CPUs, and as the past
// decays both teams converge to equal dominant shares, within one training
// task (1/8) of each other.
func TestDominantSharesConvergeOverTime(t *testing.T) {
	s, err := Load(filepath.Join("..", "..", "examples", "fairshare-dominant.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// 128 slot-equivalents (all the GPUs) for 600 s, decayed.
	s.History = map[string]policy.History{"batch": {Usage: map[string]float64{"train": 128 * 600}}}
	e, err := s.Engine()
	if err != nil {
		t.Fatal(err)
	}
	dur := map[string]time.Duration{}
	for _, j := range s.Jobs {
		dur[j.ID] = j.Tasks[0].Duration
	}
	type run struct {
		job, task string
		end       time.Time
	}
	var running []run
	count := map[string]int{}
	share := func() (train, etl float64) { return float64(count["train"]) * 4 / 32, float64(count["etl"]) * 4 / 256 }
	now := s.Start
	var first [2]float64
	var late []float64 // |train − etl| after each cycle of the last half hour
	for now.Before(s.Start.Add(time.Hour)) {
		for _, st := range e.Cycle(now).Starts {
			running = append(running, run{st.Job, st.Task, now.Add(dur[st.Job])})
			count[st.Job]++
		}
		train, etl := share()
		if now.Equal(s.Start) {
			first = [2]float64{train, etl}
		}
		if now.Sub(s.Start) >= 30*time.Minute {
			late = append(late, math.Abs(train-etl))
		}
		next := s.Start.Add(2 * time.Hour)
		for _, r := range running {
			if r.end.Before(next) {
				next = r.end
			}
		}
		now = next
		kept := running[:0]
		for _, r := range running {
			if r.end.After(now) {
				kept = append(kept, r)
				continue
			}
			if err := e.Apply(engine.FinishTask{Job: r.job, Task: r.task, Outcome: model.Succeeded, At: now}); err != nil {
				t.Fatal(err)
			}
			count[r.job]--
		}
		running = kept
	}
	if first[0] >= first[1] {
		t.Errorf("first cycle: train %.3f, etl %.3f; want train held back by its past usage", first[0], first[1])
	}
	if len(late) == 0 {
		t.Fatal("no cycle in the last half hour")
	}
	// Tasks are indivisible: a training task is 1/8 of the GPUs, an ETL
	// task 1/64 of the CPUs, and past usage still weighs a little, so a
	// cycle may leave them a training task and two ETL tasks apart; on
	// average they are much closer.
	const grain = 1.0/8 + 2.0/64
	mean := 0.0
	for i, d := range late {
		mean += d / float64(len(late))
		if d > grain+1e-9 {
			t.Errorf("cycle %d of the last half hour: dominant shares %.3f apart, want within %.3f", i, d, grain)
		}
	}
	if mean > 1.0/16 {
		t.Errorf("dominant shares %.3f apart on average over the last half hour, want within 1/16", mean)
	}
	t.Logf("first cycle: train %.3f, etl %.3f; last half hour: %d cycles, mean gap %.4f", first[0], first[1], len(late), mean)
}
