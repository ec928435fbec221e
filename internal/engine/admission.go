package engine

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/allot-sched/allot/internal/engine/admit"
	"github.com/allot-sched/allot/internal/model"
)

// This file joins the admission stage (package admit, seed 000) to the
// engine: the events that change endpoints and the dead-letter list, the
// admission pass at the start of each cycle, and the queries the control
// plane exports.

// SetEndpoint adds or replaces an endpoint at run time, as when an
// autoscaler changes its instance count. Admitted jobs keep their load;
// the new capacity applies from the next cycle.
type SetEndpoint struct {
	Endpoint model.Endpoint
	At       time.Time
}

// RemoveEndpoint removes an endpoint. New jobs naming it are refused; jobs
// already waiting for it or running on it see a capacity of 0 (one runs at a
// time, by the single-job exception) until it is configured again.
type RemoveEndpoint struct {
	Name string
	At   time.Time
}

// SetThrottling changes the throttling settings at run time.
type SetThrottling struct {
	Settings admit.Settings
	At       time.Time
}

// DeadLetter puts a job on the dead-letter list instead of submitting it:
// the control plane found one of its inputs inaccessible (invalid URL,
// missing credentials, corrupt file). The job takes no capacity and waits on
// the list until it is redriven. Reason is the checker's message. A job
// already on the list gets the new reason.
type DeadLetter struct {
	Job    model.Job
	Reason string
	At     time.Time
	// Restore puts back an entry of the list after a restart: it keeps
	// its time, and is neither counted in the endpoint's metrics nor
	// listed in Decisions.DeadLettered again.
	Restore bool
}

// Redrive submits a dead-lettered job again. The control plane checks the
// job's inputs first, and dead-letters it anew if they still fail. At, when
// set, becomes the job's submission time. If the engine refuses the job, it
// stays on the list and the error says why.
type Redrive struct {
	Job string
	At  time.Time
	// Others describes the jobs it depends on that the engine does not
	// hold, as SubmitJob.Others.
	Others []OtherJob
}

// RestoreThrottled gives a recovered endpoint job that still waits for
// admission the time it was first throttled before the restart: its
// anti-starvation wait counts from then.
type RestoreThrottled struct {
	Job string
	At  time.Time
}

// EndpointError counts a failure the control plane met on an endpoint, such
// as a capacity query that failed, in the endpoint's Errors metric.
type EndpointError struct {
	Endpoint, Variant string
	At                time.Time
}

func (SetEndpoint) event()      {}
func (RemoveEndpoint) event()   {}
func (SetThrottling) event()    {}
func (DeadLetter) event()       {}
func (Redrive) event()          {}
func (RestoreThrottled) event() {}
func (EndpointError) event()    {}

// ErrUnknownEndpoint and ErrUnknownVariant are returned, wrapped with
// ErrInvalid, for a job naming an endpoint or variant that is not
// configured.
var (
	ErrUnknownEndpoint = admit.ErrUnknownEndpoint
	ErrUnknownVariant  = admit.ErrUnknownVariant
)

// DeadLetterEntry is a job on the dead-letter list.
type DeadLetterEntry struct {
	Job    model.Job    `json:"job"`
	Reason model.Reason `json:"reason"`
	At     time.Time    `json:"at"`
}

// AdmissionInfo is the admission record of an endpoint job that has not
// ended: its variant (selected once, at submission), its load and where the
// figure came from, and what admission decided so far.
type AdmissionInfo struct {
	Endpoint    string    `json:"endpoint"`
	Variant     string    `json:"variant"`
	Load        int       `json:"load"`
	LoadSource  string    `json:"loadSource"`
	Admitted    bool      `json:"admitted"`
	Exception   bool      `json:"singleJobException,omitempty"`
	Submitted   time.Time `json:"submitted"`
	ThrottledAt time.Time `json:"throttledAt,omitzero"`
	AdmittedAt  time.Time `json:"admittedAt,omitzero"`
}

// admission is the engine's admission state.
type admission struct {
	ctl  *admit.Controller
	dead map[string]*DeadLetterEntry
	// deadSince lists jobs dead-lettered since the last cycle.
	deadSince []string
}

