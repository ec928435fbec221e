package main

import (
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
)

// A task waiting for free GPU devices is told, per worker that would fit
// it, which devices are held and by which tasks (the scenario that
// docs/explain.md shows).
func TestExplainCommandPrintsGPUDevices(t *testing.T) {
	out := runExplain(t, "-f", explainData+"gpu-devices.yaml", "tune")
	for _, w := range []string{
		"estimated start: in 20m0s (2026-01-01T00:20:00Z) — task step on worker gpu-1",
		"      gpu devices: each task needs 2 free on one worker; 2 worker(s) that fit it have fewer:\n" +
			"        worker gpu-1: devices 0,1 held by eval/a, eval/b; needs 2 free; enough expected free at 2026-01-01T00:20:00Z\n" +
			"        worker gpu-0: devices 0,1 held by train/t; needs 2 free; enough expected free at 2026-01-01T00:50:00Z\n",
		"  - the task needs 2 free GPU device(s) on one worker: worker gpu-1 has them once eval/a and eval/b end, expected by 2026-01-01T00:20:00Z",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

func TestDeviceHoldersSayWhichTaskHoldsWhich(t *testing.T) {
	cases := []struct {
		name string
		held []api.DeviceHolder
		want string
	}{
		{"one device each", []api.DeviceHolder{{Device: 0, Job: "a", Task: "x"}, {Device: 1, Job: "a", Task: "y"}}, "a/x, a/y"},
		{"one task holds all", []api.DeviceHolder{{Device: 2, Job: "a", Task: "x"}, {Device: 3, Job: "a", Task: "x"}}, "a/x"},
		{"one of several holds two", []api.DeviceHolder{{Device: 0, Job: "a", Task: "x"}, {Device: 1, Job: "b", Task: "y"}, {Device: 3, Job: "a", Task: "x"}},
			"a/x (0,3), b/y (1)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := deviceHolders(c.held); got != c.want {
				t.Errorf("deviceHolders = %q, want %q", got, c.want)
			}
		})
	}
}

// More workers than the section lists are counted on a line of their own.
func TestExplainCommandCountsTheWorkersLeftOut(t *testing.T) {
	var b strings.Builder
	p := &printer{w: &b}
	writeGPUDevices(p, &api.GPUDeviceWait{Need: 2, More: 4, Workers: []api.WorkerDevices{
		{Worker: "g", Devices: 4, Free: []int{2}, Held: []api.DeviceHolder{{Device: 0, Job: "a", Task: "x"}, {Device: 1, Job: "a", Task: "x"}, {Device: 3, Job: "b", Task: "y"}}}}})
	want := "      gpu devices: each task needs 2 free on one worker; 5 worker(s) that fit it have fewer:\n" +
		"        worker g: devices 0,1,3 held by a/x (0,1), b/y (3); device 2 free; needs 2 free\n" +
		"        … and 4 more worker(s)\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
