//go:build unix

package agent

import (
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
)

// The attempt's secret goes back with its report, and only there: the
// task's environment, arguments and output never hold it.
func TestReportsCarryTheirAttemptsSecretWhichTheTaskNeverSees(t *testing.T) {
	fs, url := newFakeServer(t)
	start(t, testConfig(url))
	a := assign("j", "t", 1, `env; cat /proc/$$/cmdline; ls -l /proc/$$/fd/`, nil)
	a.Secret = "s3cr3t-of-the-attempt"
	fs.give(api.Lease{Assignments: []api.Assignment{a}})
	waitFor(t, "the report", func() bool { _, ok := fs.report(a.Attempt); return ok })
	rep, _ := fs.report(a.Attempt)
	if rep.Secret != a.Secret {
		t.Errorf("the report carries secret %q, want the assignment's %q", rep.Secret, a.Secret)
	}
	if rep.ExitCode != 0 || !strings.Contains(rep.Output, "ALLOT_TASK=t") {
		t.Fatalf("the task did not run as expected: %+v", rep)
	}
	if strings.Contains(rep.Output, a.Secret) {
		t.Errorf("the task saw its attempt's secret:\n%s", rep.Output)
	}
}
