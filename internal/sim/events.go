package sim

// evKind says what a simulation event does.
type evKind uint8

const (
	// evTick forces a scheduling round: at time zero, and on the grid of
	// Options.CycleEvery.
	evTick evKind = iota
	// evArrive submits job idx.
	evArrive
	// evFinish ends the current attempt of task idx, unless gen is stale.
	evFinish
	// evElastic runs the elastic coordinator.
	evElastic
)

// event is one entry of the event queue (a drive.Queue, whose times are
// nanoseconds after Input.Start, which keeps the queue free of time.Time
// comparisons).
type event struct {
	kind evKind
	idx  int32
	gen  uint32 // task generation for evFinish
}
