package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

func TestDependsOnIsReadCheckedAndTyped(t *testing.T) {
	var j Job
	doc := "id: c\ndependsOn:\n- job: a\n- {job: b, type: afterany}\ntasks: [{name: t, run: 'true'}]\n"
	if _, err := Decode([]byte(doc), &j); err != nil {
		t.Fatal(err)
	}
	ex, err := j.Expand("", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	want := []model.JobDependency{{Job: "a", Type: model.AfterOK}, {Job: "b", Type: model.AfterAny}}
	if len(ex.Job.DependsOn) != 2 || ex.Job.DependsOn[0] != want[0] || ex.Job.DependsOn[1] != want[1] {
		t.Fatalf("dependsOn = %v, want %v", ex.Job.DependsOn, want)
	}
	for _, tc := range []struct {
		name string
		deps []model.JobDependency
		path string
	}{
		{"no job", []model.JobDependency{{Type: model.After}}, "dependsOn[0].job"},
		{"itself", []model.JobDependency{{Job: "c"}}, "dependsOn[0].job"},
		{"a bad ID", []model.JobDependency{{Job: "a/b"}}, "dependsOn[0].job"},
		{"twice", []model.JobDependency{{Job: "a"}, {Job: "a", Type: model.AfterAny}}, "dependsOn[1].job"},
		{"an unknown type", []model.JobDependency{{Job: "a", Type: "afterwards"}}, "dependsOn[0].type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := Job{ID: "c", DependsOn: tc.deps, Tasks: []Task{{Name: "t"}}}
			_, err := job.Expand("", time.Time{})
			if err == nil || !strings.Contains(err.Error(), tc.path+": ") {
				t.Fatalf("err = %v, want one at %s", err, tc.path)
			}
		})
	}
}
