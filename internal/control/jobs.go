package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
)

// Errors the control plane answers with; the API maps them to statuses.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
	ErrInvalid  = errors.New("invalid")
	// ErrForbidden refuses a request its caller may make in general but
	// not with what it sent: a report without its attempt's secret.
	ErrForbidden = errors.New("forbidden")
)

// IDTakenError is the answer to a submission whose job ID is already
// used. It is the same whoever owns that job and whatever state it is in,
// and names nothing but the ID the caller sent: job IDs are global, so the
// refusal itself shows that the ID exists, but it must not tell another
// team anything about the job (docs/security.md).
type IDTakenError struct {
	ID string
}

func (e *IDTakenError) Error() string {
	return fmt.Sprintf("job ID %q is taken: choose another, or leave id out and the server makes one", e.ID)
}

// Is makes errors.Is(err, ErrConflict) hold for an *IDTakenError.
func (e *IDTakenError) Is(target error) bool { return target == ErrConflict }

// Submit validates and stores a job submitted by no one in particular
// (authentication off); see SubmitBy.
func (c *Controller) Submit(ctx context.Context, js spec.Job) (api.Job, error) {
	return c.SubmitBy(ctx, "", js)
}

// SubmitBy validates and stores a job, recording submitter (the name of
// the caller's token) with it, and answers once it is durable.
func (c *Controller) SubmitBy(ctx context.Context, submitter string, js spec.Job) (api.Job, error) {
	out, err := c.SubmitManyBy(ctx, submitter, []spec.Job{js})
	if err != nil {
		return api.Job{}, err
	}
	return out[0].Job, out[0].Err
}

// Submission is the answer for one job of a bulk submission: the job as
// stored, or Err, why nothing of it was stored.
type Submission struct {
	Job api.Job
	Err error
}

// SubmitManyBy validates and stores jobs as SubmitBy does each, and answers
// for each in order once they are durable. The accepted ones are applied in
// one loop round, so they share its cycle and its commit: a script that
// submits thousands of jobs pays for one round, not thousands. A job
// refused (invalid, or its ID taken, by another job of the same call too)
// leaves the others as they are. The error is for the call as a whole (the
// loop stopped, the store refuses writes, ctx ended): then no answer is
// known, as for SubmitBy.
func (c *Controller) SubmitManyBy(ctx context.Context, submitter string, specs []spec.Job) ([]Submission, error) {
	return c.submitMany(ctx, submitter, specs, false, SubmitOptions{})
}

// SubmitCheckedBy is SubmitManyBy for specs that have each just passed
// CheckJob: they are not checked again. The API's routes check a job
// before they authorize it (a spec's own errors come first), and checking
// it twice was a tenth of the CPU a one-task submission costs in the
// server. The configuration may change between the check and the loop's
// round either way: SubmitManyBy's own check runs outside the loop too.
func (c *Controller) SubmitCheckedBy(ctx context.Context, submitter string, specs []spec.Job) ([]Submission, error) {
	return c.submitMany(ctx, submitter, specs, true, SubmitOptions{})
}

// SubmitOptions are how a submission treats what the job will likely meet.
type SubmitOptions struct {
	// Strict refuses a job whose tasks no registered worker can ever run
	// (ErrUnrunnable), rather than accepting it with a warning.
	Strict bool
	// AnySubmitter holds the job to the server's bound on live tasks
	// alone, not to its submitter's (livetasks.go): an admin's submission.
	AnySubmitter bool
}

// SubmitCheckedWith is SubmitCheckedBy with options.
func (c *Controller) SubmitCheckedWith(ctx context.Context, submitter string, specs []spec.Job, opts SubmitOptions) ([]Submission, error) {
	return c.submitMany(ctx, submitter, specs, true, opts)
}

