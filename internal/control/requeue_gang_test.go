package control

import (
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
)

// A requeue of one member of a gang job that ended runs its gang again
// whole: the members that failed or were cancelled with it run again too,
// not the one alone as a gang of one.
func TestRequeueOfAGangMemberOfAnEndedJobRunsTheGangAgain(t *testing.T) {
	lj, err := newLiveJob(spec.Job{ID: "g", Queue: "batch", Gang: true,
		Tasks: []spec.Task{{Name: "rank", Count: 3, Run: "true"}}}, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(lj.model.Tasks) != 3 || lj.model.Tasks[0].Gang == "" {
		t.Fatalf("tasks %+v, want a gang of 3", lj.model.Tasks)
	}
	for i, mt := range lj.model.Tasks {
		lj.tasks[mt.Name].State = string(model.TaskFailed)
		if i == 2 {
			lj.tasks[mt.Name].State = string(model.TaskSucceeded)
		}
	}
	again, err := requeued(lj, lj.model.Tasks[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 2 || !again[lj.model.Tasks[0].Name] || !again[lj.model.Tasks[1].Name] {
		t.Fatalf("requeued %v, want the two failed members", again)
	}
}
