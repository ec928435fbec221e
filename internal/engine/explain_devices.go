package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/engine/place"
)

// This file says which GPU devices keep ready tasks from starting: for a
// task that asks for GPUs and that no worker takes now, the workers that
// could run it by their hardware but have too few free devices, and the
// tasks holding theirs (read from the device book, devices.go). Counting
// GPUs says "gpu-0 has 0 GPU unused"; this says whose they are and when
// they should be back.

// GPUDeviceWait is what ready tasks asking for GPUs wait for when every
// worker that could run them by its hardware (labels, GPU count and
// memory, memory, CPU), and that takes tasks now (ready, not bound to
// another job, the pinned worker if the tasks are pinned), has fewer free
// GPUs than each task asks for.
type GPUDeviceWait struct {
	// Need is the GPUs each task asks for: that many free devices on one
	// worker.
	Need int64 `json:"need"`
	// Workers lists the first MaxDeviceWorkers such workers: the one
	// expected to free enough devices soonest first (from the declared
	// durations of the tasks holding them; unknown last), then the one
	// with the most free devices, then registration order.
	Workers []WorkerDevices `json:"workers"`
	// More counts the other such workers.
	More int `json:"more,omitempty"`
}

// MaxDeviceWorkers bounds GPUDeviceWait.Workers: a fleet of a thousand
// full GPU workers is three lines and a count.
const MaxDeviceWorkers = 3

// WorkerDevices is the GPU devices of one worker that a task waits for.
type WorkerDevices struct {
	Worker string `json:"worker"`
	// Devices counts the worker's GPUs; Free lists the indices of those
	// no task holds.
	Devices int   `json:"devices"`
	Free    []int `json:"free,omitempty"`
	// Held lists the devices tasks hold, by index.
	Held []DeviceHolder `json:"held"`
	// FreeBy is when enough devices should be free for the task, the
	// holders that end soonest ending: the latest expected end among
	// them. Zero when one of them declares no duration.
	FreeBy time.Time `json:"freeBy,omitzero"`
	// Frees names the tasks ("job/task") whose end would leave enough
	// devices free, soonest expected end first.
	Frees []string `json:"frees,omitempty"`
}

// DeviceHolder is one device and the task that holds it.
type DeviceHolder struct {
	Device int    `json:"device"`
	Job    string `json:"job"`
	Task   string `json:"task"`
	// ExpectedEnd is the task's start plus its declared duration; zero
	// when it declares none.
	ExpectedEnd time.Time `json:"expectedEnd,omitzero"`
}

// deviceCandidate is a worker short of free devices, with what ranks it.
type deviceCandidate struct {
	w      *place.Worker
	pos    int
	free   int
	freeBy time.Time
}

// before reports whether c is listed before d: enough devices expected
// free sooner (unknown last), then more free now, then registration order.
func (c *deviceCandidate) before(d *deviceCandidate) bool {
	if c.freeBy.IsZero() != d.freeBy.IsZero() {
		return d.freeBy.IsZero()
	}
	return cmp.Or(c.freeBy.Compare(d.freeBy), cmp.Compare(d.free, c.free), cmp.Compare(c.pos, d.pos)) < 0
}

// gpuDeviceWait fills the device section for ready tasks of shape s (pn is
// the worker they are pinned to, if any), which no worker takes now. It
// returns nil for tasks that ask for no GPU, and when no worker that could
// run them lacks free devices (they wait for something else: a slot, CPU,
// memory, a ready worker).
func (e *Engine) gpuDeviceWait(j *job, s *place.Shape, pn pin) *GPUDeviceWait {
	need := s.Req.GPUs
	if need <= 0 {
		return nil
	}
	// Only the first few are listed: keep those, in order, and count
	// the rest, rather than sort a thousand full workers.
	var top [MaxDeviceWorkers]deviceCandidate
	n := 0
	for i, w := range e.fleet.Workers() {
		if !w.Takes() || pn.w != nil && w != pn.w {
			continue
		}
		if b := w.BoundTo(); b != "" && b != j.id {
			continue
		}
		if _, never := e.fleet.Never(s, w); never {
			continue
		}
		book := e.book(w)
		if book == nil || w.Capacity().GPUs-w.Used.GPUs >= need {
			continue
		}
		free := min(book.free(), int(w.Capacity().GPUs-w.Used.GPUs))
		_, by, _ := book.freedBy(int(need)-free, nil)
		c := deviceCandidate{w: w, pos: i, free: free, freeBy: by}
		k := min(n, MaxDeviceWorkers)
		for k > 0 && c.before(&top[k-1]) {
			if k < MaxDeviceWorkers {
				top[k] = top[k-1]
			}
			k--
		}
		if k < MaxDeviceWorkers {
			top[k] = c
		}
		n++
	}
	if n == 0 {
		return nil
	}
	cands := top[:min(n, MaxDeviceWorkers)]
	out := &GPUDeviceWait{Need: need, More: n - len(cands)}
	for _, c := range cands {
		book := e.book(c.w)
		wd := WorkerDevices{Worker: c.w.Spec.Name, Devices: len(book.holder), FreeBy: c.freeBy}
		for p, h := range book.holder {
			if h == nil {
				wd.Free = append(wd.Free, book.device(p))
				continue
			}
			wd.Held = append(wd.Held, DeviceHolder{Device: book.device(p), Job: h.job.id, Task: h.spec.Name, ExpectedEnd: expectedEnd(h)})
		}
		wd.Frees, _, _ = book.freedBy(int(need)-c.free, []string{})
		out.Workers = append(out.Workers, wd)
	}
	return out
}

