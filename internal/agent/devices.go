package agent

import (
	"strconv"
	"strings"

	"github.com/allot-sched/allot/internal/model"
)

// deviceEnv is what shows a task the GPU devices its assignment gives it,
// on a worker with workerGPUs GPUs (none: the variables are left as the
// agent's environment has them).
//
// CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES (the NVIDIA container
// runtime's) list the devices by UUID when the worker detected them with
// nvidia-smi, by index otherwise (GPUs declared with --gpus). A UUID names
// one device whatever order CUDA enumerates them in, whereas an index is
// read in CUDA's order, fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID,
// which is nvidia-smi's: with indices the agent sets CUDA_DEVICE_ORDER so
// that index i is nvidia-smi's device i. ALLOT_GPUS lists the indices
// either way. A task that asks for no GPU gets an empty
// CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES=none: it sees no GPU.
// These come after the job's own env, so a task cannot widen its devices.
func deviceEnv(gpus []model.GPUDevice, workerGPUs int) []string {
	if workerGPUs <= 0 && len(gpus) == 0 {
		return nil
	}
	if len(gpus) == 0 {
		return []string{"CUDA_VISIBLE_DEVICES=", "NVIDIA_VISIBLE_DEVICES=none", "ALLOT_GPUS="}
	}
	indices := make([]string, len(gpus))
	uuids := make([]string, len(gpus))
	byUUID := true
	for i, d := range gpus {
		indices[i] = strconv.Itoa(d.Index)
		uuids[i] = d.UUID
		byUUID = byUUID && d.UUID != ""
	}
	visible := strings.Join(indices, ",")
	env := []string{"ALLOT_GPUS=" + visible}
	if byUUID {
		visible = strings.Join(uuids, ",")
	} else {
		env = append(env, "CUDA_DEVICE_ORDER=PCI_BUS_ID")
	}
	return append(env, "CUDA_VISIBLE_DEVICES="+visible, "NVIDIA_VISIBLE_DEVICES="+visible)
}
