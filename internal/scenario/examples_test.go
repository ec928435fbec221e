package scenario

import (
	"path/filepath"
	"testing"

	_ "github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/model"
)

// TestExamplesPlan runs `allot plan` on the shipped examples and checks the
// figures their comments promise: the seeds' worked examples among them.
func TestExamplesPlan(t *testing.T) {
	cases := []struct {
		file   string
		starts map[string]int // per group
		stops  map[string]int // per group; nil: none at all
	}{
		{"classload-entitlement.yaml", map[string]int{"c0": 94, "c1": 0, "c2": 150, "c3": 46, "c4": 0, "c5": 0}, nil},
		{"classload-loan.yaml", map[string]int{"c0": 10, "c1": 157, "c3": 50, "c4": 73}, nil},
		{"fairshare-weights.yaml", map[string]int{"green": 6, "blue": 3}, nil},
		{"fairshare-prefix.yaml", map[string]int{"UserA1": 6, "UserA2": 3, "UserB": 3}, nil},
		{"fairshare-dominant.yaml", map[string]int{"train": 7, "etl": 57}, nil},
		{"classload-dominant.yaml", map[string]int{"train": 3, "etl": 5}, nil},
		{"priority-aggregation.yaml", map[string]int{"six": 60, "four-a": 20, "four-b": 20}, nil},
		{"sla-groups.yaml", map[string]int{"ja": 22, "jb": 33, "jc": 54}, nil},
		{"fifo.yaml", map[string]int{"all": 5}, nil},
		{"../testdata/plan/seed004-example1.yaml", map[string]int{"c0": 94, "c1": 0, "c2": 150, "c3": 46, "c4": 0, "c5": 0}, nil},
		{"../testdata/plan/seed004-example2.yaml", map[string]int{"c0": 10, "c1": 157, "c3": 50, "c4": 73}, nil},
		{"../testdata/plan/seed004-rebalance.yaml",
			map[string]int{"c0": 3034, "c1": 2549, "c2": 1275, "c3": 1470, "c4": 0, "c5": 0, "c6": 0, "c7": 0},
			map[string]int{"c0": 0, "c1": 0, "c2": 0, "c3": 0, "c4": 0, "c5": 0, "c6": 660, "c7": 2404}},
		{"classload-rebalance.yaml",
			map[string]int{"a": 1130, "b": 0, "c": 300, "d": 0, "e": 460, "f": 100, "g": 0, "h": 75},
			map[string]int{"a": 0, "b": 475, "c": 0, "d": 425, "e": 0, "f": 0, "g": 565, "h": 0}},
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
			got, stopped := map[string]int{}, map[string]int{}
			for _, g := range d.Groups {
				got[g.Group], stopped[g.Group] = g.Starts, g.Stops
			}
			for g, want := range tc.starts {
				if got[g] != want {
					t.Errorf("group %s starts %d, want %d (all: %v)", g, got[g], want, got)
				}
			}
			for g, want := range tc.stops {
				if stopped[g] != want {
					t.Errorf("group %s stops %d, want %d (all: %v)", g, stopped[g], want, stopped)
				}
			}
			if tc.stops == nil && len(d.Stops) > 0 {
				t.Errorf("%d tasks stop, want none", len(d.Stops))
			}
			// Every stop is a rebalance's.
			for _, st := range d.Stops {
				if st.Reason.Code != model.ReasonRebalanced {
					t.Errorf("stop %+v, want a rebalance", st)
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
