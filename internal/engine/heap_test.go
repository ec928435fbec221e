package engine

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/place"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
	"pgregory.net/rapid"
)

// The hand-written heaps must order like a sort by the same rule, keep
// every element's position, and keep the head's shape, through any mix of
// pushes, removals at any position, pops and fixes.

func TestTaskHeapOrdersLikeASort(t *testing.T) {
	for _, order := range []policy.TaskOrder{policy.ByDeclaration, policy.ByLongestFirst} {
		t.Run(map[policy.TaskOrder]string{policy.ByDeclaration: "declaration", policy.ByLongestFirst: "longest"}[order], func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				h := taskHeap{order: order}
				var in []*task
				want := func() []*task {
					out := slices.Clone(in)
					slices.SortFunc(out, func(a, b *task) int {
						if order == policy.ByLongestFirst && a.spec.Duration != b.spec.Duration {
							return cmp.Compare(b.spec.Duration, a.spec.Duration)
						}
						return cmp.Compare(a.idx, b.idx)
					})
					return out
				}
				next := 0
				for step := rapid.IntRange(0, 100).Draw(t, "steps"); step > 0; step-- {
					switch rapid.IntRange(0, 3).Draw(t, "op") {
					case 0, 1:
						tk := &task{idx: next, heapPos: -1, shape: &place.Shape{},
							spec: &model.Task{Duration: time.Duration(rapid.IntRange(0, 3).Draw(t, "duration"))}}
						next++
						h.push(tk)
						in = append(in, tk)
					case 2:
						if len(in) == 0 {
							continue
						}
						victim := rapid.SampledFrom(in).Draw(t, "removed")
						if got := h.remove(victim.heapPos); got != victim || victim.heapPos != -1 {
							t.Fatalf("remove returned task %d, want %d", got.idx, victim.idx)
						}
						in = slices.DeleteFunc(in, func(x *task) bool { return x == victim })
					case 3:
						if len(in) == 0 {
							continue
						}
						first := want()[0]
						if got := h.pop(); got != first {
							t.Fatalf("pop = task %d, want %d", got.idx, first.idx)
						}
						in = slices.DeleteFunc(in, func(x *task) bool { return x == first })
					}
					for i, x := range h.items {
						if x.heapPos != i {
							t.Fatalf("task %d at %d records position %d", x.idx, i, x.heapPos)
						}
					}
					if len(in) > 0 && h.head != want()[0].shape || len(in) == 0 && h.head != nil {
						t.Fatal("head shape is not the first task's")
					}
				}
				// Draining the heap yields the sorted order.
				exp := want()
				for i := range exp {
					if got := h.pop(); got != exp[i] {
						t.Fatalf("drain %d: task %d, want %d", i, got.idx, exp[i].idx)
					}
				}
			})
		})
	}
}

func TestJobHeapOrdersLikeASort(t *testing.T) {
	for _, order := range []policy.JobOrder{policy.ByPriorityThenAge, policy.ByFewestRunning} {
		t.Run(map[policy.JobOrder]string{policy.ByPriorityThenAge: "priority", policy.ByFewestRunning: "fewest-running"}[order], func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				h := jobHeap{order: order}
				var in []*job
				first := func() *job {
					return slices.MinFunc(in, func(a, b *job) int {
						if order == policy.ByFewestRunning && a.running != b.running {
							return cmp.Compare(a.running, b.running)
						}
						if order == policy.ByPriorityThenAge && a.spec.Priority != b.spec.Priority {
							return cmp.Compare(b.spec.Priority, a.spec.Priority)
						}
						return cmp.Compare(a.seq, b.seq)
					})
				}
				seq := uint64(0)
				for step := rapid.IntRange(0, 100).Draw(t, "steps"); step > 0; step-- {
					switch rapid.IntRange(0, 3).Draw(t, "op") {
					case 0, 1:
						seq++
						j := &job{seq: seq, heapPos: -1, running: rapid.IntRange(0, 3).Draw(t, "running"),
							spec: &model.Job{Priority: rapid.IntRange(0, 3).Draw(t, "priority")}}
						h.push(j)
						in = append(in, j)
					case 2:
						if len(in) == 0 {
							continue
						}
						victim := rapid.SampledFrom(in).Draw(t, "removed")
						h.remove(victim.heapPos)
						if victim.heapPos != -1 {
							t.Fatal("removed job keeps a position")
						}
						in = slices.DeleteFunc(in, func(x *job) bool { return x == victim })
					case 3:
						if len(in) == 0 {
							continue
						}
						j := rapid.SampledFrom(in).Draw(t, "changed")
						j.running = rapid.IntRange(0, 3).Draw(t, "newRunning")
						j.spec.Priority = rapid.IntRange(0, 3).Draw(t, "newPriority")
						h.fix(j.heapPos)
					}
					for i, x := range h.items {
						if x.heapPos != i {
							t.Fatalf("job %d at %d records position %d", x.seq, i, x.heapPos)
						}
					}
					if len(in) > 0 && h.items[0] != first() {
						t.Fatalf("head is job %d, want %d", h.items[0].seq, first().seq)
					}
				}
			})
		})
	}
}
