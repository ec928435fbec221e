package drive

import (
	"slices"
	"testing"
	"time"
)

func TestQueueOrdersByTimeThenByPush(t *testing.T) {
	var q Queue[string]
	for _, e := range []struct {
		at int64
		v  string
	}{{5, "c"}, {1, "a"}, {5, "d"}, {3, "b"}, {5, "e"}, {0, "first"}} {
		q.Push(e.at, e.v)
	}
	var got []string
	for q.Len() > 0 {
		_, v := q.Pop()
		got = append(got, v)
	}
	if want := []string{"first", "a", "b", "c", "d", "e"}; !slices.Equal(got, want) {
		t.Errorf("popped %v, want %v", got, want)
	}
}

func TestQueueSeqSeparatesAnInstantFromWhatItPushes(t *testing.T) {
	var q Queue[int]
	q.Push(1, 1)
	q.Push(1, 2)
	limit := q.Seq()
	var got []int
	for q.Len() > 0 {
		if _, seq := q.Next(); seq > limit {
			break
		}
		_, v := q.Pop()
		got = append(got, v)
		q.Push(1, v+10) // pushed during the instant: waits for the next round
	}
	if !slices.Equal(got, []int{1, 2}) || q.Len() != 2 {
		t.Errorf("took %v with %d left, want [1 2] with 2 left", got, q.Len())
	}
}

func TestAttemptsForgetStoppedAndRestartedEnds(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	done := map[string]bool{}
	a := NewAttempts(func(k string) bool { return !done[k] })
	a.Start("x", t0.Add(3*time.Second))
	a.Start("y", t0.Add(time.Second))
	a.Start("z", t0.Add(time.Second))
	a.Start("w", t0.Add(2*time.Second))
	a.Stop("y")                         // preempted
	a.Start("x", t0.Add(4*time.Second)) // restarted: the end at 3 s is stale
	done["w"] = true                    // ended by other means
	if at, ok := a.Next(); !ok || !at.Equal(t0.Add(time.Second)) {
		t.Fatalf("Next = %v, %v; want 1 s", at, ok)
	}
	var got []string
	for {
		k, _, ok := a.Pop(t0.Add(3 * time.Second))
		if !ok {
			break
		}
		got = append(got, k)
	}
	if !slices.Equal(got, []string{"z"}) {
		t.Errorf("ends by 3 s: %v, want [z]", got)
	}
	if k, at, ok := a.Pop(t0.Add(time.Hour)); !ok || k != "x" || !at.Equal(t0.Add(4*time.Second)) {
		t.Errorf("Pop = %q at %v (%v), want x at 4 s", k, at, ok)
	}
	if _, ok := a.Next(); ok {
		t.Error("Next found an end after every end was taken")
	}
}
