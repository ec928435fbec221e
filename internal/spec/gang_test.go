package spec

import (
	"strconv"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

func TestGangFieldsThatCannotHoldAreRefusedNamingTheField(t *testing.T) {
	for _, tt := range []struct {
		name, doc, field string
		words            []string
	}{
		{"minAvailable above the job's tasks", "minAvailable: 5\ntasks: [{name: t, run: x, count: 4}]", "minAvailable", []string{"5", "4 tasks"}},
		{"minAvailable above the entry's count", "tasks: [{name: t, run: x, count: 4, minAvailable: 6}]", "tasks[0].minAvailable", []string{"6", "count of 4"}},
		{"a written minAvailable of 0", "minAvailable: 0\ntasks: [{name: t, run: x}]", "minAvailable", []string{"at least 1"}},
		{"a negative minAvailable", "tasks: [{name: t, run: x, count: 2, minAvailable: -1}]", "tasks[0].minAvailable", []string{"at least 1"}},
		{"a job gang over a DAG", "gang: true\ntasks: [{name: a, run: x}, {name: b, run: x, needs: [a]}]", "gang", []string{"tasks[1]", "stage"}},
		{"a gang on the job and a stage", "gang: true\ntasks: [{name: a, run: x, count: 2, minAvailable: 2}]", "tasks[0].minAvailable", []string{"not both"}},
		{"maxSlots below the gang", "maxSlots: 2\ngang: true\ntasks: [{name: a, run: x, count: 4}]", "gang", []string{"maxSlots", "never start"}},
		{"maxSlots below a stage's gang", "maxSlots: 2\ntasks: [{name: a, run: x, count: 4, gang: true}]", "tasks[0].gang", []string{"maxSlots", "never start"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantField(t, refusal(t, tt.doc), tt.field, tt.words...)
		})
	}
}

func TestGangsMarkTheirMembers(t *testing.T) {
	for _, tt := range []struct {
		name string
		job  Job
		want []string // task name=gang/min
	}{
		{"the whole job", Job{Gang: true, Tasks: []Task{{Name: "w", Count: 3}}},
			[]string{"w-0=job/3", "w-1=job/3", "w-2=job/3"}},
		{"the whole job, at least 2", Job{MinAvailable: 2, Tasks: []Task{{Name: "a"}, {Name: "w", Count: 2}}},
			[]string{"a=job/2", "w-0=job/2", "w-1=job/2"}},
		{"a stage of a DAG", Job{Tasks: []Task{{Name: "prep"}, {Name: "train", Count: 2, Gang: true, Needs: []string{"prep"}}, {Name: "eval", Needs: []string{"train"}}}},
			[]string{"prep=/0", "train-0=train/2", "train-1=train/2", "eval=/0"}},
		{"a stage, at least 3 of 4", Job{Tasks: []Task{{Name: "w", Count: 4, MinAvailable: 3}}},
			[]string{"w-0=w/3", "w-1=w/3", "w-2=w/3", "w-3=w/3"}},
		{"no gang", Job{Tasks: []Task{{Name: "w", Count: 2}}}, []string{"w-0=/0", "w-1=/0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ex, err := tt.job.Expand("", time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, task := range ex.Job.Tasks {
				got = append(got, gangOf(task))
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("got %v, want %v", got, tt.want)
					break
				}
			}
		})
	}
}

func gangOf(t model.Task) string {
	return t.Name + "=" + t.Gang + "/" + strconv.Itoa(t.GangMin)
}
