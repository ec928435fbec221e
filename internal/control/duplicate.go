package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/allot-sched/allot/internal/spec"
)

// DuplicateError is the answer to a submission whose job ID is taken by a
// job the same submitter submitted with the same spec. Nothing new is
// stored; the earlier submission was. A client that sent the job again
// because it lost the first answer (its server failed over) reads it as
// success; anyone else gets the conflict it is (docs/ha.md). It is only
// ever given to the job's own submitter, so it tells nobody else anything
// an IDTakenError would not.
type DuplicateError struct {
	IDTakenError
	// State is the stored job's state.
	State string
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("job ID %q is taken by the same job, submitted earlier by the same caller (now %s)", e.ID, e.State)
}

// Is makes errors.Is(err, ErrConflict) hold for a *DuplicateError.
func (e *DuplicateError) Is(target error) bool { return target == ErrConflict }

// duplicateOf turns taken, the refusal of js's ID, into a *DuplicateError
// when the job holding the ID has the same submitter and the same spec as
// js (with its queue and ID filled in, as stored); otherwise it returns
// taken as it is. It reads the job only on this path, a refused ID: from
// the loop's live jobs first when called on the loop (onLoop), else from
// the store alone, which holds every job from its submission on.
func (c *Controller) duplicateOf(ctx context.Context, taken error, js spec.Job, submitter string, onLoop bool) error {
	var t *IDTakenError
	if !errors.As(taken, &t) {
		return taken
	}
	stored, storedBy, state, ok := c.heldSpec(ctx, js.ID, onLoop)
	if !ok || storedBy != submitter || !sameSpec(stored, js) {
		return taken
	}
	return &DuplicateError{IDTakenError: *t, State: state}
}

// heldSpec returns the stored spec, submitter and state of the job with
// this ID: live (only on the loop, which owns the live jobs), or read from
// the store.
func (c *Controller) heldSpec(ctx context.Context, id string, onLoop bool) (raw []byte, submitter, state string, ok bool) {
	if onLoop {
		if lj, live := c.jobs[id]; live {
			return lj.rec.Spec, lj.rec.Submitter, lj.rec.State, true
		}
	}
	j, _, err := c.st.Job(ctx, id)
	if err != nil {
		return nil, "", "", false
	}
	return j.Spec, j.Submitter, j.State, true
}

// sameSpec reports whether a stored spec is js. Both go through spec.Job
// and its JSON, so a store that rewrites JSON (key order, spacing) does
// not make equal specs differ.
func sameSpec(stored []byte, js spec.Job) bool {
	var old spec.Job
	if json.Unmarshal(stored, &old) != nil {
		return false
	}
	a, errA := json.Marshal(old)
	b, errB := json.Marshal(js)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}
