package spec

import "github.com/allot-sched/allot/internal/model"

// The quantities of a document live in model, so that the API's bodies
// need nothing else; these are their names where documents are read.

// CPU is a number of cores (model.CPU).
type CPU = model.CPU

// Memory is a size in mebibytes (model.Memory).
type Memory = model.Memory

// Duration is a length of time (model.Duration).
type Duration = model.Duration

// Bounds on quantities (model.MaxCPU and the others).
const (
	MaxCPU      = model.MaxCPU
	MaxMemory   = model.MaxMemory
	MaxGPUs     = model.MaxGPUs
	MaxDuration = model.MaxDuration
)

// ParseCPU reads a CPU quantity (model.ParseCPU).
func ParseCPU(s string) (CPU, error) { return model.ParseCPU(s) }

// ParseMemory reads a memory quantity (model.ParseMemory).
func ParseMemory(s string) (Memory, error) { return model.ParseMemory(s) }

// ParseDuration reads a duration (model.ParseDuration).
func ParseDuration(s string) (Duration, error) { return model.ParseDuration(s) }
