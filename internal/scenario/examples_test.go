package scenario

import (
	"path/filepath"
	"testing"

	_ "github.com/allot-sched/allot/internal/engine"
)

// TestExamplesPlan runs `allot plan` on the shipped examples and checks the
// figures their comments promise: the seeds' worked examples among them.
func TestExamplesPlan(t *testing.T) {
	cases := []struct {
		file   string
		starts map[string]int // per group
	}{
		{"classload-entitlement.yaml", map[string]int{"c0": 94, "c1": 0, "c2": 150, "c3": 46, "c4": 0, "c5": 0}},
		{"classload-loan.yaml", map[string]int{"c0": 10, "c1": 157, "c3": 50, "c4": 73}},
		{"fairshare-weights.yaml", map[string]int{"green": 6, "blue": 3}},
		{"priority-aggregation.yaml", map[string]int{"six": 60, "four-a": 20, "four-b": 20}},
		{"sla-groups.yaml", map[string]int{"ja": 22, "jb": 33, "jc": 54}},
		{"fifo.yaml", map[string]int{"all": 5}},
		{"../testdata/plan/seed004-example1.yaml", map[string]int{"c0": 94, "c1": 0, "c2": 150, "c3": 46, "c4": 0, "c5": 0}},
		{"../testdata/plan/seed004-example2.yaml", map[string]int{"c0": 10, "c1": 157, "c3": 50, "c4": 73}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			s, err := Load(filepath.Join("..", "..", "examples", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			e, err := s.Engine()
			if err != nil {
				t.Fatal(err)
			}
			d := e.Cycle(s.Start)
			got := map[string]int{}
			for _, g := range d.Groups {
				got[g.Group] = g.Starts
			}
			for g, want := range tc.starts {
				if got[g] != want {
					t.Errorf("group %s starts %d, want %d (all: %v)", g, got[g], want, got)
				}
			}
		})
	}
}

// TestAllExamplesLoad keeps every scenario under examples/ valid.
func TestAllExamplesLoad(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	if len(files) == 0 {
		t.Fatal("no examples found")
	}
	for _, f := range files {
		s, err := Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if _, err := s.Engine(); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
