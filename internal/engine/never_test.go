package engine_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/scenario"
)

// A job that no registered worker can ever run is named at submission
// (NeverRunnable) and explain says what would help.
func TestNeverRunnableTasksAreNamedAndExplained(t *testing.T) {
	s, err := scenario.Load(filepath.Join("testdata", "explain", "no-gpus.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.Engine()
	if err != nil {
		t.Fatal(err)
	}
	never := e.NeverRunnable("train")
	if len(never) != 1 || strings.Join(never[0].Tasks, " ") != "step-0 step-1 step-2 2 more" ||
		never[0].Reason.Code != "unschedulable" || !strings.Contains(never[0].Reason.Message, "2 lack gpus") {
		t.Errorf("NeverRunnable(train) = %+v, want the 5 steps, unschedulable, 2 workers lacking GPUs", never)
	}
	if got := e.NeverRunnable("fine"); len(got) != 0 {
		t.Errorf("NeverRunnable(fine) = %+v, want none", got)
	}
	e.Cycle(s.Start)
	x, _ := e.Explain("train")
	var help string
	for _, h := range x.Help {
		if h.Kind == "add_worker" {
			help = h.Message
		}
	}
	for _, w := range []string{"no registered worker can ever run", "1 GPU", "2 lack gpus", "must register", "ask for less"} {
		if !strings.Contains(help, w) {
			t.Errorf("add_worker help %q does not say %q (help: %+v)", help, w, x.Help)
		}
	}

	empty, _ := engine.New(s.Config)
	empty.Apply(engine.SubmitJob{Job: s.Jobs[0]})
	if got := empty.NeverRunnable("train"); len(got) != 0 {
		t.Errorf("with no worker registered: %+v, want no warning", got)
	}
}
