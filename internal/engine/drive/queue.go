// Package drive steps the engine through virtual time. Everything that
// runs the scheduler ahead of the wall clock (the simulator, explain's
// what-if, the policies' test drivers) keeps its future in the same two
// structures: a Queue of timed events, ordered by time and then by the
// order they were queued, so one input always replays the same way; and
// Attempts, the scheduled ends of running attempts, where a stopped
// attempt's end is forgotten. The package is pure: no clock, no I/O, and
// it does not import the engine, so the engine's own what-if uses it too.
package drive

// Queue is a min-heap of events of type T ordered by (at, the order they
// were pushed): events at one instant come out in the order they went in.
// It is written out rather than built on container/heap so that pushing a
// value does not box it: a trace replay pushes one event per attempt.
type Queue[T any] struct {
	items []item[T]
	seq   uint64
}

type item[T any] struct {
	at  int64
	seq uint64
	v   T
}

func less[T any](a, b *item[T]) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

// Len returns how many events are queued.
func (q *Queue[T]) Len() int { return len(q.items) }

// Seq returns the sequence number of the latest push: an event pushed
// after a call to Seq has a larger one, which lets a caller finish an
// instant's events without taking those it pushes meanwhile.
func (q *Queue[T]) Seq() uint64 { return q.seq }

// Next returns the time and sequence number of the earliest event. The
// queue must not be empty.
func (q *Queue[T]) Next() (at int64, seq uint64) { return q.items[0].at, q.items[0].seq }

// Peek returns the earliest event. The queue must not be empty.
func (q *Queue[T]) Peek() (at int64, v T) { return q.items[0].at, q.items[0].v }

// Push queues v at time at.
func (q *Queue[T]) Push(at int64, v T) {
	q.seq++
	q.items = append(q.items, item[T]{at: at, seq: q.seq, v: v})
	i := len(q.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(&q.items[i], &q.items[p]) {
			break
		}
		q.items[i], q.items[p] = q.items[p], q.items[i]
		i = p
	}
}

// Pop removes and returns the earliest event. The queue must not be empty.
func (q *Queue[T]) Pop() (at int64, v T) {
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
		if r := l + 1; r < n && less(&q.items[r], &q.items[l]) {
			m = r
		}
		if !less(&q.items[m], &q.items[i]) {
			break
		}
		q.items[i], q.items[m] = q.items[m], q.items[i]
		i = m
	}
	return top.at, top.v
}
