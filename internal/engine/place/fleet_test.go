package place

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/model"
	"pgregory.net/rapid"
)

func TestFreeSetAgreesWithASortedList(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 300).Draw(t, "members")
		var s freeSet
		s.grow(n)
		in := map[int]bool{}
		for step := rapid.IntRange(0, 200).Draw(t, "steps"); step > 0; step-- {
			i := rapid.IntRange(0, n-1).Draw(t, "i")
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				s.add(i)
				in[i] = true
			case 1:
				s.remove(i)
				delete(in, i)
			case 2:
				want := -1
				for k := i; k < n; k++ {
					if in[k] {
						want = k
						break
					}
				}
				if got := s.next(i); got != want {
					t.Fatalf("next(%d) = %d, want %d (set %v)", i, got, want, in)
				}
			}
			if s.n != len(in) {
				t.Fatalf("count %d, want %d", s.n, len(in))
			}
			// Walking the set from the bottom yields the members in order.
			var walk, want []int
			for k := s.next(0); k >= 0; k = s.next(k + 1) {
				walk = append(walk, k)
			}
			for k := range in {
				want = append(want, k)
			}
			slices.Sort(want)
			if !slices.Equal(walk, want) {
				t.Fatalf("walk %v, want %v", walk, want)
			}
		}
	})
}

func cpuWorker(name string, milli int64, slots int) model.Worker {
	return model.Worker{Name: name, Capacity: model.Resources{MilliCPU: milli, MemoryMB: 4096}, Slots: slots}
}

func mustAdd(t *testing.T, f *Fleet, w model.Worker) *Worker {
	t.Helper()
	pw, err := f.Add(w)
	if err != nil {
		t.Fatal(err)
	}
	return pw
}

func TestFirstFitFollowsRegistrationOrderAcrossClasses(t *testing.T) {
	f := NewFleet(FirstFit)
	// Two classes, interleaved: small, big, small, big, ...
	for i := 0; i < 200; i++ {
		mustAdd(t, f, cpuWorker(fmt.Sprintf("w%03d", i), int64(2000+2000*(i%2)), 1))
	}
	any := f.Shape(model.Resources{MilliCPU: 1000}, nil)
	big := f.Shape(model.Resources{MilliCPU: 3000}, nil)
	var got []int
	for i := 0; i < 5; i++ {
		w, r := f.Place(any)
		if w == nil {
			t.Fatalf("no worker: %+v", r)
		}
		f.Occupy(w, any.Req)
		got = append(got, w.Idx)
	}
	if !slices.Equal(got, []int{0, 1, 2, 3, 4}) {
		t.Fatalf("first-fit placed on %v, want registration order", got)
	}
	if w, _ := f.Place(big); w == nil || w.Idx != 5 {
		t.Fatalf("big task went to %+v, want worker 5 (the next big one)", w)
	}
	// A released worker is the first again.
	f.Release(f.workers[1], any.Req)
	if w, _ := f.Place(any); w == nil || w.Idx != 1 {
		t.Fatalf("after releasing worker 1, placed on %+v", w)
	}
}

func TestMultiSlotWorkerFillsByResources(t *testing.T) {
	f := NewFleet(FirstFit)
	a := mustAdd(t, f, cpuWorker("a", 2000, 3))
	b := mustAdd(t, f, cpuWorker("b", 2000, 3))
	one := f.Shape(model.Resources{MilliCPU: 1000}, nil)
	two := f.Shape(model.Resources{MilliCPU: 2000}, nil)
	f.Occupy(a, one.Req)
	if w, _ := f.Place(two); w != b {
		t.Fatalf("two CPUs went to %v, want b: a has one CPU left", w.Spec.Name)
	}
	f.Occupy(b, one.Req)
	if w, r := f.Place(two); w != nil || r.Code != model.ReasonNoFreeSlot {
		t.Fatalf("Place = %v, %+v; want no_free_slot with a CPU left on each", w, r)
	}
	if w, _ := f.Place(one); w != a {
		t.Fatalf("one CPU went to %v, want a", w.Spec.Name)
	}
	if slots, free := f.PoolSlots(nil); slots != 6 || free != 4 {
		t.Fatalf("pool slots %d free %d, want 6 and 4", slots, free)
	}
}

