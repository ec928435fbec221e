package sim

import (
	"time"

	"github.com/allot-sched/allot/internal/density"
)

// Density is the task/worker density series of seed 002: per time bucket,
// how many tasks were submitted and started, and how many workers were busy
// and enabled. It shows whether capacity follows demand, which is what the
// elastic coordinator is tuned by.
type Density struct {
	// BucketSeconds is the bucket size: Options.DensityBucket, doubled as
	// often as needed to keep at most maxDensityBuckets buckets.
	BucketSeconds float64         `json:"bucketSeconds"`
	Buckets       []DensityBucket `json:"buckets"`
}

// DensityBucket is one bucket [T, T + BucketSeconds).
type DensityBucket struct {
	T float64 `json:"t"` // seconds after Start
	// Submitted counts the tasks of the jobs that arrived in the bucket;
	// Started the task starts in it (restarts included).
	Submitted int `json:"submitted"`
	Started   int `json:"started"`
	// ActiveWorkers counts workers running at least one task at the end
	// of the bucket, PeakActiveWorkers the most at any instant in it.
	ActiveWorkers     int `json:"activeWorkers"`
	PeakActiveWorkers int `json:"peakActiveWorkers"`
	// EnabledWorkers counts workers not disabled at the end of the bucket.
	EnabledWorkers int `json:"enabledWorkers"`
}

// maxDensityBuckets bounds the series; a finer bucket is coarsened.
const maxDensityBuckets = density.MaxRecorded

// densityResult renders a recorded series as the report's.
func densityResult(step time.Duration, counts []density.Counts) *Density {
	out := &Density{BucketSeconds: step.Seconds(), Buckets: make([]DensityBucket, len(counts))}
	for i, c := range counts {
		out.Buckets[i] = DensityBucket{T: time.Duration(int64(i) * int64(step)).Seconds(), Submitted: c.Submitted, Started: c.Started,
			ActiveWorkers: c.ActiveWorkers, PeakActiveWorkers: c.PeakActiveWorkers, EnabledWorkers: c.EnabledWorkers}
	}
	return out
}
