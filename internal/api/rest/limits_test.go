package rest

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
)

// jobDoc is a one-task job in the batch queue with extra YAML lines.
func jobDoc(id string, extra ...string) string {
	return "id: " + id + "\nqueue: batch\n" + strings.Join(extra, "\n") + "\ntasks: [{name: x, run: 'sleep 60'}]\n"
}

func TestSubmitterMaySetOnlyWhatItsTokenAllows(t *testing.T) {
	s := newAuthServer(t, "batch")
	plain := s.token(t, api.CreateToken{Name: "alice", Role: "submitter", Queues: []string{"batch"}, Shares: []string{"*"}})
	grid := s.token(t, api.CreateToken{Name: "grid", Role: "submitter", Queues: []string{"batch"}, Shares: []string{"*"},
		MaxPriority: 5, Urgent: true, Requestors: []string{"team-a-*"}, SLAGroups: []string{"silver"}, Users: []string{"svc-a-*"}})
	cases := []struct {
		name    string
		token   string
		doc     string
		field   string // "" = accepted (201)
		message string
	}{
		{"defaults: priority", plain.Secret, jobDoc("p1", "priority: 999"), "priority", "priority 999 is above this token's maximum priority 0"},
		{"defaults: urgent", plain.Secret, jobDoc("p2", "urgent: true"), "urgent", "this token may not make jobs urgent"},
		{"defaults: another requestor", plain.Secret, jobDoc("p3", "requestor: bob"), "requestor",
			`requestor "bob" is not allowed for this token (allowed: its own name "alice")`},
		{"defaults: an SLA group", plain.Secret, jobDoc("p4", "slaGroup: gold"), "slaGroup", `slaGroup "gold" is not allowed for this token (allowed: none)`},
		{"defaults: json body", plain.Secret, `{"id":"p5","queue":"batch","priority":1,"tasks":[{"name":"x","run":"true"}]}`, "priority", ""},
		{"defaults: a run-as user", plain.Secret, jobDoc("p7", "user: svc-a-1"), "user", `user "svc-a-1" is not allowed for this token (allowed: none)`},
		{"limits: another team's user", grid.Secret, jobDoc("g4", "user: svc-b-1"), "user", `user "svc-b-1" is not allowed for this token (allowed: svc-a-*)`},
		{"limits: priority above", grid.Secret, jobDoc("g1", "priority: 6"), "priority", "priority 6 is above this token's maximum priority 5"},
		{"limits: another team's requestor", grid.Secret, jobDoc("g2", "requestor: team-b-1"), "requestor",
			`requestor "team-b-1" is not allowed for this token (allowed: team-a-*)`},
		{"limits: another SLA group", grid.Secret, jobDoc("g3", "slaGroup: gold"), "slaGroup", `slaGroup "gold" is not allowed for this token (allowed: silver)`},
		{"invalid and beyond the limits: the spec is checked first", plain.Secret, jobDoc("p6", "priority: 9", "maxSlots: -1"), "maxSlots", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := 403
			if tc.field == "maxSlots" {
				want = 400
			}
			s.refusedSubmission(t, tc.token, tc.doc, want, tc.field, tc.message)
		})
	}
	s.nothingSubmitted(t)
	// Within the limits, and for an admin without any.
	s.must(t, 201, plain.Secret, "POST", "/v1/jobs", jobDoc("ok-plain", "requestor: alice"), nil)
	s.must(t, 201, grid.Secret, "POST", "/v1/jobs", jobDoc("ok-grid", "priority: 5", "urgent: true", "requestor: team-a-etl", "slaGroup: silver", "user: svc-a-etl"), nil)
	s.must(t, 201, s.admin, "POST", "/v1/jobs", jobDoc("ok-admin", "priority: 9999", "urgent: true", "requestor: anyone", "slaGroup: gold"), nil)
	if ids := s.jobIDs(t); len(ids) != 3 {
		t.Errorf("jobs %v, want the three allowed ones", ids)
	}
}

