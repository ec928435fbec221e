package engine

import (
	"fmt"
	"slices"

	"github.com/allot-sched/allot/internal/engine/place"
	"github.com/allot-sched/allot/internal/model"
)

// This file assigns GPU devices. Placement counts GPUs (a worker's free
// GPUs are its capacity less what its tasks ask for); once it has chosen a
// worker for a task, the engine hands the task that many of the worker's
// devices, the lowest free indices first, and takes them back when the task
// ends, is stopped or its worker is lost. Devices are exclusive: a device
// is held by at most one task (the members of a merged batch run one after
// another in their head's slot and share its devices). Since placement
// never lets a worker's tasks ask for more GPUs than it has, there are
// always enough free devices for a task placed there.

// gpuBook is the GPUs of one worker: the task holding each (nil when
// free), by position, and the device index at each position, ascending
// (nil for devices 0..len(holder)-1, a worker that registered no list).
type gpuBook struct {
	index  []int
	holder []*task
}

// device is the index of the device at position p.
func (b *gpuBook) device(p int) int {
	if b.index == nil {
		return p
	}
	return b.index[p]
}

// position is the position of device d, ok=false for a device b lacks.
func (b *gpuBook) position(d int) (int, bool) {
	if b.index == nil {
		return d, d >= 0 && d < len(b.holder)
	}
	return slices.BinarySearch(b.index, d)
}

// checkGPUDevices checks the device list a worker registers: one device per
// GPU of its capacity, or none (devices 0..GPUs-1), without repeats.
func checkGPUDevices(w *model.Worker, ds []model.GPUDevice) error {
	if len(ds) == 0 {
		return nil
	}
	if int64(len(ds)) != w.Capacity.GPUs {
		return fmt.Errorf("worker %q: gpuDevices: %w: %d devices for %d GPUs", w.Name, ErrInvalid, len(ds), w.Capacity.GPUs)
	}
	seen := make(map[int]bool, len(ds))
	for _, d := range ds {
		if d.Index < 0 || seen[d.Index] {
			return fmt.Errorf("worker %q: gpuDevices: %w: device index %d is negative or repeated", w.Name, ErrInvalid, d.Index)
		}
		seen[d.Index] = true
	}
	return nil
}

// addGPUBook makes the book of a worker that joined with GPUs. It is made
// at registration, not at the worker's first GPU task: a cycle that starts
// thousands of tasks on fresh workers allocates nothing for their devices.
func (e *Engine) addGPUBook(w *place.Worker, ds []model.GPUDevice) {
	n := int(w.Spec.Capacity.GPUs)
	if n <= 0 {
		return
	}
	for len(e.gpus) <= w.Idx {
		e.gpus = append(e.gpus, nil)
	}
	b := &gpuBook{holder: make([]*task, n)}
	if len(ds) > 0 {
		b.index = make([]int, len(ds))
		for i, d := range ds {
			b.index[i] = d.Index
		}
		slices.Sort(b.index)
	}
	e.gpus[w.Idx] = b
}

// takeGPUs gives t, which has just started on w, the GPU devices it asks
// for, and returns their indices, lowest first. want, when set (a restart
// restores a running task), names the devices the task was given: it gets
// them back if each is free on w, and the lowest free ones otherwise, as a
// task recorded without devices does. A restored task on a worker that now
// has too few free devices gets those there are: its process already
// runs, and no device is ever held twice. The task itself records nothing:
// its worker's book says which devices it holds.
func (e *Engine) takeGPUs(t *task, w *place.Worker, want []int) []int {
	n := int(t.spec.Resources.GPUs)
	if n <= 0 || w.Idx >= len(e.gpus) || e.gpus[w.Idx] == nil {
		return nil // no GPU asked, or a worker without GPUs (only a restore puts a GPU task there)
	}
	b := e.gpus[w.Idx]
	list := e.deviceList(n)
	if len(want) == n && b.allFree(want) {
		for _, d := range want {
			p, _ := b.position(d)
			b.holder[p] = t
		}
		return b.heldBy(t, list)
	}
	// Positions are in device order: the lowest free come first.
	for p, h := range b.holder {
		if len(list) == n {
			break
		}
		if h == nil {
			b.holder[p] = t
			list = append(list, b.device(p))
		}
	}
	return list
}

// heldBy appends the devices t holds in b to dst, lowest first.
func (b *gpuBook) heldBy(t *task, dst []int) []int {
	for p, h := range b.holder {
		if h == t {
			dst = append(dst, b.device(p))
		}
	}
	return dst
}

// gpuSlabSize is how many device indices one block of the slab holds.
const gpuSlabSize = 4096

// deviceList returns an empty list with room for n device indices, cut from
// the slab: starting a GPU task allocates nothing of its own, which a cycle
// placing thousands of tasks would feel. A list is never grown past n nor
// written after its task started, so lists cut from one block never
// overlap; a block is freed once no task holds a list of it.
func (e *Engine) deviceList(n int) []int {
	if cap(e.gpuSlab)-len(e.gpuSlab) < n {
		e.gpuSlab = make([]int, 0, max(gpuSlabSize, n))
	}
	k := len(e.gpuSlab)
	e.gpuSlab = e.gpuSlab[:k+n]
	return e.gpuSlab[k : k : k+n]
}

// allFree reports whether every device of want is one of b's, free, and
// named once.
func (b *gpuBook) allFree(want []int) bool {
	for i, d := range want {
		p, ok := b.position(d)
		if !ok || b.holder[p] != nil || slices.Contains(want[:i], d) {
			return false
		}
	}
	return true
}

// dropGPUs takes back the devices t holds on its worker; a batch member
// holds none of its own (it rides on its head's).
func (e *Engine) dropGPUs(t *task) {
	if t.spec.Resources.GPUs <= 0 || t.member() || t.worker == nil || t.worker.Idx >= len(e.gpus) {
		return
	}
	if b := e.gpus[t.worker.Idx]; b != nil {
		for p, h := range b.holder {
			if h == t {
				b.holder[p] = nil
			}
		}
	}
}

// forgetGPUs drops the book of a worker that left.
func (e *Engine) forgetGPUs(w *place.Worker) {
	if w.Idx < len(e.gpus) {
		e.gpus[w.Idx] = nil
	}
}

// TaskGPUs returns the GPU devices a running task holds (the indices its
// worker registered, lowest first; a batch member's are its head's), or
// nil. The control loop records them, so that a restart gives each running
// task its devices back (RestoreRunning.GPUs).
func (e *Engine) TaskGPUs(job, name string) []int {
	t, err := e.lookup(job, name)
	if err != nil || t.state != model.TaskRunning {
		return nil
	}
	if t.member() {
		t = t.batch.head
	}
	if t.worker == nil || t.worker.Idx >= len(e.gpus) || e.gpus[t.worker.Idx] == nil {
		return nil
	}
	return e.gpus[t.worker.Idx].heldBy(t, nil)
}
