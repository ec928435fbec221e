package spec

import (
	"fmt"

	"github.com/allot-sched/allot/internal/model"
)

// JobGang is the gang name (model.Task.Gang) of the tasks of a job that is
// a gang as a whole; a stage's gang is named after its task entry.
const JobGang = "job"

// gangs checks the gang fields of j (the job's and its task entries') and
// marks the members of each gang in tasks, the expanded tasks of the
// entries that kept[i] says were expanded, in entry order.
func (j Job) gangs(c *errs, p func(string) string, tasks []model.Task, kept []bool) {
	jobGang := j.Gang || j.MinAvailable != 0
	field := "gang"
	if j.MinAvailable != 0 {
		field = "minAvailable"
	}
	if j.MinAvailable < 0 {
		c.add(p("minAvailable"), "must be at least 1 (got %d)", j.MinAvailable)
		jobGang = false
	}
	if jobGang {
		for i, t := range j.Tasks {
			switch {
			case t.Gang || t.MinAvailable != 0:
				c.add(p(fmt.Sprintf("tasks[%d].%s", i, entryGangField(t))),
					"the whole job is already a gang (its %s): set gang or minAvailable on the job or on its stages, not both", field)
				jobGang = false
			case len(t.Needs) > 0:
				c.add(p(field), "a gang of the whole job starts its tasks together, but tasks[%d] (%q) needs another of its tasks: set gang or minAvailable on the stage's task entry instead",
					i, t.Name)
				jobGang = false
			}
			if !jobGang {
				break
			}
		}
	}
	if jobGang {
		min := j.MinAvailable
		if min == 0 {
			min = len(tasks)
		}
		switch {
		case min > len(tasks):
			c.add(p("minAvailable"), "is %d, more than the job's %d tasks", min, len(tasks))
		case j.MaxSlots > 0 && j.MaxSlots < min:
			c.add(p(field), "the gang starts %d tasks at once, but maxSlots lets only %d run at once, so it could never start", min, j.MaxSlots)
		default:
			for k := range tasks {
				tasks[k].Gang, tasks[k].GangMin = JobGang, min
			}
			for i, t := range j.Tasks {
				if t.Running > 0 && t.Running < min {
					c.add(p(fmt.Sprintf("tasks[%d].running", i)), "a gang starts at least %d tasks at once: running must be 0 or at least %d", min, min)
				}
			}
		}
		return
	}
	pos := 0
	for i, t := range j.Tasks {
		if !kept[i] {
			continue
		}
		n := max(t.Count, 1)
		tp := p(fmt.Sprintf("tasks[%d]", i))
		if t.MinAvailable < 0 {
			c.add(tp+".minAvailable", "must be at least 1 (got %d)", t.MinAvailable)
		} else if t.Gang || t.MinAvailable > 0 {
			min := t.MinAvailable
			if min == 0 {
				min = n
			}
			switch {
			case min > n:
				c.add(tp+".minAvailable", "is %d, more than the entry's count of %d tasks", min, n)
			case j.MaxSlots > 0 && j.MaxSlots < min:
				c.add(tp+"."+entryGangField(t), "the gang starts %d tasks at once, but the job's maxSlots lets only %d run at once, so it could never start", min, j.MaxSlots)
			case t.Running > 0 && t.Running < min:
				c.add(tp+".running", "a gang starts at least %d tasks at once: running must be 0 or at least %d", min, min)
			default:
				for k := pos; k < pos+n && k < len(tasks); k++ {
					tasks[k].Gang, tasks[k].GangMin = t.Name, min
				}
			}
		}
		pos += n
	}
}

// entryGangField names the gang field a task entry sets.
func entryGangField(t Task) string {
	if t.MinAvailable != 0 {
		return "minAvailable"
	}
	return "gang"
}