func TestPriorityChangesObeyTheTokenLimits(t *testing.T) {
	s := newAuthServer(t, "batch")
	plain := s.token(t, api.CreateToken{Name: "alice", Role: "submitter", Queues: []string{"batch"}, Shares: []string{"*"}})
	grid := s.token(t, api.CreateToken{Name: "grid", Role: "submitter", Queues: []string{"batch"}, Shares: []string{"*"}, MaxPriority: 5})
	s.must(t, 201, plain.Secret, "POST", "/v1/jobs", jobDoc("j"), nil)
	cases := []struct {
		token, body, field string
	}{
		{plain.Secret, `{"priority":999}`, "priority"},
		{plain.Secret, `{"priority":1}`, "priority"},
		{plain.Secret, `{"priority":0,"urgent":true}`, "urgent"},
		{grid.Secret, `{"priority":6}`, "priority"},
		{grid.Secret, `{"priority":5,"urgent":true}`, "urgent"},
	}
	for _, tc := range cases {
		status, eb, raw, _ := s.as(t, tc.token, "POST", "/v1/jobs/j/priority", tc.body)
		if status != 403 || eb.Error.Code != api.CodeForbidden || eb.Error.Field != tc.field {
			t.Errorf("%s: %d %s, want 403 naming %q", tc.body, status, raw, tc.field)
		}
	}
	var j api.Job
	s.must(t, 200, s.admin, "GET", "/v1/jobs/j", "", &j)
	if j.Priority != 0 || j.Urgent {
		t.Fatalf("refused priority changes changed the job: priority %d urgent %v", j.Priority, j.Urgent)
	}
	var events []api.Event
	s.must(t, 200, s.admin, "GET", "/v1/events?job=j", "", &events)
	for _, e := range events {
		if e.Kind == "priority_changed" {
			t.Errorf("a refused change wrote %+v", e)
		}
	}
	s.must(t, 200, grid.Secret, "POST", "/v1/jobs/j/priority", `{"priority":5}`, &j)
	s.must(t, 200, plain.Secret, "POST", "/v1/jobs/j/priority", `{"priority":0}`, &j) // lowering is allowed
	s.must(t, 200, s.admin, "POST", "/v1/jobs/j/priority", `{"priority":9999,"urgent":true}`, &j)
	if j.Priority != 9999 || !j.Urgent {
		t.Errorf("admin change: priority %d urgent %v", j.Priority, j.Urgent)
	}
}

func TestJobsRecordWhoSubmittedThem(t *testing.T) {
	s := newAuthServer(t, "batch")
	alice := s.token(t, api.CreateToken{Name: "alice", Role: "submitter", Queues: []string{"batch"}, Shares: []string{"*"}})
	nameless := s.token(t, api.CreateToken{Role: "submitter", Queues: []string{"batch"}, Shares: []string{"*"}})
	for _, tc := range []struct{ token, id, want string }{
		{alice.Secret, "by-alice", "alice"},
		{nameless.Secret, "by-nameless", nameless.ID},
		{s.admin, "by-admin", "bootstrap admin"},
	} {
		var created, got api.Job
		s.must(t, 201, tc.token, "POST", "/v1/jobs", jobDoc(tc.id), &created)
		s.must(t, 200, s.admin, "GET", "/v1/jobs/"+tc.id, "", &got)
		if created.Submitter != tc.want || got.Submitter != tc.want {
			t.Errorf("%s: submitter %q on creation, %q on read, want %q", tc.id, created.Submitter, got.Submitter, tc.want)
		}
		var events []api.Event
		s.must(t, 200, s.admin, "GET", "/v1/events?job="+tc.id, "", &events)
		var data struct {
			Submitter string `json:"submitter"`
		}
		if len(events) == 0 || events[0].Kind != "job_submitted" || json.Unmarshal(events[0].Data, &data) != nil || data.Submitter != tc.want {
			t.Errorf("%s: events %+v, want job_submitted with submitter %q", tc.id, events, tc.want)
		}
	}
	var list api.JobList
	s.must(t, 200, alice.Secret, "GET", "/v1/jobs", "", &list)
	subs := map[string]string{}
	for _, j := range list.Jobs {
		subs[j.ID] = j.Submitter
	}
	if subs["by-alice"] != "alice" || subs["by-admin"] != "bootstrap admin" {
		t.Errorf("the job list shows submitters %v", subs)
	}
}

