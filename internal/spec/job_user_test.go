package spec

import (
	"strings"
	"testing"
	"time"
)

func TestJobUserIsReadCheckedAndCarriedToTheModel(t *testing.T) {
	var j Job
	if _, err := Decode([]byte("id: etl\nuser: svc-etl\ntasks: [{name: t, run: 'true'}]\n"), &j); err != nil {
		t.Fatal(err)
	}
	if j.User != "svc-etl" {
		t.Fatalf("user = %q, want svc-etl", j.User)
	}
	ex, err := j.Expand("", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if ex.Job.User != "svc-etl" {
		t.Errorf("model user = %q, want svc-etl", ex.Job.User)
	}

	for _, tc := range []struct {
		name, user string
		ok         bool
	}{
		{"a plain name", "alice", true},
		{"underscore, digits, dash and dot", "_svc.etl-2", true},
		{"a machine account's trailing dollar", "host1$", true},
		{"32 characters", strings.Repeat("u", 32), true},
		{"33 characters", strings.Repeat("u", 33), false},
		{"a number, which reads as a uid", "1000", false},
		{"a leading dash, which reads as an option", "-root", false},
		{"a slash", "a/b", false},
		{"a colon, the passwd separator", "a:b", false},
		{"a space", "a b", false},
		{"a dollar inside", "a$b", false},
		{"a newline", "alice\nroot", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := Job{User: tc.user, Tasks: []Task{{Name: "t"}}}
			_, err := job.Expand("jobs[0]", time.Time{})
			switch {
			case tc.ok && err != nil:
				t.Errorf("user %q refused: %v", tc.user, err)
			case !tc.ok && (err == nil || !strings.Contains(err.Error(), "jobs[0].user: ")):
				t.Errorf("user %q: err = %v, want an error naming jobs[0].user", tc.user, err)
			}
		})
	}
}
