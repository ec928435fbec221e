package spec

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// Limits on one job. They keep one submission from exhausting the server.
const (
	MaxTasksPerJob = 100_000
	MaxNeeds       = 1_000
	MaxLabels      = 64
	// MaxNeedEdges bounds the dependencies of a job once counts are
	// expanded: an entry of 1,000 tasks that needs an entry of 1,000 tasks
	// is a million edges, each of which the scheduler keeps and walks.
	MaxNeedEdges = 1_000_000
	// MinPriority and MaxPriority bound a job's priority. Policies compare
	// priorities and add ranks to them; a bound keeps that exact.
	MinPriority = -1_000_000
	MaxPriority = 1_000_000
)

// Job is a job as a user writes it: model.JobSpec, the type the API shows,
// with the checks that turn it into the engine's job (Expand,
// CheckRunnable). (*model.JobSpec)(&j) is the same value for the API.
type Job model.JobSpec

// Task is a task, or with Count a group of identical tasks, as a user
// writes it (model.TaskSpec).
type Task = model.TaskSpec

// ImageSize is an image's size in pixels (model.ImageSize).
type ImageSize = model.ImageSize

// Resources is what a task asks for, or a worker offers (model.ResourceSpec);
// its Model method converts it to the engine's resources.
type Resources = model.ResourceSpec

func checkResources(c *errs, path string, r Resources) {
	if r.GPUs < 0 || r.GPUs > MaxGPUs {
		c.add(path+".gpus", "must be a whole number between 0 and %d (got %d)", MaxGPUs, r.GPUs)
	}
	for _, q := range []struct {
		field string
		bad   bool
	}{
		{"cpu", r.CPU < 0 || r.CPU > MaxCPU},
		{"memory", r.Memory < 0 || r.Memory > MaxMemory},
		{"gpuMemory", r.GPUMemory < 0 || r.GPUMemory > MaxMemory},
	} {
		if q.bad { // only a Resources built in Go: the parsers hold these bounds
			c.add(path+"."+q.field, "out of range")
		}
	}
	if r.GPUMemory > 0 && r.GPUs == 0 {
		c.add(path+".gpuMemory", "is per GPU, so it needs gpus of at least 1")
	}
}

// Expanded is a job ready for the engine, with the names of the tasks that
// a scenario says already run.
type Expanded struct {
	Job     model.Job
	Running []RunningTask
}

// RunningTask names a task a scenario says already runs, and for how long.
type RunningTask struct {
	Name string
	For  time.Duration
}

