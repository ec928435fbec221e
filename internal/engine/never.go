package engine

import (
	"fmt"
	"strings"

	"github.com/allot-sched/allot/internal/engine/place"
	"github.com/allot-sched/allot/internal/model"
)

// NeverRunnable is a set of a job's tasks that no registered worker can
// ever run, as a submission answer warns of it (as Slurm's "Requested node
// configuration is not available"): they would wait until a worker that
// has what they need registers.
type NeverRunnable struct {
	// Tasks names the tasks (the first few, then how many more).
	Tasks []string `json:"tasks"`
	// Needs is what the tasks ask of a worker, in words.
	Needs string `json:"needs"`
	// Reason is the placement reason: what the tasks need and what the
	// registered workers lack, counted by filter.
	Reason model.Reason `json:"reason"`
}

// NeverRunnable returns the sets of job's unfinished tasks, one per task
// shape, that no registered worker can ever run, in spec order. With no
// worker registered it returns none: there is no fleet to judge by. It
// only reads (the feasibility cache may fill).
func (e *Engine) NeverRunnable(job string) []NeverRunnable {
	j, ok := e.jobs[job]
	if !ok || j.done {
		return nil
	}
	var c neverSets
	for _, t := range j.tasks {
		if !t.state.Terminal() && t.shape != nil {
			c.add(e, t.shape, t.spec.Name)
		}
	}
	return c.done()
}

// NeverRunnableSpec is NeverRunnable for a job not yet submitted: a check
// before the job is accepted (allot submit --strict). A job the engine
// would refuse (an unknown queue, a selector against its queue's pool)
// gets none: submission says what is wrong with it.
func (e *Engine) NeverRunnableSpec(spec model.Job) []NeverRunnable {
	q, ok := e.queueBy[spec.Queue]
	if !ok {
		return nil
	}
	sel, ok := q.pool.Merge(spec.Selector)
	if !ok {
		return nil
	}
	var c neverSets
	var shape *place.Shape
	for i := range spec.Tasks {
		t := &spec.Tasks[i]
		if shape == nil || shape.Req != t.Resources {
			shape = e.fleet.Shape(t.Resources, sel)
		}
		c.add(e, shape, t.Name)
	}
	return c.done()
}

// neverSets groups tasks by shape into the sets NeverRunnable returns. It
// runs on every submission, so it allocates nothing for a job every task
// of which can run: a job's tasks mostly share one shape, checked once.
type neverSets struct {
	out   []NeverRunnable
	more  []int          // tasks past the named ones, per set
	seen  []shapeVerdict // each shape met, and its set (-1: runnable)
	buf   [4]shapeVerdict
	last  *place.Shape
	lastI int
}

type shapeVerdict struct {
	s *place.Shape
	i int
}

func (c *neverSets) add(e *Engine, s *place.Shape, task string) {
	if c.seen == nil {
		c.seen = c.buf[:0]
	}
	i := c.lastI
	if s != c.last {
		i = -2
		for _, v := range c.seen {
			if v.s == s {
				i = v.i
				break
			}
		}
		if i == -2 {
			i = -1
			if r, never := e.fleet.NoneEver(s); never {
				i = len(c.out)
				c.out = append(c.out, NeverRunnable{Needs: s.Needs(), Reason: r})
				c.more = append(c.more, 0)
			}
			c.seen = append(c.seen, shapeVerdict{s, i})
		}
		c.last, c.lastI = s, i
	}
	switch {
	case i < 0:
	case len(c.out[i].Tasks) < maxExamples:
		c.out[i].Tasks = append(c.out[i].Tasks, task)
	default:
		c.more[i]++
	}
}

func (c *neverSets) done() []NeverRunnable {
	for i, n := range c.more {
		if n > 0 {
			c.out[i].Tasks = append(c.out[i].Tasks, fmt.Sprintf("%d more", n))
		}
	}
	return c.out
}

// neverHelp says what would let tasks run that no registered worker can
// ever run: a worker that has what they need, or a smaller request.
func neverHelp(p *PlacementExplain) Help {
	var lacks []string
	for _, f := range p.Removed {
		lacks = append(lacks, fmt.Sprintf("%d lack %s (%s)", f.Workers, strings.ReplaceAll(f.Filter, "_", " "), f.Why))
	}
	return Help{Kind: "add_worker", Message: fmt.Sprintf(
		"no registered worker can ever run the task: it needs %s and of the %d worker(s) %s; a worker that has what it needs must register (or one must register again with it), or the job must ask for less",
		p.Needs, p.Workers, strings.Join(lacks, ", "))}
}

// neverFits reports whether workers are registered and every one was
// removed by a filter a worker cannot pass while registered (labels,
// hardware).
func neverFits(p *PlacementExplain) bool {
	n := 0
	for _, f := range p.Removed {
		if !classFilter(f.Filter) {
			return false
		}
		n += f.Workers
	}
	return p.Workers > 0 && n == p.Workers
}

// classFilter reports whether the filter named name is a class filter.
func classFilter(name string) bool {
	for _, c := range place.Filters() {
		if c.String() == name {
			return c.Never()
		}
	}
	return false
}
