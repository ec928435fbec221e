package spec

import (
	"fmt"

	"github.com/allot-sched/allot/internal/model"
)

// MaxDependsOn bounds the jobs one job may wait for.
const MaxDependsOn = 100

// JobDependency is a job's dependency on another job (model.JobDependency).
type JobDependency = model.JobDependency

// checkDependsOn checks a job's dependsOn list and returns it with each
// type filled in (afterok when left out). Whether the other jobs exist is
// the server's check: a spec alone cannot tell.
func checkDependsOn(c *errs, p func(string) string, j Job) []model.JobDependency {
	if len(j.DependsOn) == 0 {
		return nil
	}
	if len(j.DependsOn) > MaxDependsOn {
		c.add(p("dependsOn"), "has %d entries, more than %d", len(j.DependsOn), MaxDependsOn)
		return nil
	}
	out := make([]model.JobDependency, len(j.DependsOn))
	seen := map[string]int{}
	for i, d := range j.DependsOn {
		dp := p(fmt.Sprintf("dependsOn[%d]", i))
		switch {
		case d.Job == "":
			c.add(dp+".job", "required: the ID of the job to wait for")
		case !validName(d.Job):
			c.add(dp+".job", "%.40q is not a valid job ID: %s", d.Job, model.NameRule)
		case d.Job == j.ID:
			c.add(dp+".job", "a job cannot depend on itself")
		}
		if prev, dup := seen[d.Job]; dup && d.Job != "" {
			c.add(dp+".job", "job %q is already named at dependsOn[%d]", d.Job, prev)
		}
		seen[d.Job] = i
		if d.Type == "" {
			d.Type = model.AfterOK
		}
		if !d.Type.Known() {
			c.add(dp+".type", "unknown dependency type %q (known: after, afterok, afternotok, afterany)", d.Type)
		}
		out[i] = d
	}
	return out
}
