package place

import "github.com/allot-sched/allot/internal/model"

// Holds keep free workers out of the choices for the rest of a scheduling
// cycle: the engine holds the workers a waiting gang is expected to start
// on (its reservation, docs/jobs.md#gangs), so that smaller tasks behind it
// do not take them. A held worker keeps its slots and free capacity in the
// counts (PoolSlots); it is only left out of Choose and Place while held.
// Workers assigned to one job or task type (the static-worker and
// fixed-pipeline modes) are not chosen from the free workers, so a hold
// does not apply to them.

// Hold leaves w out of the free workers Choose and Place pick from until
// Unhold. Holding a held worker does nothing.
func (f *Fleet) Hold(w *Worker) {
	if w.held {
		return
	}
	w.held = true
	if w.Takes() {
		w.class.free.remove(w.pos)
	}
	// Fewer choices cannot turn a failed placement into a success: the
	// failure memos stay valid, and the epoch stays.
}

// Unhold puts a held worker back among the free workers.
func (f *Fleet) Unhold(w *Worker) {
	if !w.held {
		return
	}
	w.held = false
	if w.Takes() && w.FreeSlots() > 0 && w.boundTo == "" {
		w.class.free.add(w.pos)
	}
	f.epoch++
}

// Held reports whether w is held (Hold).
func (w *Worker) Held() bool { return w.held }

// Capacity is what w offers in all: its class's resources.
func (w *Worker) Capacity() model.Resources { return w.class.capacity }
