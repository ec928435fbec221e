package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/config"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/admit"
	"github.com/allot-sched/allot/internal/inputs"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
)

// This file is the server side of admission against endpoint capacity
// (seed 000; docs/endpoints.md): endpoints and throttling settings changed
// at run time and kept across restarts, input checks and the dead-letter
// list, the variant drawn at submission, and the admission events.

// JobDeadLettered is the stored state of a job on the dead-letter list. It is
// not an end state: the job is rebuilt onto the list after a restart, and a
// redrive submits it again.
const JobDeadLettered = "dead_lettered"

// JobStates are the states a stored job can be in, in the order a job goes
// through them: the API refuses a filter naming any other (a typo would
// otherwise answer an empty list).
var JobStates = []string{"pending", "running", "succeeded", "failed", "cancelled", JobDeadLettered}

// A run-time change (store.ThrottlingKey, store.EndpointsKey) is stored
// with the configuration it replaced, so that a restart keeps it only while
// the configuration (file and environment) still says what it said then: an
// operator who edits the file or the environment afterwards gets what they
// wrote.

// storedThrottling is the value under store.ThrottlingKey.
type storedThrottling struct {
	Config admit.Settings `json:"config"`
	Value  admit.Settings `json:"value"`
}

// storedEndpoint is one entry of the map under store.EndpointsKey: the
// definition set at run time (nil: removed) and the configured one it
// replaced (nil: none was configured).
type storedEndpoint struct {
	Config *model.Endpoint `json:"config"`
	Value  *model.Endpoint `json:"value"`
}

