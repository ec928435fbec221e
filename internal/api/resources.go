package api

import "github.com/allot-sched/allot/internal/model"

// ResourcesChange is the body of POST /v1/jobs/{id}/resources: what every
// task of a job that has not started asks for from now on. An absent field
// keeps each task's own value; the quantities are written as in a job
// spec ("2", "500m"; "4Gi").
type ResourcesChange struct {
	CPU       *model.CPU    `json:"cpu,omitempty"`
	Memory    *model.Memory `json:"memory,omitempty"`
	GPUs      *int          `json:"gpus,omitempty"`
	GPUMemory *model.Memory `json:"gpuMemory,omitempty"`
}

// Empty reports whether the change names no resource.
func (r ResourcesChange) Empty() bool {
	return r.CPU == nil && r.Memory == nil && r.GPUs == nil && r.GPUMemory == nil
}
