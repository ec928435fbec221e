package control

import (
	"fmt"

	"github.com/allot-sched/allot/internal/spec"
)

// Live tasks (docs/jobs.md#limits). Every task of an unfinished job is held
// in the loop's memory and in the engine until its job ends, and read back
// at every start while it has not: the bounds on them are what keeps one
// tenant, or all of them, from taking the server's memory and its restarts.
// The counts follow c.jobs, through addJob and dropJob, so that a
// submission checks them without walking the jobs.

// liveTasks counts the tasks of the jobs in c.jobs, in all and by the
// submitter each job records. Loop-owned.
type liveTasks struct {
	total int
	by    map[string]int
}

func (l *liveTasks) add(submitter string, n int) {
	l.total += n
	if l.by == nil {
		l.by = map[string]int{}
	}
	if l.by[submitter] += n; l.by[submitter] <= 0 {
		delete(l.by, submitter)
	}
}

// addJob makes lj the live job of its ID and counts its tasks; a job it
// replaces is no longer counted.
func (c *Controller) addJob(lj *liveJob) {
	c.dropJob(lj.rec.ID)
	c.jobs[lj.rec.ID] = lj
	c.live.add(lj.rec.Submitter, len(lj.model.Tasks))
}

// dropJob forgets the live job of an ID, and its tasks.
func (c *Controller) dropJob(id string) {
	if old, ok := c.jobs[id]; ok {
		c.live.add(old.rec.Submitter, -len(old.model.Tasks))
		delete(c.jobs, id)
	}
}

// TooManyTasksError refuses a job whose tasks would take the live tasks
// of its submitter, or of the server, past their bound. It is no fault of
// the job: the same submission is accepted once enough jobs have ended.
type TooManyTasksError struct {
	// Limit is the setting that refuses it:
	// server.limits.maxLiveTasksPerSubmitter or server.limits.maxLiveTasks.
	Limit     string
	Max       int    // its value
	Live      int    // the live tasks counted against it now
	Tasks     int    // the refused job's tasks
	Submitter string // for the per-submitter bound
}

func (e *TooManyTasksError) Error() string {
	whose := "the server's"
	if e.Submitter != "" {
		whose = fmt.Sprintf("submitter %q's", e.Submitter)
	}
	tasks := fmt.Sprintf("%d tasks", e.Tasks)
	if e.Tasks == 1 {
		tasks = "1 task"
	}
	return fmt.Sprintf("the job's %s would take %s live tasks past %s (%d): %d are live; "+
		"submit it once jobs have ended, or cancel some", tasks, whose, e.Limit, e.Max, e.Live)
}

// roomFor refuses n more live tasks of submitter when they would pass a
// bound: the per-submitter one, unless anySubmitter (an admin's
// submission, or a job nobody submitted), then the server's.
func (c *Controller) roomFor(submitter string, n int, anySubmitter bool) error {
	if per := c.cfg.MaxLiveTasksPerSubmitter; !anySubmitter && submitter != "" && n > per-c.live.by[submitter] {
		return &TooManyTasksError{Limit: "server.limits.maxLiveTasksPerSubmitter", Max: per, Live: c.live.by[submitter],
			Tasks: n, Submitter: submitter}
	}
	if n > c.cfg.MaxLiveTasks-c.live.total {
		return &TooManyTasksError{Limit: "server.limits.maxLiveTasks", Max: c.cfg.MaxLiveTasks, Live: c.live.total, Tasks: n}
	}
	return nil
}

// taskCount is how many tasks a checked spec expands to.
func taskCount(js spec.Job) int {
	n := 0
	for _, t := range js.Tasks {
		n += max(t.Count, 1)
	}
	return n
}