// storedDeadLetter is the value under deadLetterKey.
type storedDeadLetter struct {
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// ---- Reading ----

// Endpoints lists the endpoints with their configuration and the metrics
// of the last cycle, and the throttling settings. It takes no loop round.
func (c *Controller) Endpoints() api.EndpointList {
	snap := c.Snapshot()
	c.mu.Lock()
	defs, settings := c.engCfg.Admission.Endpoints, c.engCfg.Admission.Settings
	c.mu.Unlock()
	byName := map[string]*api.Endpoint{}
	var names []string
	get := func(name string) *api.Endpoint {
		if e, ok := byName[name]; ok {
			return e
		}
		e := &api.Endpoint{Name: name}
		byName[name] = e
		names = append(names, name)
		return e
	}
	for _, d := range defs {
		se := specEndpoint(d)
		get(d.Name).Config = &se
	}
	for i := range snap.Endpoints {
		get(snap.Endpoints[i].Endpoint).Stats = apiEndpointStats(snap.Endpoints[i])
	}
	slices.Sort(names)
	out := api.EndpointList{At: snap.At, Throttling: specThrottling(settings), Endpoints: make([]api.Endpoint, 0, len(names))}
	for _, n := range names {
		out.Endpoints = append(out.Endpoints, *byName[n])
	}
	return out
}

// Throttling returns the throttling settings in force, every field set.
func (c *Controller) Throttling() spec.Throttling {
	c.mu.Lock()
	defer c.mu.Unlock()
	return specThrottling(c.engCfg.Admission.Settings)
}

// specEndpoint converts an engine endpoint to the configuration block.
func specEndpoint(e model.Endpoint) spec.Endpoint {
	out := spec.Endpoint{Name: e.Name, Type: string(e.Type), MaxConcurrency: e.MaxConcurrency, Instances: e.Instances,
		InstanceConcurrency: e.InstanceConcurrency}
	for _, v := range e.Variants {
		w := v.Weight
		out.Variants = append(out.Variants, spec.Variant{Name: v.Name, Weight: &w, MaxConcurrency: v.MaxConcurrency,
			Instances: v.Instances, InstanceConcurrency: v.InstanceConcurrency})
	}
	return out
}

// specThrottling converts settings to the configuration block, every field
// set, so that a client can change one field and send the block back.
func specThrottling(s admit.Settings) spec.Throttling {
	enabled, pct, wait := s.Enabled, s.CapacityTargetPercentage, spec.Duration(s.StarvationWait)
	return spec.Throttling{ThrottlingEnabled: &enabled, CapacityTargetPercentage: &pct,
		DefaultInstanceConcurrency: s.DefaultInstanceConcurrency, DefaultHTTPEndpointConcurrency: s.DefaultHTTPEndpointConcurrency,
		TileWorkersPerInstance: s.TileWorkersPerInstance, StarvationWait: &wait, AdmissionsPerCycle: s.AdmissionsPerCycle}
}

// fieldErrors turns admission problems into field errors relative to the
// request body, dropping prefix ("endpoints[0].", "throttling.").
func fieldErrors(ps model.FieldErrors, prefix string) error {
	out := make(model.FieldErrors, 0, len(ps))
	for _, p := range ps {
		c := *p
		c.Path = strings.TrimPrefix(p.Path, prefix)
		out = append(out, &c)
	}
	return out.Err()
}

// checkJobEndpoint refuses a job naming an endpoint or variant that is not
// configured now: endpoints change at run time, so the configuration file
// alone cannot say.
func (c *Controller) checkJobEndpoint(j model.Job) error {
	if j.Endpoint == "" && j.Variant == "" {
		return nil
	}
	c.mu.Lock()
	defs := c.engCfg.Admission.Endpoints
	c.mu.Unlock()
	s := spec.Scheduling{Endpoints: make([]spec.Endpoint, len(defs))}
	for i, d := range defs {
		s.Endpoints[i] = specEndpoint(d)
	}
	return s.CheckJobEndpoint("", j)
}

// ---- Changing endpoints and settings ----

// SetEndpoint adds or replaces an endpoint at run time (an autoscaler that
// changed the instance count, an operator shifting variant weights). The
// next cycle admits against the new capacity; the change is stored.
func (c *Controller) SetEndpoint(ctx context.Context, name string, e spec.Endpoint) (api.Endpoint, error) {
	if e.Name == "" {
		e.Name = name
	}
	if e.Name != name {
		return api.Endpoint{}, model.FieldErrors{{Path: "name", Msg: fmt.Sprintf("%q differs from the endpoint %q of the path", e.Name, name)}}
	}
	m := e.Model()
	if err := fieldErrors(admit.Config{Endpoints: []model.Endpoint{m}}.Problems(), "endpoints[0]."); err != nil {
		return api.Endpoint{}, err
	}
	_, err := c.do(ctx, func(t *txn) (any, error) {
		if defs := c.eng.Endpoints(); len(defs) >= admit.MaxEndpoints &&
			!slices.ContainsFunc(defs, func(d model.Endpoint) bool { return d.Name == name }) {
			return nil, model.FieldErrors{{Path: "name", Msg: fmt.Sprintf("the server has %d endpoints, the most it keeps; remove one first", len(defs))}}
		}
		if err := c.eng.Apply(engine.SetEndpoint{Endpoint: m, At: t.now}); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		c.endpointsChanged(t)
		t.event(EventEndpointChanged, "", "", "", model.Reason{Code: string(m.Type), Message: "endpoint " + name}, specEndpoint(m))
		return nil, nil
	})
	if err != nil {
		return api.Endpoint{}, err
	}
	return c.endpoint(name), nil
}

// RemoveEndpoint removes an endpoint at run time. New jobs naming it are
// refused; jobs already using it see a capacity of 0 and run one at a time
// until they end.
func (c *Controller) RemoveEndpoint(ctx context.Context, name string) error {
	_, err := c.do(ctx, func(t *txn) (any, error) {
		if err := c.eng.Apply(engine.RemoveEndpoint{Name: name, At: t.now}); err != nil {
			if errors.Is(err, admit.ErrUnknownEndpoint) {
				return nil, fmt.Errorf("%w: endpoint %q", ErrNotFound, name)
			}
			return nil, err
		}
		c.endpointsChanged(t)
		t.event(EventEndpointRemoved, "", "", "", model.Reason{Message: "endpoint " + name}, nil)
		return nil, nil
	})
	return err
}

func (c *Controller) endpoint(name string) api.Endpoint {
	for _, e := range c.Endpoints().Endpoints {
		if e.Name == name {
			return e
		}
	}
	return api.Endpoint{Name: name}
}

// endpointsChanged publishes the engine's endpoints to the readers and
// stores every difference from the configuration. It runs on the loop.
func (c *Controller) endpointsChanged(t *txn) {
	defs := c.eng.Endpoints()
	c.mu.Lock()
	c.engCfg.Admission.Endpoints = defs
	c.mu.Unlock()
	now := map[string]model.Endpoint{}
	for _, d := range defs {
		now[d.Name] = d
	}
	diff := map[string]storedEndpoint{}
	configured := map[string]bool{}
	for _, ce := range c.cfg.Scheduling.Endpoints {
		cm := ce.Model()
		configured[cm.Name] = true
		d, ok := now[cm.Name]
		switch {
		case !ok:
			diff[cm.Name] = storedEndpoint{Config: &cm}
		case !sameJSON(&d, &cm):
			diff[cm.Name] = storedEndpoint{Config: &cm, Value: &d}
		}
	}
	for name, d := range now {
		if !configured[name] {
			diff[name] = storedEndpoint{Value: &d}
		}
	}
	raw, _ := json.Marshal(diff)
	t.kv(store.EndpointsKey, raw)
	t.changed = true
}

// sameJSON compares two configuration values by their stored form (nil
// pointers compare as null), which is how a restart compares them.
func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// SetThrottling replaces the throttling settings at run time. Omitted
// fields take the seed's defaults, as in the configuration file; the change
// is stored.
func (c *Controller) SetThrottling(ctx context.Context, th spec.Throttling) (spec.Throttling, error) {
	s := config.ThrottlingSettings(th)
	if err := fieldErrors(admit.Config{Settings: s}.Problems(), "throttling."); err != nil {
		return spec.Throttling{}, err
	}
	_, err := c.do(ctx, func(t *txn) (any, error) {
		if err := c.eng.Apply(engine.SetThrottling{Settings: s, At: t.now}); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		now := c.eng.Throttling()
		c.mu.Lock()
		c.engCfg.Admission.Settings = now
		c.mu.Unlock()
		raw, _ := json.Marshal(storedThrottling{Config: config.ThrottlingSettings(c.cfg.Scheduling.Throttling), Value: now})
		t.kv(store.ThrottlingKey, raw)
		view := specThrottling(now)
		t.event(EventThrottlingChanged, "", "", "", model.Reason{Message: fmt.Sprintf("throttling enabled %t, capacity target percentage %g",
			now.Enabled, now.CapacityTargetPercentage)}, view)
		t.changed = true
		return nil, nil
	})
	if err != nil {
		return spec.Throttling{}, err
	}
	return c.Throttling(), nil
}

// ---- Submission: input checks, dead letters, the chosen variant ----

// inputsProblem checks a job's inputs outside the loop and says why one is
// inaccessible ("" when all can be read). A request that ended meanwhile
// is an error, not an inaccessible input.
func (c *Controller) inputsProblem(ctx context.Context, js spec.Job) (string, error) {
	why := inputs.Problem(ctx, c.inputs, js.Inputs)
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return why, nil
}

// deadLetterNew stores a new job on the dead-letter list instead of
// submitting it: it takes no capacity until it is redriven.
func (c *Controller) deadLetterNew(t *txn, lj *liveJob, why string) (any, error) {
	if err := c.eng.Apply(engine.DeadLetter{Job: lj.model, Reason: why, At: t.now}); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	lj.rec.State = JobDeadLettered
	if t.created == nil {
		t.created = map[*store.Job]bool{}
	}
	t.created[&lj.rec] = true
	t.touchJob(&lj.rec)
	r := c.recordDeadLetter(t, lj.rec.ID, why)
	t.changed = true
	out := jobHeader(lj.rec)
	out.Spec = (*model.JobSpec)(&lj.spec)
	out.Admission = &api.Admission{Endpoint: lj.model.Endpoint, Variant: lj.model.Variant, State: api.AdmissionDeadLettered, Reason: &r}
	return out, nil
}

// recordDeadLetter stores a dead letter's reason and logs the event; it
// returns the reason the engine gave the entry.
func (c *Controller) recordDeadLetter(t *txn, id, why string) model.Reason {
	r := model.Because(model.ReasonInputInaccessible, "dead-lettered at validation: %s", why)
	if d, ok := c.eng.DeadLettered(id); ok {
		r = d.Reason
	}
	raw, _ := json.Marshal(storedDeadLetter{Reason: why, At: t.now})
	t.kv(store.JobDeadLetterKey(id), raw)
	t.event(EventJobDeadLettered, id, "", "", r, nil)
	return r
}

// admissionSubmitted stores the variant the engine chose for an endpoint
// job that named none, so a restart submits it with that variant instead
// of drawing again.
func (c *Controller) admissionSubmitted(t *txn, lj *liveJob) {
	if lj.model.Endpoint == "" || lj.spec.Variant != "" {
		return
	}
	if info, ok := c.eng.Admission(lj.rec.ID); ok {
		raw, _ := json.Marshal(info.Variant)
		t.kv(store.JobVariantKey(lj.rec.ID), raw)
	}
}

// admissionView is what the job view says about a live job's admission;
// nil for a job without an endpoint.
func (c *Controller) admissionView(id string) *api.Admission {
	info, ok := c.eng.Admission(id)
	if !ok {
		return nil
	}
	out := &api.Admission{Endpoint: info.Endpoint, Variant: info.Variant, Load: info.Load, LoadSource: info.LoadSource,
		State: api.AdmissionWaiting, SingleJobException: info.Exception}
	if !info.ThrottledAt.IsZero() {
		at := info.ThrottledAt
		out.ThrottledSince, out.State = &at, api.AdmissionThrottled
	}
	if info.Admitted {
		at := info.AdmittedAt
		out.AdmittedAt, out.State = &at, api.AdmissionAdmitted
	}
	return out
}

// withDeadLetter adds the admission state of a stored job that is on the
// dead-letter list to its view.
func (c *Controller) withDeadLetter(ctx context.Context, v api.Job, j store.Job) api.Job {
	return withDeadLetter(ctx, c.st, v, j)
}

func withDeadLetter(ctx context.Context, st store.Store, v api.Job, j store.Job) api.Job {
	if j.State != JobDeadLettered {
		return v
	}
	a := &api.Admission{State: api.AdmissionDeadLettered}
	if v.Spec != nil {
		a.Endpoint, a.Variant = v.Spec.Endpoint, v.Spec.Variant
	}
	if raw, err := st.KV(ctx, store.JobDeadLetterKey(j.ID)); err == nil {
		var d storedDeadLetter
		if json.Unmarshal(raw, &d) == nil {
			r := model.Because(model.ReasonInputInaccessible, "dead-lettered at validation: %s", d.Reason)
			a.Reason = &r
		}
	}
	v.Admission = a
	return v
}

// ---- Dead letters ----

// DeadLetters lists the dead-letter list, oldest first.
func (c *Controller) DeadLetters(ctx context.Context) (api.DeadLetterList, error) {
	v, err := c.read(ctx, func(*txn) (any, error) {
		ds := c.eng.DeadLetters()
		out := api.DeadLetterList{DeadLetters: make([]api.DeadLetter, 0, len(ds))}
		for _, d := range ds {
			out.DeadLetters = append(out.DeadLetters, api.DeadLetter{Job: d.Job.ID, Queue: d.Job.Queue, Share: d.Job.Share,
				Endpoint: d.Job.Endpoint, Variant: d.Job.Variant, Inputs: d.Job.Inputs, Reason: d.Reason, At: d.At})
		}
		return out, nil
	})
	if err != nil {
		return api.DeadLetterList{}, err
	}
	return v.(api.DeadLetterList), nil
}

// Redrive checks a dead-lettered job's inputs again and submits it, or
// puts it back on the list with the new reason.
func (c *Controller) Redrive(ctx context.Context, id string) (api.Redriven, error) {
	rec, _, err := c.st.Job(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return api.Redriven{}, fmt.Errorf("%w: job %q", ErrNotFound, id)
	}
	if err != nil {
		return api.Redriven{}, err
	}
	if rec.State != JobDeadLettered {
		return api.Redriven{}, fmt.Errorf("%w: job %q is %s, not dead-lettered", ErrConflict, id, rec.State)
	}
	var js spec.Job
	if err := json.Unmarshal(rec.Spec, &js); err != nil {
		return api.Redriven{}, fmt.Errorf("stored job %q: %w", id, err)
	}
	why, err := c.inputsProblem(ctx, js)
	if err != nil {
		return api.Redriven{}, err
	}
	v, err := c.do(ctx, func(t *txn) (any, error) {
		d, ok := c.eng.DeadLettered(id)
		if !ok {
			return nil, fmt.Errorf("%w: job %q is no longer on the dead-letter list", ErrConflict, id)
		}
		if why != "" {
			if err := c.eng.Apply(engine.DeadLetter{Job: d.Job, Reason: why, At: t.now}); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
			}
			r := c.recordDeadLetter(t, id, why)
			t.changed = true
			out := jobHeader(rec)
			out.Spec = (*model.JobSpec)(&js)
			out.Admission = &api.Admission{Endpoint: d.Job.Endpoint, Variant: d.Job.Variant, State: api.AdmissionDeadLettered, Reason: &r}
			return api.Redriven{Job: out}, nil
		}
		if err := c.roomFor(rec.Submitter, taskCount(js), false); err != nil {
			return nil, err
		}
		lj, err := newLiveJob(js, t.now)
		if err != nil {
			return nil, err
		}
		lj.rec = rec
		lj.rec.State, lj.rec.Submitted = "pending", t.now
		others, err := c.otherJobs(ctx, lj.model.DependsOn)
		if err != nil {
			return nil, err
		}
		if err := c.eng.Apply(engine.Redrive{Job: id, At: t.now, Others: others}); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		c.addJob(lj)
		t.touchJob(&lj.rec)
		for _, mt := range lj.model.Tasks {
			t.touchTask(lj.tasks[mt.Name])
		}
		t.kv(store.JobDeadLetterKey(id), nil)
		c.admissionSubmitted(t, lj)
		t.event(EventJobRedriven, id, "", "", model.Reason{}, map[string]any{"queue": lj.rec.Queue, "tasks": len(lj.model.Tasks)})
		t.changed = true
		return api.Redriven{Redriven: true, Job: c.view(lj, false)}, nil
	})
	if err != nil {
		return api.Redriven{}, err
	}
	return v.(api.Redriven), nil
}

