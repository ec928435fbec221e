// Package density keeps the task/worker density series of seed 002: per
// time bucket, how many tasks were submitted and started, and how many
// workers were busy and enabled. It shows whether capacity follows demand,
// which is what the elastic coordinator is tuned by. The simulator records
// a whole run (Recorder); the server keeps a rolling window of the latest
// buckets (Window). Both count the same things the same way, so a
// simulated series and a served one compare bucket for bucket.
package density

// Counts is what one bucket holds.
type Counts struct {
	// Submitted counts the tasks of the jobs that arrived in the bucket;
	// Started the task starts in it (restarts included).
	Submitted int
	Started   int
	// ActiveWorkers counts workers running at least one task at the end
	// of the bucket, PeakActiveWorkers the most at any instant in it.
	ActiveWorkers     int
	PeakActiveWorkers int
	// EnabledWorkers counts workers not disabled at the end of the bucket.
	EnabledWorkers int
}