// Expand checks j and expands its task groups. path prefixes field paths
// ("jobs[3]"); submitted is the job's submission time.
func (j Job) Expand(path string, submitted time.Time) (Expanded, error) {
	var c errs
	p := func(f string) string { return join(path, f) }
	if j.ID != "" && !validName(j.ID) {
		c.add(p("id"), "%.40q is not a valid name: %s", j.ID, model.NameRule)
	}
	if j.Priority < MinPriority || j.Priority > MaxPriority {
		c.add(p("priority"), "must be a whole number between %d and %d (got %d)", MinPriority, MaxPriority, j.Priority)
	}
	if j.MaxSlots < 0 {
		c.add(p("maxSlots"), "must not be negative")
	}
	if j.Load < 0 || j.Load > model.MaxLoad {
		c.add(p("load"), "must be between 0 and %d (got %d)", model.MaxLoad, j.Load)
	}
	if j.User != "" && !ValidUserName(j.User) {
		c.add(p("user"), "%.40q is not a Unix user name: start with a letter or '_', then letters, digits, '_', '-' or '.' (a final '$' is allowed), at most %d characters",
			j.User, MaxUserNameLen)
	}
	checkImage(&c, p, j)
	if len(j.Selector) > MaxLabels {
		c.add(p("selector"), "has %d entries, more than %d", len(j.Selector), MaxLabels)
	}
	checkLabels(&c, p("labels"), j.Labels)
	dependsOn := checkDependsOn(&c, p, j)
	if len(j.Tasks) == 0 {
		c.add(p("tasks"), "a job needs at least one task")
	}
	out := model.Job{ID: j.ID, Queue: j.Queue, Requestor: j.Requestor, Share: j.Share, Priority: j.Priority,
		Urgent: j.Urgent, SLAGroup: j.SLAGroup, User: j.User, Endpoint: j.Endpoint, Variant: j.Variant, Load: j.Load,
		Selector: model.Selector(j.Selector), MaxSlots: j.MaxSlots, Submitted: submitted,
		Regions: j.Regions, Inputs: j.Inputs, DependsOn: dependsOn}
	if j.Image != nil {
		out.Image = model.ImageSize{Width: j.Image.Width, Height: j.Image.Height}
		out.RegionSize, out.TileSize, out.TileOverlap = j.geometry()
	}
	var running []RunningTask
	counts := map[string]int{} // entry name → count, for stickTo
	for _, t := range j.Tasks {
		counts[t.Name] = t.Count
	}
	members := map[string][]string{}   // entry name → expanded task names
	where := map[string]string{}       // entry or task name → path, for duplicates
	kept := make([]bool, len(j.Tasks)) // entries expanded into tasks (not refused)
	total := 0
	for i, t := range j.Tasks {
		tp := p(fmt.Sprintf("tasks[%d]", i))
		switch {
		case t.Name == "":
			c.add(tp+".name", "required")
			continue
		case !validName(t.Name):
			c.add(tp+".name", "%.40q is not a valid name: %s", t.Name, model.NameRule)
			continue
		}
		if prev, dup := where[t.Name]; dup {
			c.add(tp+".name", "task %q is already defined at %s", t.Name, prev)
			continue
		}
		where[t.Name] = tp
		n := t.Count
		switch {
		case n < 0:
			c.add(tp+".count", "must not be negative")
			n, t.Count = 1, 1
		case n == 0:
			n = 1
		}
		if n > MaxTasksPerJob-total { // not total+n: a count near the largest integer would wrap it
			c.add(tp+".count", "the job would have more than %d tasks", MaxTasksPerJob)
			continue
		}
		total += n
		if t.Running < 0 || t.Running > n {
			c.add(tp+".running", "must be between 0 and the task count %d", n)
		}
		if t.Fails < 0 {
			c.add(tp+".fails", "must not be negative")
		}
		if t.MaxAttempts < 0 {
			c.add(tp+".maxAttempts", "must not be negative")
		}
		switch model.Category(t.Category) {
		case "", model.CategoryInference, model.CategoryTraining, model.CategoryOther:
		default:
			c.add(tp+".category", "unknown category %q (known: inference, training, other)", t.Category)
		}
		if len(t.Needs) > MaxNeeds {
			c.add(tp+".needs", "has %d entries, more than %d", len(t.Needs), MaxNeeds)
		}
		checkResources(&c, tp+".resources", t.Resources)
		names := expandNames(t.Name, t.Count)
		members[t.Name] = names
		kept[i] = true
		stick, stage := stickTo(&c, tp, t, counts), stageOf(t.Name, t.Count)
		for k, name := range names {
			out.Tasks = append(out.Tasks, model.Task{Name: name, Resources: t.Resources.Model(),
				Duration: time.Duration(t.Duration), Category: model.Category(t.Category), MaxAttempts: t.MaxAttempts,
				Model: t.Model, Dataset: t.Dataset, Fails: t.Fails, Stage: stage, StickTo: stick})
			if k < t.Running {
				running = append(running, RunningTask{Name: name, For: time.Duration(t.RunningFor)})
			}
		}
	}
	checkMadeNames(&c, p, j.Tasks, kept)
	// Resolve needs against entry names, then against expanded task names.
	pos, edges := 0, 0
	for i, t := range j.Tasks {
		if !kept[i] {
			continue // refused above; a duplicate must not claim its namesake's tasks
		}
		names := members[t.Name]
		var needs []string
		for k, need := range t.Needs {
			switch ms, ok := members[need]; {
			case need == t.Name:
				c.add(p(fmt.Sprintf("tasks[%d].needs[%d]", i, k)), "task %q needs itself", need)
			case ok:
				needs = append(needs, ms...)
			default:
				c.add(p(fmt.Sprintf("tasks[%d].needs[%d]", i, k)), "no task %q in this job", need)
			}
		}
		if edges += len(needs) * len(names); edges > MaxNeedEdges {
			c.add(p(fmt.Sprintf("tasks[%d].needs", i)), "the job's tasks would wait on more than %d dependencies in all (each of the %d tasks needs %d); put a single task between the groups",
				MaxNeedEdges, len(names), len(needs))
			edges = 0 // report the next offender on its own
		}
		for range names {
			out.Tasks[pos].Needs = needs
			pos++
		}
	}
	j.gangs(&c, p, out.Tasks, kept)
	if len(c.list) == 0 {
		if _, cyc := newEntryGraph(j.Tasks).order(); cyc != "" {
			c.add(p("tasks"), "dependency cycle %s", cyc)
		}
	}
	if err := c.err(); err != nil {
		return Expanded{}, err
	}
	return Expanded{Job: out, Running: running}, nil
}

// checkMadeNames refuses an entry written with a name that count makes
// for another entry (a of count 2 makes a-0 and a-1), naming the written
// entry and the one whose count made the name: the two would be one task
// to the scheduler. Only such a pair can clash, since a made name is its
// entry's name, a hyphen and digits, and entry names are unique.
func checkMadeNames(c *errs, p func(string) string, tasks []Task, kept []bool) {
	var counted map[string]int // entry name → index, for entries of count 2 or more
	for i, t := range tasks {
		if kept[i] && t.Count > 1 {
			if counted == nil {
				counted = map[string]int{}
			}
			counted[t.Name] = i
		}
	}
	if counted == nil {
		return
	}
	for i, t := range tasks {
		if !kept[i] || t.Count > 1 {
			continue
		}
		k := strings.LastIndexByte(t.Name, '-')
		if k <= 0 {
			continue
		}
		m, ok := counted[t.Name[:k]]
		if !ok {
			continue
		}
		// The made names are the numbers below n, zero-padded to the
		// width of n-1.
		n, digits := tasks[m].Count, t.Name[k+1:]
		if len(digits) != len(strconv.Itoa(n-1)) || strings.Trim(digits, "0123456789") != "" {
			continue
		}
		if v, _ := strconv.Atoi(digits); v >= n {
			continue
		}
		names := expandNames(tasks[m].Name, n)
		c.add(p(fmt.Sprintf("tasks[%d].name", i)), "task %q clashes with a name that count makes from %s (%q, count %d, makes %s to %s); rename one",
			t.Name, p(fmt.Sprintf("tasks[%d]", m)), tasks[m].Name, n, names[0], names[n-1])
	}
}

func expandNames(name string, count int) []string {
	if count <= 1 {
		return []string{name}
	}
	width := len(fmt.Sprint(count - 1))
	out := make([]string, count)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%0*d", name, width, i)
	}
	return out
}
