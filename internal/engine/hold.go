package engine

import (
	"fmt"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

// This file holds and releases jobs (allot hold / allot release, Slurm's
// scontrol hold). A held job keeps its place: it stays in its group with
// its sequence number, priority and tasks, but leaves the group's job heap,
// so allocation and placement never see it, and (an endpoint job not yet
// admitted) leaves the admission queue, so it takes no endpoint capacity.
// Releasing it puts it back where its priority and age place it. Its
// running tasks go on; its waiting ones say "held by NAME".

// HoldJob holds an unfinished job on behalf of By (a token's name, or an
// operator): none of its tasks starts until ReleaseJob. Holding a held job
// again only changes who holds it.
type HoldJob struct {
	Job string
	By  string
}

// ReleaseJob releases a held job: its waiting tasks may start again, in
// the order they had. Releasing a job that is not held changes nothing.
type ReleaseJob struct {
	Job string
}

func (HoldJob) event()    {}
func (ReleaseJob) event() {}

// applyHold applies the events of this file and SetJobResources
// (resources.go); handled is false for others.
func (e *Engine) applyHold(ev Event) (handled bool, err error) {
	switch ev := ev.(type) {
	case HoldJob:
		return true, e.hold(ev.Job, ev.By)
	case ReleaseJob:
		return true, e.unhold(ev.Job)
	case SetJobResources:
		return true, e.setJobResources(ev)
	}
	return false, nil
}

func (e *Engine) hold(id, by string) error {
	j, ok := e.jobs[id]
	if !ok || j.done {
		return fmt.Errorf("%w %q", ErrUnknownJob, id)
	}
	if by == "" {
		return fmt.Errorf("job %q: %w: a hold needs the name of who holds it", id, ErrInvalid)
	}
	was := j.held
	j.held = by
	if was != "" {
		return nil
	}
	if e.held == nil {
		e.held = map[*job]struct{}{}
	}
	e.held[j] = struct{}{}
	if j.heapPos >= 0 {
		j.g.jobs.remove(j.heapPos)
	}
	if j.spec.Endpoint != "" && !j.admitted {
		// Out of the admission queue, keeping the variant it was given
		// so that a release does not draw another.
		if aj, ok := e.adm.ctl.Job(j.id); ok && j.spec.Variant == "" {
			j.heldVariant = aj.Variant
		}
		e.adm.ctl.Release(j.id)
	}
	return nil
}

func (e *Engine) unhold(id string) error {
	j, ok := e.jobs[id]
	if !ok || j.done {
		return fmt.Errorf("%w %q", ErrUnknownJob, id)
	}
	if j.held == "" {
		return nil
	}
	j.held = ""
	delete(e.held, j)
	if j.spec.Endpoint != "" && !j.admitted && j.waitingJobs == 0 {
		// Back into the admission queue, unless it still waits for
		// other jobs: settle enqueues it once they are done.
		spec := *j.spec
		if spec.Variant == "" {
			spec.Variant = j.heldVariant
		}
		e.adm.ctl.Enqueue(spec, j.seq, e.now)
		e.adm.ctl.SetWaitingTasks(j.id, j.tally.waiting)
	}
	j.heldVariant = ""
	j.g.push(j)
	return nil
}

// HeldBy returns who holds job id, or "" when it is not held (or unknown).
func (e *Engine) HeldBy(id string) string {
	if j, ok := e.jobs[id]; ok {
		return j.held
	}
	return ""
}

// heldReason is the pending reason of a held job's waiting tasks.
func heldReason(j *job) model.Reason {
	return model.Because(model.ReasonHeld, "job %q is held by %s: it starts nothing until released", j.id, j.held)
}

// withoutHeld takes the ready tasks of g's held jobs out of what the
// policy sees g wait for: a held job asks for no slot, so it neither wins
// its group slots nor makes the policy preempt for it. Held jobs that ended
// are dropped from the list here.
func (e *Engine) withoutHeld(vg *policy.Group, g *group) {
	n := 0
	for j := range e.held {
		if j.done {
			delete(e.held, j)
			continue
		}
		if j.g == g {
			n += j.ready.Len()
		}
	}
	vg.Waiting = max(0, vg.Waiting-n)
	if g.limited == 0 { // else usable counted the job heap, which held jobs are not in
		vg.Usable = max(0, vg.Usable-n)
	}
}

// holdHelp says what lets a held job start.
func holdHelp(j *job) []Help {
	if j.held == "" {
		return nil
	}
	return []Help{{Kind: "held", Message: fmt.Sprintf("job %s is held by %s: release it (allot release %s)", j.id, j.held, j.id)}}
}

// heldSummary moves the ready tasks of held jobs from their group's reason
// to held in a count of waiting tasks by reason; unadmitted ones are
// counted as not admitted (p.unadmitted), or as waiting for other jobs
// (p.onJobs), until then.
func (e *Engine) heldSummary(by map[string]int) {
	for j := range e.held {
		if j.done {
			continue
		}
		if n := j.tally.ready; n > 0 {
			code := e.groupReadyCode(j.g, j.tally.head)
			if e.cycle > 0 && j.reasonCycle == e.cycle {
				code = j.reason.Code // parked this cycle, then held
			}
			by[code] -= n
			by[model.ReasonHeld] += n
		}
		if !j.admitted {
			if n := j.tally.waiting; n > 0 {
				code := model.ReasonNotAdmitted
				if j.tally.onJobs {
					code = model.ReasonWaitingDependency
				}
				by[code] -= n
				by[model.ReasonHeld] += n
			}
		}
	}
}