func TestConflictForATakenIDSaysNothingAboutItsJob(t *testing.T) {
	s := newAuthServer(t, "batch")
	alice := s.token(t, api.CreateToken{Name: "alice", Role: "submitter", Queues: []string{"batch"}, Shares: []string{"research"}})
	bob := s.token(t, api.CreateToken{Name: "bob", Role: "submitter", Queues: []string{"batch"}, Shares: []string{"ops"}})
	doc := func(id, share string) string { return jobDoc(id, "share: "+share) }
	s.must(t, 201, alice.Secret, "POST", "/v1/jobs", doc("taken", "research"), nil)
	s.must(t, 201, alice.Secret, "POST", "/v1/jobs", jobDoc("ended", "share: research"), nil)
	s.must(t, 200, alice.Secret, "POST", "/v1/jobs/ended/cancel", "", nil)

	// The same ID from its owner (with another body: the same body is a
	// duplicate, TestASubmissionSentAgainIsADuplicateOnlyForTheSameBodyAndCaller)
	// and from another team: one answer.
	_, _, own, ownHeader := s.as(t, alice.Secret, "POST", "/v1/jobs", "id: taken\nqueue: batch\nshare: research\ntasks: [{name: x, run: 'sleep 61'}]\n")
	status, eb, other, otherHeader := s.as(t, bob.Secret, "POST", "/v1/jobs", doc("taken", "ops"))
	if status != 409 || eb.Error.Code != api.CodeConflict || eb.Error.Field != "id" {
		t.Fatalf("another team's ID: %d %s, want 409 conflict naming id", status, other)
	}
	if !bytes.Equal(own, other) || ownHeader.Get("Content-Type") != otherHeader.Get("Content-Type") {
		t.Errorf("the owner gets %s, another team %s: want the same bytes", own, other)
	}
	want := `job ID "taken" is taken: choose another, or leave id out and the server makes one`
	if eb.Error.Message != want || len(eb.Error.Details) != 0 || eb.Error.Line != 0 {
		t.Errorf("answer %s, want only the message %q", other, want)
	}
	for _, leak := range []string{"research", "alice", "pending", "running", "batch", "sleep"} {
		if bytes.Contains(other, []byte(leak)) {
			t.Errorf("the conflict answer %s tells %q", other, leak)
		}
	}
	// A live job and an ended one get the same answer but for the ID.
	_, _, ended, _ := s.as(t, bob.Secret, "POST", "/v1/jobs", doc("ended", "ops"))
	if got := bytes.ReplaceAll(ended, []byte(`\"ended\"`), []byte(`\"taken\"`)); !bytes.Equal(got, other) {
		t.Errorf("an ended job's ID answers %s, a live one's %s: want the same but for the ID", ended, other)
	}
	// Nothing changed: bob has no job, alice's are as they were.
	var list api.JobList
	s.must(t, 200, bob.Secret, "GET", "/v1/jobs", "", &list)
	if len(list.Jobs) != 0 {
		t.Errorf("bob's refused submissions stored %+v", list.Jobs)
	}
	var j api.Job
	s.must(t, 200, s.admin, "GET", "/v1/jobs/taken", "", &j)
	if j.Share != "research" || j.Submitter != "alice" {
		t.Errorf("the taken job changed: %+v", j)
	}
}

func TestTokenLimitsAreShownAndChecked(t *testing.T) {
	s := newAuthServer(t, "batch")
	for _, tc := range []struct{ body, field string }{
		{`{"role":"submitter","queues":["*"],"shares":["*"],"maxPriority":-1}`, "maxPriority"},
		{`{"role":"submitter","queues":["*"],"shares":["*"],"requestors":["a*b"]}`, "requestors[0]"},
		{`{"role":"submitter","queues":["*"],"shares":["*"],"users":[""]}`, "users[0]"},
		{`{"role":"submitter","queues":["*"],"shares":["*"],"slaGroups":["go ld"]}`, "slaGroups[0]"},
		{`{"role":"worker","workers":["*"],"users":["build"]}`, "users"},
		{`{"role":"admin","urgent":true}`, "urgent"},
		{`{"role":"submitter","queues":["*"],"shares":["*"],"maxPriority":"high"}`, "maxPriority"},
	} {
		if status, eb, raw, _ := s.as(t, s.admin, "POST", "/v1/tokens", tc.body); status != 400 || eb.Error.Field != tc.field {
			t.Errorf("%s: %d %s, want 400 naming %q", tc.body, status, raw, tc.field)
		}
	}
	made := s.token(t, api.CreateToken{Name: "grid", Role: "submitter", Queues: []string{"*"}, Shares: []string{"*"},
		MaxPriority: 7, Urgent: true, Requestors: []string{"team-a-*", "ci"}, SLAGroups: []string{"gold"}, Users: []string{"svc-*"}})
	plain := s.token(t, api.CreateToken{Name: "plain", Role: "submitter", Queues: []string{"*"}, Shares: []string{"*"}})
	worker := s.token(t, api.CreateToken{Role: "worker", Workers: []string{"*"}})
	var list []api.Token
	s.must(t, 200, s.admin, "GET", "/v1/tokens", "", &list)
	byID := map[string]api.Token{}
	for _, tok := range list {
		byID[tok.ID] = tok
	}
	g, p, w := byID[made.ID], byID[plain.ID], byID[worker.ID]
	if g.MaxPriority == nil || *g.MaxPriority != 7 || !g.Urgent || strings.Join(g.Requestors, ",") != "ci,team-a-*" ||
		strings.Join(g.SLAGroups, ",") != "gold" || strings.Join(g.Users, ",") != "svc-*" {
		t.Errorf("the limited token lists as %+v", g)
	}
	if p.MaxPriority == nil || *p.MaxPriority != 0 || p.Urgent || p.Requestors != nil || p.SLAGroups != nil || p.Users != nil {
		t.Errorf("the plain submitter lists as %+v, want maxPriority 0 shown and nothing else", p)
	}
	if w.MaxPriority != nil {
		t.Errorf("a worker token lists a maximum priority: %+v", w)
	}
}
