package sim

// evKind says what a simulation event does.
type evKind uint8

const (
	// evTick forces a scheduling round: at time zero, and on the grid of
	// Options.CycleEvery.
	evTick evKind = iota
	// evArrive submits job idx.
	evArrive
	// evFinish ends the current attempt of task idx, unless gen is stale.
	evFinish
	// evElastic runs the elastic coordinator.
	evElastic
)

// event is one entry of the event queue. Times are nanoseconds after
// Input.Start, which keeps the queue free of time.Time comparisons.
type event struct {
	at   int64
	seq  uint64 // insertion order: breaks ties at one instant
	kind evKind
	idx  int32
	gen  uint32 // task generation for evFinish
}

// eventQueue is a binary min-heap ordered by (at, seq). It is written out
// rather than built on container/heap so that pushing a value does not box
// it: a trace replay pushes one event per task attempt.
type eventQueue struct {
	items []event
	seq   uint64
}

func (q *eventQueue) len() int { return len(q.items) }

func (q *eventQueue) top() event { return q.items[0] }

func less(a, b event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

// push adds ev, stamping it with the next sequence number.
func (q *eventQueue) push(ev event) {
	q.seq++
	ev.seq = q.seq
	q.items = append(q.items, ev)
	i := len(q.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(q.items[i], q.items[p]) {
			break
		}
		q.items[i], q.items[p] = q.items[p], q.items[i]
		i = p
	}
}

// pop removes and returns the earliest event.
func (q *eventQueue) pop() event {
	top := q.items[0]
	n := len(q.items) - 1
	q.items[0] = q.items[n]
	q.items = q.items[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && less(q.items[r], q.items[l]) {
			m = r
		}
		if !less(q.items[m], q.items[i]) {
			break
		}
		q.items[i], q.items[m] = q.items[m], q.items[i]
		i = m
	}
	return top
}