func (c *Controller) submitMany(ctx context.Context, submitter string, specs []spec.Job, checked bool, opts SubmitOptions) ([]Submission, error) {
	specs = slices.Clone(specs) // IDs are filled in below
	refused := make([]error, len(specs))
	why := make([]string, len(specs))
	generated := make([]bool, len(specs))
	// The store is read for the IDs here, not on the loop (ids.go); the
	// epoch is noted before the first read.
	seen := c.gone.epoch.Load()
	accepted := 0
	for i := range specs {
		js := &specs[i]
		if !checked {
			if refused[i] = c.CheckJob(*js); refused[i] != nil {
				continue
			}
		}
		var err error
		if js.ID == "" {
			js.ID, generated[i] = spec.NewJobID(c.cfg.Clock().UTC()), true
		}
		taken, err := c.isStored(ctx, js.ID)
		for ; err == nil && taken && generated[i]; taken, err = c.isStored(ctx, js.ID) {
			js.ID = spec.NewJobID(c.cfg.Clock().UTC())
		}
		if err != nil {
			return nil, err
		}
		if taken {
			refused[i] = c.duplicateOf(ctx, &IDTakenError{ID: js.ID}, c.withQueue(*js), submitter, false)
			continue
		}
		accepted++
		if why[i], err = c.inputsProblem(ctx, *js); err != nil { // I/O, outside the loop; a failure dead-letters the job
			return nil, err
		}
	}
	if accepted == 0 { // nothing for the loop to do
		out := make([]Submission, len(specs))
		for i, err := range refused {
			out[i].Err = err
		}
		return out, nil
	}
	v, err := c.do(ctx, func(t *txn) (any, error) {
		out := make([]Submission, len(specs))
		for i, js := range specs {
			if refused[i] != nil {
				out[i].Err = refused[i]
				continue
			}
			v, err := c.submitWith(ctx, t, js, submitter, why[i], generated[i], seen, opts)
			if err != nil {
				out[i].Err = err
				continue
			}
			out[i].Job = v.(api.Job)
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]Submission), nil
}

// CheckJob validates a job spec against the configuration, without the
// loop: the spec itself, its queue, what the queue's policy requires (a
// priority within the levels, a valid SLA group), its endpoint, and that its
// inputs lie where the server may look (server.inputs.allow), their links
// resolved.
func (c *Controller) CheckJob(js spec.Job) error {
	ex, err := js.Expand("", time.Time{})
	if err != nil {
		return err
	}
	if err := js.CheckRunnable(""); err != nil {
		return err
	}
	named := js.Queue != ""
	if !named {
		js.Queue = c.defaultQueue()
	}
	ex.Job.Queue = js.Queue
	pc, ok := c.queuePolicy(js.Queue)
	switch {
	case !ok && !named:
		// The job did not write the queue it failed on: say that, rather
		// than name a queue the user never wrote.
		return model.FieldErrors{{Path: "queue", Msg: fmt.Sprintf("the job names no queue and this server has no queue %q: give queue: (%s)", js.Queue, strings.Join(c.queueNames(), ", "))}}
	case !ok:
		return model.FieldErrors{{Path: "queue", Msg: fmt.Sprintf("no queue %q (queues: %s)", js.Queue, strings.Join(c.queueNames(), ", "))}}
	}
	if err := policy.CheckJob(pc, &ex.Job); err != nil {
		return model.FieldErrors{model.FieldErrorOf("", err)}
	}
	var bad model.FieldErrors
	for i, in := range js.Inputs {
		err := c.inputs.Permitted(in)
		if err == nil {
			err = c.inputs.PermittedTarget(in) // resolves links on the file system
		}
		if err != nil {
			bad = append(bad, &model.FieldError{Path: fmt.Sprintf("inputs[%d]", i), Msg: fmt.Sprintf("%.200q: %v", in, err), Err: err})
		}
	}
	if len(bad) > 0 {
		return bad
	}
	return c.checkJobEndpoint(ex.Job)
}

// queuePolicy returns the current policy of a queue; SetPolicy changes it
// from the loop while API goroutines read it here.
func (c *Controller) queuePolicy(queue string) (policy.Config, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, q := range c.engCfg.Queues {
		if q.Name == queue {
			return q.Policy, true
		}
	}
	return policy.Config{}, false
}

// SetPriority changes a job's priority (and urgency) at run time; the next
// cycle orders it by the new value.
func (c *Controller) SetPriority(ctx context.Context, id string, priority int, urgent bool) (api.Job, error) {
	if priority < spec.MinPriority || priority > spec.MaxPriority {
		return api.Job{}, model.FieldErrors{{Path: "priority", Msg: fmt.Sprintf("must be a whole number between %d and %d (got %d)",
			spec.MinPriority, spec.MaxPriority, priority)}}
	}
	_, err := c.do(ctx, func(t *txn) (any, error) {
		lj, ok := c.jobs[id]
		if !ok {
			return nil, c.missingOrEnded(ctx, id)
		}
		probe := lj.model
		probe.Priority, probe.Urgent = priority, urgent
		pc, _ := c.queuePolicy(lj.rec.Queue)
		if err := policy.CheckJob(pc, &probe); err != nil {
			return nil, model.FieldErrors{model.FieldErrorOf("", err)}
		}
		if err := c.eng.Apply(engine.SetJobPriority{Job: id, Priority: priority, Urgent: urgent}); err != nil {
			return nil, err
		}
		lj.model.Priority, lj.model.Urgent = priority, urgent
		lj.spec.Priority, lj.spec.Urgent = priority, urgent
		lj.rec.Priority, lj.rec.Urgent = priority, urgent
		t.touchJob(&lj.rec)
		t.event(EventPriorityChanged, id, "", "", model.Reason{}, map[string]any{"priority": priority, "urgent": urgent})
		t.changed = true
		return nil, nil
	})
	if err != nil {
		return api.Job{}, err
	}
	return c.Job(ctx, id)
}

func (c *Controller) queueNames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, q := range c.engCfg.Queues {
		out = append(out, q.Name)
	}
	sort.Strings(out)
	return out
}

