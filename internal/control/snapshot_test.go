package control

import (
	"context"
	"log/slog"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

func TestGroupPointsFoldPerJobGroupsOnly(t *testing.T) {
	groups := []engine.GroupSummary{
		{Queue: "prio", Group: "job-b", Running: 2, Waiting: 1, Target: 3},
		{Queue: "fair", Group: "red", Running: 1, Waiting: 4, Target: 2},
		{Queue: "prio", Group: "job-a", Running: 1, Waiting: 5, Target: -1},
		{Queue: "fair", Group: "blue", Running: 0, Waiting: 2, Target: -1},
	}
	cases := []struct {
		name string
		jobQ map[string]bool
		want []GroupPoint
	}{
		{"no per-job queue: every group, sorted", nil, []GroupPoint{
			{Queue: "fair", Group: "blue", Waiting: 2, Target: -1},
			{Queue: "fair", Group: "red", Running: 1, Waiting: 4, Target: 2},
			{Queue: "prio", Group: "job-a", Running: 1, Waiting: 5, Target: -1},
			{Queue: "prio", Group: "job-b", Running: 2, Waiting: 1, Target: 3},
		}},
		{"per-job queue folded, targets summed over those that set one", map[string]bool{"prio": true}, []GroupPoint{
			{Queue: "fair", Group: "blue", Waiting: 2, Target: -1},
			{Queue: "fair", Group: "red", Running: 1, Waiting: 4, Target: 2},
			{Queue: "prio", Group: JobsGroup, Running: 3, Waiting: 6, Target: 3},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &Snapshot{Groups: groups, JobQueues: tc.jobQ}
			if got := s.GroupPoints(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("GroupPoints:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// A queue under the priority policy has one group per job; the snapshot
// says so, and its history keeps one point for the queue however many jobs
// run, so that memory does not grow with the jobs.
func TestSnapshotHistoryKeepsOnePointForAQueueThatGroupsByJob(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "allot.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sched := spec.Scheduling{Queues: []spec.Queue{
		{Name: "prio", Policy: policy.Config{Kind: "priority"}},
		{Name: "fifo"},
	}}
	c, err := New(context.Background(), Config{Scheduling: sched, CycleEvery: time.Hour, Logger: slog.New(slog.DiscardHandler)}, st)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for _, js := range []spec.Job{
		{ID: "a", Queue: "prio", Tasks: []spec.Task{{Name: "t", Run: "true"}}},
		{ID: "b", Queue: "prio", Tasks: []spec.Task{{Name: "t", Run: "true"}}},
		{ID: "c", Queue: "fifo", Tasks: []spec.Task{{Name: "t", Run: "true"}}},
	} {
		if _, err := c.Submit(ctx, js); err != nil {
			t.Fatalf("submit %s: %v", js.ID, err)
		}
	}
	s := c.Snapshot()
	if want := map[string]bool{"prio": true}; !reflect.DeepEqual(s.JobQueues, want) {
		t.Errorf("JobQueues = %v, want %v", s.JobQueues, want)
	}
	if len(s.Groups) != 3 {
		t.Errorf("Groups has %d entries, want 3 (one per prio job, one fifo group): %+v", len(s.Groups), s.Groups)
	}
	if len(s.History) == 0 {
		t.Fatal("no history point")
	}
	for _, h := range s.History {
		for _, g := range h.Groups {
			if g.Queue == "prio" && g.Group != JobsGroup {
				t.Errorf("history at %s keeps the per-job group %s/%s", h.At, g.Queue, g.Group)
			}
		}
	}
	var got []string
	for _, g := range s.GroupPoints() {
		got = append(got, g.Queue+"/"+g.Group)
	}
	if want := []string{"fifo/" + policy.FIFOGroup, "prio/" + JobsGroup}; !reflect.DeepEqual(got, want) {
		t.Errorf("GroupPoints = %v, want %v", got, want)
	}
}