// ---- Decisions ----

// recordAdmission logs the cycle's admission verdicts as events, and
// forgets the stored variant of endpoint jobs that ended. Dead letters are
// logged where they are applied (submission, redrive), which knows the
// record and the reason.
func (c *Controller) recordAdmission(t *txn, d *engine.Decisions) {
	if len(d.Admitted) > 0 {
		stats := map[[2]string]admit.VariantStats{}
		for _, es := range c.eng.EndpointStats() {
			for _, vs := range es.Variants {
				stats[[2]string{es.Endpoint, vs.Variant}] = vs
			}
		}
		for _, id := range d.Admitted {
			info, ok := c.eng.Admission(id)
			if !ok {
				continue
			}
			vs := stats[[2]string{info.Endpoint, info.Variant}]
			msg := fmt.Sprintf("%s: admitted, job load %d; in use now %d of target %d", where(info.Endpoint, info.Variant), info.Load, vs.Load, vs.TargetCapacity)
			if info.Exception {
				msg = fmt.Sprintf("%s: admitted by the single-job exception, job load %d exceeds the available capacity and no other job runs; target %d",
					where(info.Endpoint, info.Variant), info.Load, vs.TargetCapacity)
			}
			if !info.ThrottledAt.IsZero() {
				t.kv(store.JobThrottledKey(id), nil) // its wait is over
			}
			t.event(EventJobAdmitted, id, "", "", model.Reason{Message: msg},
				map[string]any{"endpoint": info.Endpoint, "variant": info.Variant, "load": info.Load, "singleJobException": info.Exception})
		}
	}
	for _, th := range d.Throttled {
		data := map[string]any{}
		if info, ok := c.eng.Admission(th.Job); ok {
			data = map[string]any{"endpoint": info.Endpoint, "variant": info.Variant, "load": info.Load}
			// Kept so that a restart does not restart its starvation wait;
			// after a restart this is the restored, earlier time again.
			raw, _ := json.Marshal(info.ThrottledAt)
			t.kv(store.JobThrottledKey(th.Job), raw)
		}
		t.event(EventJobThrottled, th.Job, "", "", th.Reason, data)
	}
	for _, je := range d.JobsDone {
		lj, ok := c.jobs[je.Job]
		if !ok || lj.model.Endpoint == "" {
			continue
		}
		if lj.spec.Variant == "" {
			t.kv(store.JobVariantKey(je.Job), nil)
		}
		if info, ok := c.eng.Admission(je.Job); !ok || !info.Admitted {
			t.kv(store.JobThrottledKey(je.Job), nil) // ended (cancelled) while it waited
		}
	}
}