// withQueue returns js with its queue named: the default queue when it
// names none, as it is stored.
func (c *Controller) withQueue(js spec.Job) spec.Job {
	if js.Queue == "" {
		js.Queue = c.defaultQueue()
	}
	return js
}

func (c *Controller) defaultQueue() string {
	if len(c.engCfg.Queues) == 1 {
		return c.engCfg.Queues[0].Name
	}
	return spec.DefaultQueue
}

// submit applies a checked job whose ID SubmitManyBy found free in the
// store in epoch seen; a generated ID that turns out taken is replaced.
func (c *Controller) submit(ctx context.Context, t *txn, js spec.Job, submitter, inaccessible string, generated bool, seen uint64) (any, error) {
	return c.submitWith(ctx, t, js, submitter, inaccessible, generated, seen, SubmitOptions{})
}

// submitWith is submit with options (a strict submission).
func (c *Controller) submitWith(ctx context.Context, t *txn, js spec.Job, submitter, inaccessible string, generated bool, seen uint64, opts SubmitOptions) (any, error) {
	js = c.withQueue(js)
	err := c.idFree(ctx, js.ID, true, seen)
	for generated && errors.As(err, new(*IDTakenError)) {
		js.ID = spec.NewJobID(t.now)
		err = c.idFree(ctx, js.ID, false, 0)
	}
	if err != nil {
		return nil, c.duplicateOf(ctx, err, js, submitter, true)
	}
	if inaccessible == "" { // a dead-lettered job is not live
		if err := c.roomFor(submitter, taskCount(js), opts.AnySubmitter); err != nil {
			return nil, err
		}
	}
	lj, err := newLiveJob(js, t.now)
	if err != nil {
		return nil, err
	}
	lj.rec.Submitter = submitter
	others, err := c.otherJobs(ctx, lj.model.DependsOn)
	if err != nil {
		return nil, err
	}
	if inaccessible != "" {
		return c.deadLetterNew(t, lj, inaccessible)
	}
	never := c.eng.NeverRunnableSpec(lj.model) // unrunnable.go
	if opts.Strict && len(never) > 0 {
		return nil, unrunnableError(never)
	}
	if err := c.eng.Apply(engine.SubmitJob{Job: lj.model, Others: others}); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	c.addJob(lj)
	c.admissionSubmitted(t, lj)
	t.changed = true
	if t.created == nil {
		t.created = map[*store.Job]bool{}
	}
	t.created[&lj.rec] = true
	t.touchJob(&lj.rec)
	for _, mt := range lj.model.Tasks {
		t.touchTask(lj.tasks[mt.Name])
	}
	data := map[string]any{"queue": js.Queue, "tasks": len(lj.model.Tasks)}
	if submitter != "" {
		data["submitter"] = submitter
	}
	t.event(EventJobSubmitted, js.ID, "", "", model.Reason{}, data)
	out := c.view(lj, false)
	out.Warnings = unrunnableWarnings(never)
	return out, nil
}

// newLiveJob expands a checked spec into the records the loop keeps.
func newLiveJob(js spec.Job, submitted time.Time) (*liveJob, error) {
	ex, err := js.Expand("", submitted)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(js)
	if err != nil {
		return nil, err
	}
	lj := &liveJob{spec: js, model: ex.Job, tasks: map[string]*store.Task{}, entry: map[string]*spec.Task{},
		rec: store.Job{ID: js.ID, Queue: js.Queue, Share: js.Share, Requestor: js.Requestor, State: "pending",
			Priority: js.Priority, Urgent: js.Urgent, Submitted: submitted, Spec: raw}}
	i := 0
	for k := range js.Tasks {
		entry := &lj.spec.Tasks[k]
		n := max(entry.Count, 1)
		for range n {
			mt := ex.Job.Tasks[i]
			state := model.TaskReady
			if len(mt.Needs) > 0 {
				state = model.TaskBlocked
			}
			lj.tasks[mt.Name] = &store.Task{Job: js.ID, Name: mt.Name, Index: i, State: string(state)}
			lj.entry[mt.Name] = entry
			i++
		}
	}
	return lj, nil
}

