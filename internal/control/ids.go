package control

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/allot-sched/allot/internal/store"
)

// A job ID is taken when a job with it is live (the loop's jobs), on the
// dead-letter list (the engine), or stored. The first two are in memory;
// the store is read for the rest, but not on the loop: a read per
// submission there would cost every other request of the round its time.
// SubmitManyBy reads the store in the caller's goroutine before it hands
// the jobs to the loop, and the loop checks only its memory.
//
// Between that read and the loop's round, a job with the same ID may have
// been created, ended and forgotten by the loop (a one-task job lives a
// few milliseconds): the read missed it if its creation was not committed
// yet, and the loop no longer holds it. goneIDs closes that window. The
// loop records each job it forgets with an epoch it then publishes; a
// submission notes the epoch before it reads the store, and the loop
// refuses its ID if a job of that ID was forgotten in a later epoch. A job
// forgotten in an earlier or the same epoch had its end, so its creation,
// committed before the read began, and the read saw it.
//
// The record is bounded (goneKeep IDs): a submission older than the oldest
// epoch it still holds (one that waited for its round while tens of
// thousands of jobs ended) is checked against the store on the loop, as
// before.

// goneKeep bounds the IDs of forgotten jobs the loop remembers.
const goneKeep = 1 << 16

// goneIDs remembers the IDs of the jobs the loop forgot most recently, with
// the epoch in which it forgot them.
type goneIDs struct {
	// epoch is the last epoch in which the loop forgot jobs; submissions
	// read it from their goroutines.
	epoch atomic.Uint64

	// Loop-owned.
	at    map[string]uint64 // ID → epoch it was forgotten in
	order []goneID          // oldest first
	// floor is the newest epoch whose IDs were dropped: a submission
	// that read the store in an epoch before it cannot rely on at.
	floor uint64
}

type goneID struct {
	id    string
	epoch uint64
}

// forget records the IDs of jobs the loop forgets now that their ends are
// committed, in a new epoch, and drops the oldest beyond goneKeep.
func (g *goneIDs) forget(ids []string) {
	if len(ids) == 0 {
		return
	}
	if g.at == nil {
		g.at = map[string]uint64{}
	}
	e := g.epoch.Load() + 1
	for _, id := range ids {
		g.at[id] = e
		g.order = append(g.order, goneID{id: id, epoch: e})
	}
	if drop := len(g.order) - goneKeep; drop > 0 {
		for _, old := range g.order[:drop] {
			if g.at[old.id] == old.epoch {
				delete(g.at, old.id)
			}
			g.floor = max(g.floor, old.epoch)
		}
		g.order = append(g.order[:0:0], g.order[drop:]...)
	}
	g.epoch.Store(e) // after the IDs are in at: a reader of e finds them
}

// since reports whether a job with this ID was forgotten after epoch
// seen, and whether the record can tell (seen is not older than what it
// dropped).
func (g *goneIDs) since(id string, seen uint64) (gone, known bool) {
	if seen < g.floor {
		return false, false
	}
	e, ok := g.at[id]
	return ok && e > seen, true
}

// isStored reports whether the store holds a job with this ID. An ID the
// filter of stored IDs does not have is not read for.
func (c *Controller) isStored(ctx context.Context, id string) (bool, error) {
	if !c.stored.mayHold(id) {
		return false, nil
	}
	_, err := c.st.JobHeader(ctx, id)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	}
	return false, err
}

// idFree returns an *IDTakenError when a job with this ID is live,
// dead-lettered (possibly earlier in this round, so not stored yet) or
// stored; the answer is the same in every case. It runs on the loop. With
// read, the caller read the store for the ID in epoch seen and found
// nothing; without, the store is read here.
func (c *Controller) idFree(ctx context.Context, id string, read bool, seen uint64) error {
	if _, live := c.jobs[id]; live {
		return &IDTakenError{ID: id}
	}
	if _, dead := c.eng.DeadLettered(id); dead {
		return &IDTakenError{ID: id}
	}
	gone, known := c.gone.since(id, seen)
	if !read || !known { // no read, or one too old for the record: read now
		var err error
		if gone, err = c.isStored(ctx, id); err != nil {
			return err
		}
	}
	if gone {
		return &IDTakenError{ID: id}
	}
	return nil
}

// noteStored adds the IDs of a batch's jobs to the filter of stored IDs
// before the batch is committed: a submission that finds an ID missing
// from it can trust that no job of that ID is stored or being stored.
func (c *Controller) noteStored(b store.Batch) {
	if len(b.Jobs) == 0 {
		return
	}
	ids := make([]string, len(b.Jobs))
	for i, j := range b.Jobs {
		ids[i] = j.ID
	}
	c.stored.add(ids...)
}
