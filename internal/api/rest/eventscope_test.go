package rest

import (
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
)

// The event log is fleet-wide, but an event's message may quote the spec
// of its job (an input that could not be read, a command that would not
// start): a submitter reads the messages of its own jobs' events only.
func TestEventMessagesOfOtherTeamsJobsAreWithheld(t *testing.T) {
	s := newAuthServer(t, "batch")
	alice := s.token(t, api.CreateToken{Name: "alice", Role: "submitter", Queues: []string{"batch"}, Shares: []string{"a"}})
	bob := s.token(t, api.CreateToken{Name: "bob", Role: "submitter", Queues: []string{"batch"}, Shares: []string{"b"}})
	doc := "id: bob-job\nqueue: batch\nshare: b\ninputs: [/nonexistent/bob-secret-plan.tif]\ntasks: [{name: x, run: 'true'}]\n"
	status, _, raw, _ := s.as(t, bob.Secret, "POST", "/v1/jobs", doc)
	if status/100 != 2 {
		t.Fatalf("submit: %d %s", status, raw)
	}
	messages := func(secret string) string {
		var evs []api.Event
		s.must(t, 200, secret, "GET", "/v1/events", "", &evs)
		var out []string
		for _, e := range evs {
			if e.Job == "bob-job" {
				out = append(out, e.Kind+": "+e.Message)
			}
		}
		if len(out) == 0 {
			t.Fatal("no events about bob-job")
		}
		return strings.Join(out, "\n")
	}
	if got := messages(bob.Secret); !strings.Contains(got, "bob-secret-plan") {
		t.Errorf("the job's own team reads:\n%s\nwant the input named", got)
	}
	if got := messages(s.admin); !strings.Contains(got, "bob-secret-plan") {
		t.Errorf("an admin reads:\n%s\nwant the input named", got)
	}
	if got := messages(alice.Secret); strings.Contains(got, "bob-secret-plan") {
		t.Errorf("another team reads:\n%s\nwant no message quoting bob's spec", got)
	}
}
