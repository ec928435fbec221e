package spec

import (
	"fmt"
	"testing"
	"time"
)

// chainJob is a job of n tasks, each needing the one before, each
// referencing the result of the first (the worst case of reference checks
// by ancestor walks).
func chainJob(n int, refs bool) Job {
	j := Job{ID: "chain", Tasks: make([]Task, n)}
	for i := range j.Tasks {
		t := Task{Name: fmt.Sprintf("t%d", i), Run: "true"}
		if i > 0 {
			t.Needs = []string{fmt.Sprintf("t%d", i-1)}
			if refs {
				t.Run = "echo ${tasks.t0.result.v}"
			}
		}
		j.Tasks[i] = t
	}
	return j
}

// fanInJob is a job of n-1 independent tasks that one last task needs,
// written as a submitter would: one entry with a count.
func fanInJob(n int) Job {
	return Job{ID: "fan", Tasks: []Task{{Name: "shard", Count: n - 1, Run: "true"},
		{Name: "sink", Needs: []string{"shard"}, Run: "echo ${tasks.shard-0.result.v}"}}}
}

// wideJob is a job of n entries in layers of 1,000 (MaxNeeds), each entry
// needing every entry of the layer before.
func wideJob(n int) Job {
	j := Job{ID: "wide", Tasks: make([]Task, n)}
	const layer = MaxNeeds
	for i := range j.Tasks {
		t := Task{Name: fmt.Sprintf("t%d", i), Run: "true"}
		if l := i / layer; l > 0 && i%layer < 1 {
			for k := (l - 1) * layer; k < l*layer; k++ {
				t.Needs = append(t.Needs, fmt.Sprintf("t%d", k))
			}
			t.Run = "echo ${tasks.t0.result.v}"
		}
		j.Tasks[i] = t
	}
	return j
}

// checkDAG runs the checks of a job's dependencies and references: what
// Expand and CheckRunnable do, without the bound on a submitted job's size
// (a scenario's jobs have none).
func checkDAG(b testing.TB, j Job) {
	if _, err := j.Expand("", time.Time{}); err != nil {
		b.Fatal(err)
	}
	var c errs
	j.checkRunnable(&c, func(f string) string { return f })
	if err := c.err(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkValidateDAG checks a 100,000-task job, as a submission does:
// a chain, a chain whose every task references the first one's result,
// and a wide fan-in.
func BenchmarkValidateDAG(b *testing.B) {
	for _, bc := range []struct {
		name string
		job  Job
	}{
		{"chain-100k", chainJob(MaxTasksPerJob, false)},
		{"chain-100k-references", chainJob(MaxTasksPerJob, true)},
		{"fan-in-100k", fanInJob(MaxTasksPerJob)},
		{"layers-100k", wideJob(MaxTasksPerJob)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for range b.N {
				checkDAG(b, bc.job)
			}
		})
	}
}

// TestValidatingALongChainIsAccepted: a chain of 10,000 tasks whose every
// task references the first one's result (as much as a submitted job may
// hold) is valid. That the check is linear is measured by
// BenchmarkValidateDAG, not here.
func TestValidatingALongChainIsAccepted(t *testing.T) {
	j := chainJob(10_000, true)
	if _, err := j.Expand("", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := j.CheckRunnable(""); err != nil {
		t.Fatal(err)
	}
}
