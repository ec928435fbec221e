package place

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/model"
)

// TestChainIsComplete checks what the rest of placement assumes of every
// entry: a unique name, a check of the right kind, its own explanation,
// and the class filters ahead of the worker filters (a worker filter is
// asked only of workers every class filter passed).
func TestChainIsComplete(t *testing.T) {
	seen := map[string]bool{}
	workerSeen := false
	for _, code := range Filters() {
		f := chain[code]
		if f.name == "" || seen[f.name] {
			t.Errorf("filter %d: name %q is empty or repeated", code, f.name)
		}
		seen[f.name] = true
		if (f.never == nil) == (f.now == nil) {
			t.Errorf("%s: a filter is either a class filter (never) or a worker filter (now)", code)
		}
		if f.lacks == nil || f.why == nil {
			t.Errorf("%s: no lacks or why", code)
		}
		if f.never != nil && workerSeen {
			t.Errorf("%s: a class filter after a worker filter", code)
		}
		workerSeen = workerSeen || f.now != nil
	}
	if got := FilterCode(NumFilters).String(); got != "filter(9)" {
		t.Errorf("String of no filter = %q", got)
	}
}

// TestClassKeyFollowsWhatTheFiltersRead: workers that differ in anything a
// filter (or the score) reads are in different classes; workers that
// differ only in their name, state or cache hints share one.
func TestClassKeyFollowsWhatTheFiltersRead(t *testing.T) {
	base := model.Worker{Name: "a", Capacity: model.Resources{MilliCPU: 8000, MemoryMB: 32768, GPUs: 1, GPUMemoryMB: 24576},
		Labels: model.Labels{"zone": "a"}, Slots: 1, CostPerHour: 1}
	same := []func(w *model.Worker){
		func(w *model.Worker) { w.Name = "b" },
		func(w *model.Worker) { w.State = model.WorkerDraining },
		func(w *model.Worker) { w.Labels = model.Labels{"zone": "a"} },
	}
	differ := []func(w *model.Worker){
		func(w *model.Worker) { w.Labels = model.Labels{"zone": "b"} },
		func(w *model.Worker) { w.Labels = nil },
		func(w *model.Worker) { w.Capacity.MilliCPU++ },
		func(w *model.Worker) { w.Capacity.MemoryMB++ },
		func(w *model.Worker) { w.Capacity.GPUs++ },
		func(w *model.Worker) { w.Capacity.GPUMemoryMB++ },
		func(w *model.Worker) { w.Slots = 2 },
		func(w *model.Worker) { w.CostPerHour = 2 },
	}
	for i, change := range append(same, differ...) {
		w := base
		w.Labels = model.Labels{"zone": "a"}
		change(&w)
		if got, want := classKeyOf(&w) == classKeyOf(&base), i < len(same); got != want {
			t.Errorf("change %d: same class = %v, want %v", i, got, want)
		}
	}
}

// TestFilterCountsEachWorkerOnceInChainOrder runs one shape down the chain
// on a fleet with a worker for each filter.
func TestFilterCountsEachWorkerOnceInChainOrder(t *testing.T) {
	f, _ := NewFleetConfig(Config{Mode: "static-worker", Strategy: "first-fit"})
	gpu := model.Resources{MilliCPU: 8000, MemoryMB: 32768, GPUs: 2, GPUMemoryMB: 40960}
	add := func(name string, r model.Resources, zone string, state model.WorkerState) *Worker {
		w, err := f.Add(model.Worker{Name: name, Capacity: r, Labels: model.Labels{"zone": zone}, State: state})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	add("labels", gpu, "b", "")
	add("gpus", model.Resources{MilliCPU: 8000, MemoryMB: 32768, GPUs: 1, GPUMemoryMB: 40960}, "a", "")
	add("gpu-memory", model.Resources{MilliCPU: 8000, MemoryMB: 32768, GPUs: 2, GPUMemoryMB: 24576}, "a", "")
	add("memory", model.Resources{MilliCPU: 8000, MemoryMB: 1024, GPUs: 2, GPUMemoryMB: 40960}, "a", "")
	add("cpu", model.Resources{MilliCPU: 1000, MemoryMB: 32768, GPUs: 2, GPUMemoryMB: 40960}, "a", "")
	add("draining", gpu, "a", model.WorkerDraining)
	bound := add("bound", gpu, "a", "")
	busy := add("busy", gpu, "a", "")
	add("free", gpu, "a", "")
	s := f.Shape(model.Resources{MilliCPU: 4000, MemoryMB: 8192, GPUs: 2, GPUMemoryMB: 40960}, model.Selector{"zone": "a"})
	f.Started(&Request{Shape: s, Job: "other"}, bound)
	f.Occupy(busy, s.Req)

	got := f.Filter(s, &Scope{Job: "mine"})
	want := [NumFilters]int{1, 1, 1, 1, 1, 1, 1, 0, 1}
	if got.Workers != 9 || got.Removed != want || got.FitNow != 1 || got.Closest != nil {
		t.Errorf("Filter = %d workers, removed %v, fitNow %d, closest %v; want 9, %v, 1, none", got.Workers, got.Removed, got.FitNow, got.Closest, want)
	}
	if !strings.Contains(got.Why[FilterLabels], "(e.g. labels has b)") {
		t.Errorf("why labels = %q, want the first worker it removed as the example", got.Why[FilterLabels])
	}

	// For the job bound to a worker, every other ready worker that can
	// run the task is counted as not the job's worker, busy or not; only
	// the free one would take the task were the job not bound.
	got = f.Filter(s, &Scope{Job: "other", Pin: bound, PinBound: true, PinWhy: "which job other is bound to"})
	if got.Removed[FilterBound] != 2 || got.Removed[FilterBusy] != 0 || !got.PinFits || got.OthersFree != 1 {
		t.Errorf("pinned: removed %v, pin fits %v, others free %d; want busy and free counted as bound, the pin fitting, 1 other free", got.Removed, got.PinFits, got.OthersFree)
	}
}

// TestPendingReasonAndExplainOrders pins the two user-visible orders: the
// pending reason lists GPU memory before the GPU count, explain follows
// the chain.
func TestPendingReasonAndExplainOrders(t *testing.T) {
	if got := reasonOrder[:3]; !slices.Equal(got, []FilterCode{FilterLabels, FilterGPUMemory, FilterGPUs}) {
		t.Errorf("reason order starts %v", got)
	}
	if got := Filters()[:3]; !slices.Equal(got, []FilterCode{FilterLabels, FilterGPUs, FilterGPUMemory}) {
		t.Errorf("chain order starts %v", got)
	}
}

// TestOpenAPIListsTheChain keeps the API description's enum of filter
// names in step with the chain.
func TestOpenAPIListsTheChain(t *testing.T) {
	b, err := os.ReadFile("../../api/rest/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas struct {
				ExplainPlacement struct {
					Properties struct {
						Removed struct {
							Items struct {
								Properties struct {
									Filter struct {
										Enum []string `json:"enum"`
									} `json:"filter"`
								} `json:"properties"`
							} `json:"items"`
						} `json:"removed"`
					} `json:"properties"`
				} `json:"ExplainPlacement"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range Filters() {
		names = append(names, c.String())
	}
	if got := doc.Components.Schemas.ExplainPlacement.Properties.Removed.Items.Properties.Filter.Enum; !slices.Equal(got, names) {
		t.Errorf("openapi.json lists the filters %v, the chain %v", got, names)
	}
}
