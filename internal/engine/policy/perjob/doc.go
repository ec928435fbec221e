// Package perjob holds what the per-job policies (priority and sla, seed
// 001) share: every job is its own group, each job's usage is booked over a
// sliding window (Book), and slots are handed out in passes over jobs in
// service order (Allocator), whose order explain reads back (Served).
package perjob

import (
	"math"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// Bounds of the usage window, shared by the priority and sla policies so
// that the docs, the config parsers and the tests quote one source.
const (
	// DefaultUsageWindow is how far back usage counts. Ten minutes spans many
	// task lengths of a grid, so rounding errors even out quickly, yet a job
	// that was busy an hour ago is not held back for it.
	DefaultUsageWindow = 10 * time.Minute
	// MaxUsageWindow keeps usage, integrated exactly in slot-nanoseconds, far
	// from int64 overflow (10^5 slots × 24 h fits).
	MaxUsageWindow = 24 * time.Hour
)

// CheckWindow validates a usage window field at path field; 0 means the
// default. The error is a *model.FieldError at field.
func CheckWindow(field string, w time.Duration) error {
	if w < 0 {
		return model.Invalid(field, "must not be negative (got %s)", w)
	}
	if w > MaxUsageWindow {
		return model.Invalid(field, "%s is longer than the maximum %s", w, MaxUsageWindow)
	}
	return nil
}

// Quantize rounds a normalised usage to a millionth of a slot-second, so
// jobs whose usage is equal on paper (new jobs, started at their ideal share)
// compare equal despite floating-point noise, and fall back to creation order.
func Quantize(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// Ceil rounds x up, forgiving floating-point noise (100 × 6 / 10 must be 60).
func Ceil(x float64) int {
	return int(math.Ceil(x - 1e-9))
}
