package engine

import (
	"fmt"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// GangExplain says what a waiting gang waits for (docs/explain.md#gang):
// how many of its tasks must start at once, how many of them the workers
// that can run them could start now, and when enough capacity is expected
// to free, from the declared durations of the tasks running there.
type GangExplain struct {
	// Name is the gang's task entry (stage), or "job" for the whole job.
	Name         string `json:"name"`
	Tasks        int    `json:"tasks"`
	MinAvailable int    `json:"minAvailable"`
	// Need is how many tasks must start together now: MinAvailable, or the
	// tasks left when fewer are.
	Need    int `json:"need"`
	Running int `json:"running"`
	Ready   int `json:"ready"`
	// Free counts the gang's tasks the ready workers that can run them
	// could start now; Capacity those they could run when idle.
	Free     int `json:"free"`
	Capacity int `json:"capacity"`
	// EarliestStart is when enough capacity is expected to have freed,
	// after EndsFirst running tasks end; absent when unknown (a task
	// running where the gang fits has no declared duration).
	EarliestStart *time.Time `json:"earliestStart,omitempty"`
	EndsFirst     int        `json:"endsFirst,omitempty"`
	Message       string     `json:"message"`
}

// explainGang explains j's first gang that waits to start, or returns nil.
func (e *Engine) explainGang(j *job) *GangExplain {
	var gg *gang
	for _, t := range j.tasks {
		if t.gang != nil && !t.gang.launched && t.state == model.TaskReady {
			gg = t.gang
			break
		}
	}
	if gg == nil {
		return nil
	}
	res := e.estimateGang(gg)
	x := &GangExplain{Name: gg.name, Tasks: len(gg.members), MinAvailable: gg.min, Need: res.need,
		Running: gg.count(model.TaskRunning), Ready: gg.count(model.TaskReady), Free: res.free, Capacity: res.total}
	if !res.at.IsZero() && res.total >= res.need {
		at := res.at
		x.EarliestStart, x.EndsFirst = &at, res.ends
	}
	x.Message = res.reason(e.now).Message
	return x
}

// gangHelp says what would let a waiting gang start sooner.
func gangHelp(x *GangExplain) []Help {
	if x == nil || x.Free == 0 || x.Free >= x.Need {
		return nil
	}
	return []Help{{Kind: "gang", Message: fmt.Sprintf("%d of the gang's tasks could start now: with minAvailable: %d the gang would start with them, the rest following as capacity frees", x.Free, x.Free)}}
}
