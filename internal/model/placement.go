package model

// StageName returns the task's stage: Stage, or the task's name.
func (t *Task) StageName() string {
	if t.Stage != "" {
		return t.Stage
	}
	return t.Name
}

// Reason codes of placement (seed 002), beside ReasonStickyWorkerBusy.
const (
	// ReasonAssignedWorkerBusy: the task may only run on one worker (its
	// job's in the static-worker mode, its task type's in the
	// fixed-pipeline mode), and that worker cannot take it now.
	ReasonAssignedWorkerBusy = "assigned_worker_busy"
	// ReasonBatchFailure: the task ran in a merged batch whose head failed
	// for good.
	ReasonBatchFailure = "batch_failure"
	// ReasonBatchDone: the task ran in a merged batch and ended with its
	// head.
	ReasonBatchDone = "batch_done"
)