// Cancel cancels a job: waiting tasks end, running ones are stopped.
func (c *Controller) Cancel(ctx context.Context, id string) (api.Job, error) {
	_, err := c.do(ctx, func(t *txn) (any, error) {
		if _, ok := c.jobs[id]; !ok {
			return nil, c.missingOrEnded(ctx, id)
		}
		if err := c.eng.Apply(engine.CancelJob{Job: id, At: t.now}); err != nil {
			return nil, err
		}
		t.changed = true
		return nil, nil
	})
	if err != nil {
		return api.Job{}, err
	}
	return c.Job(ctx, id)
}

func (c *Controller) missingOrEnded(ctx context.Context, id string) error {
	j, _, err := c.st.Job(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: job %q", ErrNotFound, id)
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: job %q already ended (%s)", ErrConflict, id, j.State)
}

// Job returns a job with its tasks; a pending task carries its reason.
func (c *Controller) Job(ctx context.Context, id string) (api.Job, error) {
	v, err := c.read(ctx, func(t *txn) (any, error) {
		if lj, ok := c.jobs[id]; ok {
			return c.view(lj, true), nil
		}
		return nil, nil
	})
	if err != nil {
		return api.Job{}, err
	}
	if v != nil {
		return withAttempts(ctx, c.st, v.(api.Job))
	}
	j, tasks, err := c.st.Job(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return api.Job{}, fmt.Errorf("%w: job %q", ErrNotFound, id)
	}
	if err != nil {
		return api.Job{}, err
	}
	return withAttempts(ctx, c.st, c.withDeadLetter(ctx, storedView(j, tasks), j))
}

// view renders a live job; with tasks, each pending task gets the engine's
// reason.
func (c *Controller) view(lj *liveJob, withTasks bool) api.Job {
	out := jobHeader(lj.rec)
	spec := lj.spec
	out.Spec = (*model.JobSpec)(&spec)
	out.Admission = c.admissionView(lj.rec.ID)
	out.HeldBy = c.held[lj.rec.ID]
	out.DependsOn = c.dependencyView(lj.rec.ID, lj.model.DependsOn, true)
	for _, mt := range lj.model.Tasks {
		rec := lj.tasks[mt.Name]
		state := rec.State
		if s, _, ok := c.eng.TaskState(lj.rec.ID, mt.Name); ok {
			state = string(s)
		}
		out.Counts[state]++
		if !withTasks {
			continue
		}
		tv := taskView(*rec)
		tv.State = state
		tv.Needs = mt.Needs
		if r, ok := c.eng.TaskReason(lj.rec.ID, mt.Name); ok {
			tv.Reason = &r
		}
		out.Tasks = append(out.Tasks, tv)
	}
	return out
}

func jobHeader(j store.Job) api.Job {
	out := api.Job{ID: j.ID, Queue: j.Queue, Share: j.Share, Requestor: j.Requestor, Submitter: j.Submitter, Priority: j.Priority,
		Urgent: j.Urgent, State: j.State, Submitted: j.Submitted, Counts: map[string]int{}}
	if !j.Ended.IsZero() {
		e := j.Ended
		out.Ended = &e
	}
	return out
}

func storedView(j store.Job, tasks []store.Task) api.Job {
	out := jobHeader(j)
	var js spec.Job
	if json.Unmarshal(j.Spec, &js) == nil {
		out.Spec = (*model.JobSpec)(&js)
	}
	needs := map[string][]string{}
	if ex, err := js.Expand("", j.Submitted); err == nil {
		for _, mt := range ex.Job.Tasks {
			needs[mt.Name] = mt.Needs
		}
		for _, d := range ex.Job.DependsOn {
			out.DependsOn = append(out.DependsOn, api.JobDependency{Job: d.Job, Type: d.Type})
		}
	}
	for _, r := range tasks {
		out.Counts[r.State]++
		tv := taskView(r)
		tv.Needs = needs[r.Name]
		out.Tasks = append(out.Tasks, tv)
	}
	return out
}

func taskView(r store.Task) api.Task {
	tv := api.Task{Name: r.Name, State: r.State, Attempt: r.Attempt, Fails: r.Fails, Worker: r.Worker,
		ExitCode: r.ExitCode, Result: r.Result, CPUSeconds: r.CPUSeconds, PeakMemory: r.PeakMemory, GPUs: r.GPUs}
	if !r.Started.IsZero() {
		s := r.Started
		tv.Started = &s
	}
	if !r.Ended.IsZero() {
		e := r.Ended
		tv.Ended = &e
	}
	if r.Reason != "" {
		tv.Reason = &model.Reason{Code: r.Reason, Message: r.Message}
	}
	return tv
}

// Jobs lists jobs from the store.
func (c *Controller) Jobs(ctx context.Context, f store.JobFilter) (api.JobList, error) {
	return (&StoreReader{st: c.st}).Jobs(ctx, f)
}
