package control

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/spec"
)

// FuzzRegistration feeds worker registrations, as JSON bodies, through
// what POST /v1/workers does before the loop (the API's strict decoder, the
// cache hints' check, workerModel) and what every start does with the
// stored registration (recoverWorker). None may panic; an accepted
// registration has quantities, slots and cost within their bounds, and its
// stored form reads back to the same worker: one that did not would be
// quarantined at the next start.
func FuzzRegistration(f *testing.F) {
	for _, s := range []string{
		`{"name": "w", "resources": {"cpu": "8", "memory": "30Gi", "gpus": 1, "gpuMemory": "80Gi"}, "slots": 4, "labels": {"zone": "a"}, "costPerHour": 2.5, "cached": ["m"]}`,
		`{"name": "w", "resources": {"cpu": 1e30, "memory": "1e30", "gpus": 1e30, "gpuMemory": "NaNGi"}}`,
		`{"name": "w", "resources": {"cpu": "9223372036854775807m", "memory": "-9223372036854775808Mi"}, "slots": 9223372036854775807}`,
		`{"name": "..", "costPerHour": 1e308, "slots": 2.7}`,
		`{"name": "w", "cache": [{"kind": "model", "name": "m"}, {"kind": "dataset", "name": ""}], "running": [{"job": "j", "task": "t", "attempt": 1}]}`,
		`{"name": "w", "resources": {"cpu": 0.0005, "memory": "1Pi", "gpus": 100000, "gpuMemory": "1Pi"}, "slots": 100000, "costPerHour": 1000000}`,
	} {
		f.Add([]byte(s))
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte) {
		var reg api.Register
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if dec.Decode(&reg) != nil {
			spec.CheckJSON(body, &reg) // must not panic on what the API could not decode
			return
		}
		if checkHints("cache", reg.Cache) != nil {
			return
		}
		mw, err := workerModel(reg, now)
		if err != nil {
			return
		}
		c := mw.Capacity
		if c.MilliCPU < 0 || c.MilliCPU > int64(spec.MaxCPU) || c.MemoryMB < 0 || c.MemoryMB > int64(spec.MaxMemory) ||
			c.GPUs < 0 || c.GPUs > spec.MaxGPUs || c.GPUMemoryMB < 0 || c.GPUMemoryMB > int64(spec.MaxMemory) ||
			mw.Slots < 1 || mw.Slots > spec.MaxSlots || !(mw.CostPerHour >= 0 && mw.CostPerHour <= spec.MaxCostPerHour) {
			t.Fatalf("registration %s accepted as capacity %+v, %d slots, cost %g", body, c, mw.Slots, mw.CostPerHour)
		}
		stored := reg
		stored.Running = nil
		raw, err := json.Marshal(stored)
		if err != nil {
			t.Fatal(err)
		}
		var back api.Register
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatalf("the stored registration %s does not read back: %v", raw, err)
		}
		again, err := workerModel(back, now)
		if err != nil {
			t.Fatalf("the stored registration %s is refused at a start: %v", raw, err)
		}
		// nil and empty label maps and cache lists mean the same.
		if again.Name != mw.Name || again.Capacity != mw.Capacity || again.Slots != mw.Slots || again.CostPerHour != mw.CostPerHour ||
			again.State != mw.State || again.Labels.String() != mw.Labels.String() || len(again.Cached) != len(mw.Cached) {
			t.Fatalf("the stored registration reads back as %+v, want %+v", again, mw)
		}
	})
}
