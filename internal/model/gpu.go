package model

import (
	"strconv"
	"strings"
)

// GPUDevice is one GPU of a worker, as the worker registers it: the engine
// assigns devices, not counts, so that two tasks on one host never see the
// same GPU. Index is the device's index on the host (nvidia-smi's, which
// CUDA_VISIBLE_DEVICES takes); UUID and MemoryMB are empty when the worker
// declared its GPUs rather than detected them.
type GPUDevice struct {
	Index    int    `json:"index"`
	UUID     string `json:"uuid,omitempty"`
	MemoryMB int64  `json:"memoryMB,omitempty"`
}

// DeviceList formats device indices as CUDA_VISIBLE_DEVICES takes them:
// "0,2", or "" for none.
func DeviceList(indices []int) string {
	var b strings.Builder
	for i, d := range indices {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(d))
	}
	return b.String()
}

// ParseDeviceList reads what DeviceList writes; "" is no devices.
func ParseDeviceList(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	out := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return nil, Invalid("gpus", "%q is not a list of device indices", s)
		}
		out[i] = n
	}
	return out, nil
}