// book is w's device book, nil for a worker without GPUs.
func (e *Engine) book(w *place.Worker) *gpuBook {
	if w.Idx >= len(e.gpus) {
		return nil
	}
	return e.gpus[w.Idx]
}

// free counts the devices of b no task holds.
func (b *gpuBook) free() int {
	n := 0
	for _, h := range b.holder {
		if h == nil {
			n++
		}
	}
	return n
}

// deviceHeld is a task holding n devices of a book, and its expected end.
type deviceHeld struct {
	t   *task
	n   int
	end time.Time
}

// freedBy finds the holders of b whose ends free k more devices soonest
// (known ends first, soonest first, then device order). It appends their
// names ("job/task") to names when names is not nil, and returns when the
// last of them is expected to end: zero when one of them declares no
// duration. ok is false when k is not positive or the holders hold fewer
// than k devices (names is then returned as it came).
func (b *gpuBook) freedBy(k int, names []string) (out []string, by time.Time, ok bool) {
	if k <= 0 {
		return names, time.Time{}, false
	}
	// A worker has a few GPUs: the holders fit an array on the stack.
	var buf [16]deviceHeld
	hs := buf[:0]
next:
	for _, h := range b.holder {
		if h == nil {
			continue
		}
		for i := range hs {
			if hs[i].t == h {
				hs[i].n++
				continue next
			}
		}
		hs = append(hs, deviceHeld{t: h, n: 1, end: expectedEnd(h)})
	}
	// Unknown ends last; a stable sort keeps device order among equal
	// ends.
	slices.SortStableFunc(hs, func(x, y deviceHeld) int {
		if x.end.IsZero() != y.end.IsZero() {
			if x.end.IsZero() {
				return 1
			}
			return -1
		}
		return x.end.Compare(y.end)
	})
	for i, h := range hs {
		if k -= h.n; k > 0 {
			continue
		}
		if names != nil {
			for _, x := range hs[:i+1] {
				names = append(names, x.t.job.id+"/"+x.t.spec.Name)
			}
		}
		// Sorted so: the last one needed has the latest end, or none.
		return names, h.end, true
	}
	return names, time.Time{}, false
}

// expectedEnd is when running task t should end by its declared duration,
// zero when it declares none.
func expectedEnd(t *task) time.Time {
	if d := t.spec.Duration; d > 0 {
		return t.started.Add(d)
	}
	return time.Time{}
}

// gpuDevicesHelp says which tasks must end for a worker to have enough
// free devices for the task, and when that is expected.
func gpuDevicesHelp(g *GPUDeviceWait) []Help {
	if g == nil || len(g.Workers) == 0 {
		return nil
	}
	w := g.Workers[0]
	if len(w.Frees) == 0 {
		return nil
	}
	msg := fmt.Sprintf("the task needs %d free GPU device(s) on one worker: worker %s has them once %s end", g.Need, w.Worker, andList(w.Frees))
	if w.FreeBy.IsZero() {
		msg += " (one of them declares no duration: the estimate says when the task should start)"
	} else {
		msg += ", expected by " + w.FreeBy.UTC().Format(time.RFC3339) + " (from their declared durations)"
	}
	if n := len(g.Workers) - 1 + g.More; n > 0 {
		msg += fmt.Sprintf("; %d other worker(s) that fit it are short of free devices too", n)
	}
	return []Help{{Kind: "gpu_devices", Message: msg}}
}

// andList joins names as "a", "a and b", "a, b and c".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
