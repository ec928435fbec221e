package spec

import (
	"strings"
	"testing"
	"time"
)

func TestSubmissionRefusesAResultReferenceItCannotResolve(t *testing.T) {
	cases := []struct {
		name, run string
		want      string // "" when the job is accepted
	}{
		{"a field of the result", "echo ${tasks.p.result.a}", ""},
		{"two fields", "echo ${tasks.p.result.a} ${tasks.p.result.b-c}", ""},
		{"the shell's own variables", `echo ${HOME} $tasks ${tasks_dir}`, ""},
		{"a nested field", "echo ${tasks.p.result.a.b}",
			`tasks[1].run: ${tasks.p.result.a.b} is not a result reference the run can resolve: write ${tasks.NAME.result.FIELD}, FIELD a top-level field of the result (nested fields are not supported)`},
		{"no field", "echo ${tasks.p.result}", `tasks[1].run: ${tasks.p.result} is not a result reference`},
		{"no result", "echo ${tasks.p}", `tasks[1].run: ${tasks.p} is not a result reference`},
		{"not closed", "echo ${tasks.p.result.a", `tasks[1].run: ${tasks.p.result.a is not a result reference`},
		{"after a good one", "echo ${tasks.p.result.a} ${tasks.p.result.x[0]}", `tasks[1].run: ${tasks.p.result.x[0]} is not`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := Job{Tasks: []Task{{Name: "p", Run: "true"}, {Name: "c", Needs: []string{"p"}, Run: tc.run}}}
			_, err := j.Expand("", time.Time{})
			if err == nil {
				err = j.CheckRunnable("")
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