func TestRememberedFailureEndsWhenCapacityChanges(t *testing.T) {
	cases := []struct {
		name     string
		change   func(f *Fleet, w *Worker, req model.Resources)
		wantCode string // "" when the shape fits again
	}{
		{"release", func(f *Fleet, w *Worker, req model.Resources) { f.Release(w, req) }, ""},
		{"new worker", func(f *Fleet, w *Worker, req model.Resources) { mustAdd(t, f, cpuWorker("new", 4000, 1)) }, ""},
		{"worker removed", func(f *Fleet, w *Worker, req model.Resources) { f.Release(w, req); f.Remove(w) }, model.ReasonUnschedulable},
		{"worker drained", func(f *Fleet, w *Worker, req model.Resources) { f.SetState(w, model.WorkerDraining) }, model.ReasonWorkersDisabled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFleet(FirstFit)
			w := mustAdd(t, f, cpuWorker("only", 4000, 1))
			s := f.Shape(model.Resources{MilliCPU: 1000}, nil)
			f.Occupy(w, s.Req)
			if got, r := f.Place(s); got != nil || r.Code != model.ReasonNoFreeSlot {
				t.Fatalf("full fleet: Place = %v, %+v", got, r)
			}
			tc.change(f, w, s.Req)
			got, r := f.Place(s)
			switch {
			case tc.wantCode == "" && got == nil:
				t.Fatalf("after %s the shape still fails: %+v", tc.name, r)
			case tc.wantCode != "" && (got != nil || r.Code != tc.wantCode):
				t.Fatalf("after %s: Place = %v, %+v; want %s", tc.name, got, r, tc.wantCode)
			}
		})
	}
}

func TestDiagnosisCountsWorkersPerFilter(t *testing.T) {
	f := NewFleet(FirstFit)
	mustAdd(t, f, cpuWorker("small", 1000, 1))
	mustAdd(t, f, cpuWorker("small2", 1000, 1))
	mustAdd(t, f, model.Worker{Name: "gpu", Capacity: model.Resources{MilliCPU: 8000, GPUs: 1, GPUMemoryMB: 16384}, Labels: model.Labels{"zone": "a"}})
	mustAdd(t, f, model.Worker{Name: "other-zone", Capacity: model.Resources{MilliCPU: 8000, GPUs: 4, GPUMemoryMB: 81920}, Labels: model.Labels{"zone": "b"}})
	s := f.Shape(model.Resources{MilliCPU: 2000, GPUs: 1, GPUMemoryMB: 40960}, model.Selector{"zone": "a"})
	w, r := f.Place(s)
	if w != nil || r.Code != model.ReasonUnschedulable {
		t.Fatalf("Place = %v, %+v", w, r)
	}
	for _, frag := range []string{"1 GPU × 40960 MB", "on zone=a", "(4 workers: 3 lack labels, 1 lack gpu memory)"} {
		if !strings.Contains(r.Message, frag) {
			t.Errorf("message %q lacks %q", r.Message, frag)
		}
	}
}

func TestMinSatisfyingPrefersFewerGPUsThenLessMemoryThenCPU(t *testing.T) {
	f := NewFleet(MinSatisfying)
	mustAdd(t, f, model.Worker{Name: "gpu", Capacity: model.Resources{MilliCPU: 2000, MemoryMB: 4096, GPUs: 1, GPUMemoryMB: 8192}})
	mustAdd(t, f, model.Worker{Name: "fat", Capacity: model.Resources{MilliCPU: 2000, MemoryMB: 65536}})
	mustAdd(t, f, model.Worker{Name: "wide", Capacity: model.Resources{MilliCPU: 32000, MemoryMB: 8192}})
	mustAdd(t, f, model.Worker{Name: "wide2", Capacity: model.Resources{MilliCPU: 32000, MemoryMB: 8192}})
	s := f.Shape(model.Resources{MilliCPU: 1000}, nil)
	var got []string
	for i := 0; i < 4; i++ {
		w, _ := f.Place(s)
		f.Occupy(w, s.Req)
		got = append(got, w.Spec.Name)
	}
	if want := []string{"wide", "wide2", "fat", "gpu"}; !slices.Equal(got, want) {
		t.Fatalf("min-satisfying order %v, want %v", got, want)
	}
}

func TestParseStrategy(t *testing.T) {
	for name, want := range map[string]Strategy{"": FirstFit, "first-fit": FirstFit, "min-satisfying": MinSatisfying} {
		if got, err := ParseStrategy(name); err != nil || got != want {
			t.Errorf("ParseStrategy(%q) = %v, %v", name, got, err)
		}
	}
	if _, err := ParseStrategy("best-fit"); err == nil || !strings.Contains(err.Error(), "first-fit") {
		t.Errorf("unknown strategy: err = %v, want one listing the known names", err)
	}
}
