package control

import (
	"context"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/spec"
)

// A bulk submission of the most jobs one call may carry, none naming an
// ID, all in one round and so at one instant: the server names every job,
// and no two names may meet (a repeat would refuse a valid job as "ID
// taken").
func TestServerNamedJobsOfOneRoundAllDiffer(t *testing.T) {
	p := newPlane(t)
	specs := make([]spec.Job, 10000)
	for i := range specs {
		specs[i] = spec.Job{Tasks: []spec.Task{{Name: "t", Run: "true"}}}
	}
	// Ten thousand jobs take seconds under the race detector on a busy
	// machine: more than testTimeout, which bounds one request.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := p.c.SubmitManyBy(ctx, "", specs)
	if err != nil {
		t.Fatal(err)
	}
	seen := make(map[string]bool, len(out))
	for i, s := range out {
		if s.Err != nil {
			t.Fatalf("job %d refused: %v", i, s.Err)
		}
		if seen[s.Job.ID] {
			t.Fatalf("job %d: ID %s given twice", i, s.Job.ID)
		}
		seen[s.Job.ID] = true
	}
}
