package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"testing"

	"github.com/allot-sched/allot/internal/spec"
)

// The workers sim makes for a trace cost what a worker that reports no
// cost does (spec.DefaultCostPerHour), as a scenario's workers do: not 0.
func TestSimTraceWorkersHaveTheDefaultCost(t *testing.T) {
	raw := run(t, "sim", "--trace", filepath.Join("..", "..", "internal", "sim", "trace", "testdata", "small.swf"), "-o", "json")
	var res struct {
		Cost struct {
			WorkerHours float64 `json:"workerHours"`
			Cost        float64 `json:"cost"`
		} `json:"cost"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if want := res.Cost.WorkerHours * spec.DefaultCostPerHour; res.Cost.WorkerHours == 0 || math.Abs(res.Cost.Cost-want) > 1e-9 {
		t.Errorf("cost %v for %v worker-hours, want %v", res.Cost.Cost, res.Cost.WorkerHours, want)
	}
}
