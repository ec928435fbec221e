package control

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
)

// This file carries what the engine decides about a task's GPU devices and
// its place in an array to the worker (the lease), the store (restarts)
// and the event log.

// maxGPUUUID bounds the UUID a worker registers for a device (nvidia-smi's
// are 40 bytes, MIG devices' 44).
const maxGPUUUID = 128

// checkGPUDevices checks the device list of a registration whose worker
// has gpus GPUs: one device per GPU, or none (devices 0..gpus-1).
func checkGPUDevices(ds []model.GPUDevice, gpus int64) error {
	if len(ds) == 0 {
		return nil
	}
	if int64(len(ds)) != gpus {
		return model.FieldErrors{{Path: "gpuDevices",
			Msg: fmt.Sprintf("lists %d devices for %d GPUs (resources.gpus): list one per GPU, or none for devices 0 to %d", len(ds), gpus, gpus-1)}}
	}
	seen := make(map[int]bool, len(ds))
	for i, d := range ds {
		path := fmt.Sprintf("gpuDevices[%d]", i)
		switch {
		case d.Index < 0:
			return model.FieldErrors{{Path: path + ".index", Msg: "must not be negative"}}
		case seen[d.Index]:
			return model.FieldErrors{{Path: path + ".index", Msg: fmt.Sprintf("device %d is listed twice", d.Index)}}
		case len(d.UUID) > maxGPUUUID:
			return model.FieldErrors{{Path: path + ".uuid", Msg: fmt.Sprintf("is longer than %d bytes", maxGPUUUID)}}
		case d.MemoryMB < 0:
			return model.FieldErrors{{Path: path + ".memoryMB", Msg: "must not be negative"}}
		}
		seen[d.Index] = true
	}
	return nil
}

// devicesOf returns the devices with the given indices on worker, with
// the UUIDs and memory the worker registered for them.
func (c *Controller) devicesOf(worker string, indices []int) []model.GPUDevice {
	if len(indices) == 0 {
		return nil
	}
	var registered []model.GPUDevice
	if lw, ok := c.workers[worker]; ok {
		registered = lw.reg.GPUDevices
	}
	out := make([]model.GPUDevice, len(indices))
	for i, idx := range indices {
		out[i] = model.GPUDevice{Index: idx}
		for _, d := range registered {
			if d.Index == idx {
				out[i] = d
				break
			}
		}
	}
	return out
}

// arrayPlace returns the position of task in the array its spec entry
// expands into, and the array's size: a count of N names its tasks
// ENTRY-0 to ENTRY-(N-1) (zero-padded); an entry without count is task 0
// of 1.
func arrayPlace(entry *spec.Task, task string) (index, count int) {
	if entry.Count <= 1 {
		return 0, 1
	}
	suffix, ok := strings.CutPrefix(task, entry.Name+"-")
	if !ok {
		return 0, entry.Count
	}
	n, err := strconv.Atoi(suffix)
	if err != nil {
		return 0, entry.Count
	}
	return n, entry.Count
}

// gpuStartData adds the devices of start s to the data of its
// task_started event: "gpus":[0,1].
func gpuStartData(s engine.Start, data json.RawMessage) json.RawMessage {
	if len(s.GPUs) == 0 || len(data) == 0 || data[len(data)-1] != '}' {
		return data
	}
	b := append(data[:len(data)-1:len(data)-1], `,"gpus":[`...)
	b = append(b, model.DeviceList(s.GPUs)...)
	return append(b, ']', '}')
}