func where(endpoint, variant string) string {
	if variant == "" {
		return fmt.Sprintf("endpoint %q", endpoint)
	}
	return fmt.Sprintf("endpoint %q variant %q", endpoint, variant)
}

// ---- Recovery ----

// admissionRecovery rebuilds the admission state after a restart: the
// stored run-time changes first, then each job (dead letters back on the
// list, endpoint jobs with their variant), then what must wait for the jobs.
type admissionRecovery struct {
	c   *Controller
	ctx context.Context
	now time.Time
	// removed lists endpoints removed at run time. They are removed only
	// after the jobs that still use them are back, as a removed endpoint
	// refuses new jobs.
	removed []string
	// restore holds, per endpoint given a stand-in definition so that a
	// recovered job naming it (or a variant it no longer has) is accepted,
	// the real definition to put back (nil: none, remove it).
	restore map[string]*model.Endpoint
}

// recoverAdmission applies the stored run-time changes of throttling and
// endpoints that still apply to the configuration.
func (c *Controller) recoverAdmission(ctx context.Context, now time.Time, q *quarantine) (*admissionRecovery, error) {
	ra := &admissionRecovery{c: c, ctx: ctx, now: now, restore: map[string]*model.Endpoint{}}
	if raw, err := c.st.KV(ctx, store.ThrottlingKey); err == nil {
		var st storedThrottling
		if err := json.Unmarshal(raw, &st); err != nil {
			q.setting(store.ThrottlingKey, raw, err)
		} else if cfg := config.ThrottlingSettings(c.cfg.Scheduling.Throttling); sameJSON(st.Config, cfg) {
			if err := c.eng.Apply(engine.SetThrottling{Settings: st.Value, At: now}); err != nil {
				q.setting(store.ThrottlingKey, raw, err)
			}
		} else {
			c.cfg.Logger.Info("throttling settings changed at run time are dropped: the configuration changed since", "config", cfg)
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	raw, err := c.st.KV(ctx, store.EndpointsKey)
	if errors.Is(err, store.ErrNotFound) {
		return ra, nil
	}
	if err != nil {
		return nil, err
	}
	var changes map[string]storedEndpoint
	if err := json.Unmarshal(raw, &changes); err != nil {
		q.setting(store.EndpointsKey, raw, err)
		return ra, nil
	}
	configured := map[string]*model.Endpoint{}
	for _, e := range c.cfg.Scheduling.Endpoints {
		m := e.Model()
		configured[m.Name] = &m
	}
	names := make([]string, 0, len(changes))
	for n := range changes {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		ch := changes[n]
		if !sameJSON(ch.Config, configured[n]) {
			c.cfg.Logger.Info("endpoint changed at run time is reset: the configuration changed since", "endpoint", n)
			continue
		}
		if ch.Value == nil {
			ra.removed = append(ra.removed, n)
			continue
		}
		if err := c.eng.Apply(engine.SetEndpoint{Endpoint: *ch.Value, At: now}); err != nil {
			// The others stay; this one is set aside.
			one, _ := json.Marshal(ch)
			q.entry(store.EndpointsKey, n, one, err)
			delete(changes, n)
			kept, _ := json.Marshal(changes)
			q.kv(store.EndpointsKey, kept)
		}
	}
	return ra, nil
}

// deadLetter puts a stored dead-lettered job back on the list; it reports
// whether j was one.
func (ra *admissionRecovery) deadLetter(j store.Job, js spec.Job) (bool, error) {
	if j.State != JobDeadLettered {
		return false, nil
	}
	lj, err := newLiveJob(js, j.Submitted)
	if err != nil {
		return true, err
	}
	d := storedDeadLetter{Reason: "an input is inaccessible", At: j.Submitted}
	if raw, err := ra.c.st.KV(ra.ctx, store.JobDeadLetterKey(j.ID)); err == nil {
		if err := json.Unmarshal(raw, &d); err != nil {
			return true, fmt.Errorf("dead-letter reason: %w", err)
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return true, storeFailure{err}
	}
	return true, ra.c.eng.Apply(engine.DeadLetter{Job: lj.model, Reason: d.Reason, At: d.At, Restore: true})
}

// prepare gives a recovered endpoint job the variant it was given at
// submission, and makes sure the engine accepts it: an endpoint removed, or
// a variant dropped, while the job waited or ran gets a stand-in until the
// jobs are back, and then capacity 0 as before the restart.
func (ra *admissionRecovery) prepare(lj *liveJob) error {
	j := &lj.model
	if j.Endpoint == "" {
		return nil
	}
	if j.Variant == "" {
		raw, err := ra.c.st.KV(ra.ctx, store.JobVariantKey(j.ID))
		switch {
		case err == nil:
			if err := json.Unmarshal(raw, &j.Variant); err != nil {
				return fmt.Errorf("stored variant: %w", err)
			}
		case !errors.Is(err, store.ErrNotFound):
			return storeFailure{err}
		}
	}
	var def *model.Endpoint
	for _, e := range ra.c.eng.Endpoints() {
		if e.Name == j.Endpoint {
			def = &e
			break
		}
	}
	if def != nil && (j.Variant == "" || slices.ContainsFunc(admit.Variants(*def), func(v model.Variant) bool { return v.Name == j.Variant })) {
		return nil
	}
	if _, ok := ra.restore[j.Endpoint]; !ok {
		if def != nil {
			orig := *def
			orig.Variants = slices.Clone(def.Variants)
			ra.restore[j.Endpoint] = &orig
		} else {
			ra.restore[j.Endpoint] = nil
		}
	}
	stand := model.Endpoint{Name: j.Endpoint, Type: model.EndpointHTTP}
	if def != nil {
		stand = *def
		stand.Variants = slices.Clone(def.Variants)
		if len(stand.Variants) == 0 {
			// The variant-less definition has one implicit variant; it
			// cannot sit beside a named one, so the job draws again.
			ra.c.cfg.Logger.Warn("recovered job's variant is gone from its endpoint; it gets the endpoint's only variant", "job", j.ID, "variant", j.Variant)
			j.Variant = ""
			return nil
		}
	}
	if j.Variant != "" {
		v := model.Variant{Name: j.Variant}
		if stand.Type == model.EndpointServerless {
			v.MaxConcurrency = 1
		}
		total := 0.0
		for _, x := range stand.Variants {
			total += x.Weight
		}
		if total == 0 {
			v.Weight = 1 // a stand-in's weights must not all be zero
		}
		stand.Variants = append(stand.Variants, v)
	}
	if err := ra.c.eng.Apply(engine.SetEndpoint{Endpoint: stand, At: ra.now}); err != nil {
		return fmt.Errorf("endpoint %q: %w", j.Endpoint, err)
	}
	return nil
}

// restoreThrottle gives a recovered endpoint job that waited for admission
// the time it was first throttled, so its anti-starvation wait goes on.
func (ra *admissionRecovery) restoreThrottle(lj *liveJob) error {
	if lj.model.Endpoint == "" {
		return nil
	}
	raw, err := ra.c.st.KV(ra.ctx, store.JobThrottledKey(lj.rec.ID))
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return storeFailure{err}
	}
	var at time.Time
	if err := json.Unmarshal(raw, &at); err != nil {
		return fmt.Errorf("stored throttle time: %w", err)
	}
	if err := ra.c.eng.Apply(engine.RestoreThrottled{Job: lj.rec.ID, At: at}); err != nil && !errors.Is(err, engine.ErrUnknownJob) {
		return err
	}
	return nil
}

// finish puts back the definitions replaced by stand-ins, removes the
// endpoints removed at run time, and publishes the endpoints and settings.
func (ra *admissionRecovery) finish() error {
	c := ra.c
	names := make([]string, 0, len(ra.restore))
	for n := range ra.restore {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		var err error
		if def := ra.restore[n]; def != nil {
			err = c.eng.Apply(engine.SetEndpoint{Endpoint: *def, At: ra.now})
		} else {
			err = c.eng.Apply(engine.RemoveEndpoint{Name: n, At: ra.now})
		}
		if err != nil {
			return fmt.Errorf("endpoint %q: %w", n, err)
		}
	}
	for _, n := range ra.removed {
		if err := c.eng.Apply(engine.RemoveEndpoint{Name: n, At: ra.now}); err != nil && !errors.Is(err, admit.ErrUnknownEndpoint) {
			return fmt.Errorf("endpoint %q: %w", n, err)
		}
	}
	defs, s := c.eng.Endpoints(), c.eng.Throttling()
	c.mu.Lock()
	c.engCfg.Admission.Endpoints, c.engCfg.Admission.Settings = defs, s
	c.mu.Unlock()
	return nil
}