func (e *Engine) initAdmission(cfg Config) error {
	ctl, err := admit.New(cfg.Admission, cfg.Seed)
	if err != nil {
		return err
	}
	e.adm = admission{ctl: ctl, dead: map[string]*DeadLetterEntry{}}
	return nil
}

// applyAdmission applies the admission events; handled is false for any
// other event.
func (e *Engine) applyAdmission(ev Event) (handled bool, err error) {
	ctl := e.adm.ctl
	switch ev := ev.(type) {
	case SetEndpoint:
		if err := ctl.SetEndpoint(ev.Endpoint); err != nil {
			return true, fmt.Errorf("endpoint %q: %w: %w", ev.Endpoint.Name, ErrInvalid, err)
		}
		e.advance(ev.At)
	case RemoveEndpoint:
		if err := ctl.RemoveEndpoint(ev.Name); err != nil {
			return true, err
		}
		e.advance(ev.At)
	case SetThrottling:
		if err := ctl.SetSettings(ev.Settings); err != nil {
			return true, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		e.advance(ev.At)
	case DeadLetter:
		return true, e.deadLetter(ev)
	case Redrive:
		return true, e.redrive(ev)
	case RestoreThrottled:
		if !ctl.RestoreThrottledAt(ev.Job, ev.At) {
			return true, fmt.Errorf("%w %q waiting for admission", ErrUnknownJob, ev.Job)
		}
	case EndpointError:
		if !ctl.RecordError(ev.Endpoint, ev.Variant) {
			return true, fmt.Errorf("%w %q", ErrUnknownEndpoint, ev.Endpoint)
		}
		e.advance(ev.At)
	default:
		return false, nil
	}
	return true, nil
}

func (e *Engine) deadLetter(ev DeadLetter) error {
	id := ev.Job.ID
	if id == "" {
		return fmt.Errorf("job: id: %w: required", ErrInvalid)
	}
	if _, live := e.jobs[id]; live {
		return fmt.Errorf("job %q: %w", id, ErrDuplicate)
	}
	at := e.advance(ev.At)
	if !ev.At.IsZero() {
		at = ev.At // a restored entry keeps its time, older than the clock
	}
	msg := ev.Reason
	if msg == "" {
		msg = "an input is inaccessible"
	}
	job := ev.Job
	job.Tasks = slices.Clone(job.Tasks)
	e.adm.dead[id] = &DeadLetterEntry{Job: job, At: at,
		Reason: model.Because(model.ReasonInputInaccessible, "dead-lettered at validation: %s", msg)}
	if !ev.Restore {
		e.adm.deadSince = append(e.adm.deadSince, id)
		e.adm.ctl.RecordDeadLetter(job)
	}
	return nil
}

func (e *Engine) redrive(ev Redrive) error {
	d, ok := e.adm.dead[ev.Job]
	if !ok {
		return fmt.Errorf("%w %q on the dead-letter list", ErrUnknownJob, ev.Job)
	}
	job := d.Job
	if !ev.At.IsZero() {
		job.Submitted = ev.At
	}
	// Off the list first: submit refuses an ID the list holds.
	delete(e.adm.dead, ev.Job)
	if err := e.submit(job, ev.Others); err != nil {
		e.adm.dead[ev.Job] = d
		return err
	}
	return nil
}

// checkAdmission refuses a job naming an endpoint or variant that is not
// configured: the error wraps a *model.FieldError on the job's field, which
// wraps ErrInvalid and, for a name that is not configured,
// ErrUnknownEndpoint or ErrUnknownVariant.
func (e *Engine) checkAdmission(spec *model.Job) error {
	if spec.Endpoint == "" {
		if spec.Variant != "" {
			return invalidJobField(spec.ID, &model.FieldError{Path: "variant", Msg: "a variant needs an endpoint"})
		}
		return nil
	}
	if fe := e.adm.ctl.Check(*spec); fe != nil {
		return invalidJobField(spec.ID, fe)
	}
	return nil
}

// invalidJobField is the error refusing job id for the problem fe: fe, its
// message marked as ErrInvalid ("job "j": endpoint: invalid: unknown
// endpoint "x""), wrapping ErrInvalid and fe's cause.
func invalidJobField(id string, fe *model.FieldError) error {
	return fmt.Errorf("job %q: %w", id, &model.FieldError{
		Path: fe.Path,
		Msg:  fmt.Sprintf("%v: %s", ErrInvalid, fe.Msg),
		Err:  errors.Join(ErrInvalid, fe.Err),
	})
}

// enqueue starts admission of a committed job: one without an endpoint is
// admitted at once; an endpoint job waits for the next cycle's admission
// pass.
func (e *Engine) enqueue(j *job) {
	if j.spec.Endpoint == "" {
		e.admit(j)
		return
	}
	e.adm.ctl.Enqueue(*j.spec, j.seq, e.now)
	if n := j.tally.waiting; n > 0 {
		// A job that waited for other jobs has its tasks counted
		// already: tally tells the admission stage only of changes.
		e.adm.ctl.SetWaitingTasks(j.id, n)
	}
}

// admissionPass admits the endpoint jobs the capacity check lets through;
// it runs at the start of each cycle, before allocation.
func (e *Engine) admissionPass(now time.Time, d *Decisions) {
	if len(e.adm.deadSince) > 0 {
		d.DeadLettered, e.adm.deadSince = e.adm.deadSince, nil
	}
	admitted, throttled := e.adm.ctl.Pass(now)
	for _, r := range admitted {
		if j, ok := e.jobs[r.ID]; ok {
			e.admit(j)
			d.Admitted = append(d.Admitted, r.ID)
		}
	}
	for _, r := range throttled {
		reason, _ := e.adm.ctl.Reason(r.ID)
		d.Throttled = append(d.Throttled, Throttle{Job: r.ID, Reason: reason})
	}
}

// releaseAdmission frees an ended job's load, or takes a job that never
// got admitted out of the admission queue.
func (e *Engine) releaseAdmission(j *job) {
	if j.spec.Endpoint != "" {
		e.adm.ctl.Release(j.id)
	}
}

// admitForRestore admits the job of a task found running when the state is
// restored: it was admitted before, so it holds its load again without a
// capacity check.
func (e *Engine) admitForRestore(t *task) {
	j := t.job
	if j.admitted || j.spec.Endpoint == "" {
		return
	}
	if e.adm.ctl.ForceAdmit(j.id, e.now) {
		e.admit(j)
	}
}

// admissionReason explains why a job that is not admitted waits.
func (e *Engine) admissionReason(j *job) model.Reason {
	if r, ok := e.adm.ctl.Reason(j.id); ok {
		return r
	}
	if j.admitReason.Code != "" {
		return j.admitReason
	}
	return model.Because(model.ReasonNotAdmitted, "job %q waits for admission", j.id)
}

// Endpoints returns the configured endpoints, by name.
func (e *Engine) Endpoints() []model.Endpoint { return e.adm.ctl.Endpoints() }

// Throttling returns the throttling settings in force.
func (e *Engine) Throttling() admit.Settings { return e.adm.ctl.Settings() }

// EndpointStats returns the scheduling metrics of every endpoint and
// variant, by name.
func (e *Engine) EndpointStats() []admit.EndpointStats { return e.adm.ctl.Stats() }

// DeadLetters lists the dead-letter list, oldest first.
func (e *Engine) DeadLetters() []DeadLetterEntry {
	out := make([]DeadLetterEntry, 0, len(e.adm.dead))
	for _, d := range e.adm.dead {
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b DeadLetterEntry) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return cmp.Compare(a.Job.ID, b.Job.ID)
	})
	return out
}

// DeadLettered returns a job's entry on the dead-letter list.
func (e *Engine) DeadLettered(jobID string) (DeadLetterEntry, bool) {
	d, ok := e.adm.dead[jobID]
	if !ok {
		return DeadLetterEntry{}, false
	}
	return *d, true
}

// Admission returns the admission record of an endpoint job that has not
// ended.
func (e *Engine) Admission(jobID string) (AdmissionInfo, bool) {
	r, ok := e.adm.ctl.Job(jobID)
	if !ok {
		return AdmissionInfo{}, false
	}
	return AdmissionInfo{Endpoint: r.Endpoint, Variant: r.Variant, Load: r.Load, LoadSource: r.LoadSource,
		Admitted: r.Admitted(), Exception: r.Exception, Submitted: r.Submitted, ThrottledAt: r.ThrottledAt,
		AdmittedAt: r.AdmittedAt}, true
}
