package model

import (
	"strings"
	"testing"
)

func TestShortfallNamesTheScarcestMissingDimension(t *testing.T) {
	have := Resources{MilliCPU: 4000, MemoryMB: 8192, GPUs: 2, GPUMemoryMB: 24576}
	cases := []struct {
		name string
		want Resources
		miss string
	}{
		{"fits", Resources{MilliCPU: 4000, MemoryMB: 8192, GPUs: 2, GPUMemoryMB: 24576}, ""},
		{"nothing asked", Resources{}, ""},
		{"cpu", Resources{MilliCPU: 4001}, "cpu"},
		{"memory before cpu", Resources{MilliCPU: 8000, MemoryMB: 9000}, "memory"},
		{"gpus before memory", Resources{MemoryMB: 9000, GPUs: 3}, "gpus"},
		{"memory per gpu before memory", Resources{MemoryMB: 9000, GPUs: 1, GPUMemoryMB: 40960}, "gpu_memory"},
		{"gpus before memory per gpu", Resources{GPUs: 3, GPUMemoryMB: 40960}, "gpus"},
		{"gpu memory without gpus asks for nothing", Resources{GPUMemoryMB: 40960}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.want.Shortfall(have); got != tc.miss {
				t.Fatalf("Shortfall = %q, want %q", got, tc.miss)
			}
			if tc.want.FitsIn(have) != (tc.miss == "") {
				t.Fatalf("FitsIn disagrees with Shortfall")
			}
		})
	}
}

func TestAddAndSubKeepMemoryPerGPU(t *testing.T) {
	a := Resources{MilliCPU: 1000, MemoryMB: 100, GPUs: 1, GPUMemoryMB: 24576}
	b := Resources{MilliCPU: 500, MemoryMB: 50, GPUs: 2, GPUMemoryMB: 16384}
	if got := a.Add(b); got != (Resources{MilliCPU: 1500, MemoryMB: 150, GPUs: 3, GPUMemoryMB: 24576}) {
		t.Fatalf("Add = %+v", got)
	}
	if got := a.Add(b).Sub(b); got != a {
		t.Fatalf("Add then Sub = %+v, want %+v", got, a)
	}
}

func TestSelectorMergeAndMatch(t *testing.T) {
	pool := Selector{"zone": "a"}
	cases := []struct {
		name  string
		job   Selector
		ok    bool
		key   string
		match Labels
	}{
		{"empty job selector keeps the pool", nil, true, "zone=a", Labels{"zone": "a"}},
		{"conjunction", Selector{"gpu": "h100"}, true, "gpu=h100,zone=a", Labels{"zone": "a", "gpu": "h100", "x": "y"}},
		{"same value twice", Selector{"zone": "a"}, true, "zone=a", Labels{"zone": "a"}},
		{"contradiction", Selector{"zone": "b"}, false, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := pool.Merge(tc.job)
			if ok != tc.ok {
				t.Fatalf("Merge ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if m.String() != tc.key {
				t.Fatalf("merged %q, want %q", m.String(), tc.key)
			}
			if !m.Matches(tc.match) {
				t.Fatalf("%v does not match %v", m, tc.match)
			}
			if m.Matches(Labels{"zone": "b"}) {
				t.Fatalf("%v matches zone=b", m)
			}
		})
	}
	if !(Selector{}).Matches(nil) {
		t.Fatal("the empty selector must match every worker")
	}
}

func TestResourcesString(t *testing.T) {
	cases := map[string]Resources{
		"nothing":                          {},
		"1.5 CPU":                          {MilliCPU: 1500},
		"2 CPU, 4096 MB, 1 GPU × 24576 MB": {MilliCPU: 2000, MemoryMB: 4096, GPUs: 1, GPUMemoryMB: 24576},
		"2 GPU":                            {GPUs: 2},
	}
	for want, r := range cases {
		if got := r.String(); got != want {
			t.Errorf("String(%+v) = %q, want %q", r, got, want)
		}
	}
}

func TestTerminalStates(t *testing.T) {
	for s, want := range map[TaskState]bool{TaskBlocked: false, TaskReady: false, TaskRunning: false,
		TaskSucceeded: true, TaskFailed: true, TaskCancelled: true} {
		if s.Terminal() != want {
			t.Errorf("%s.Terminal() = %v", s, !want)
		}
	}
}

func TestValidNameIsSafeInPathsAndCommandLines(t *testing.T) {
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{"a", true}, {"job-1", true}, {"A.b_c-9", true}, {"9", true}, {strings.Repeat("x", MaxNameLen), true},
		{"", false}, {".", false}, {"..", false}, {".hidden", false}, {"-flag", false}, {"_x", false},
		{"a/b", false}, {"a b", false}, {"é", false}, {strings.Repeat("x", MaxNameLen+1), false},
	} {
		if got := ValidName(tt.name); got != tt.ok {
			t.Errorf("ValidName(%q) = %v, want %v", tt.name, got, tt.ok)
		}
	}
}
