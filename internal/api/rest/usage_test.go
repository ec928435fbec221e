package rest

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/store"
)

// ?mine=true lists the jobs the caller's token submitted; ?submitter=
// names a token.
func TestListMineKeepsTheCallersJobs(t *testing.T) {
	s := newAuthServer(t, "batch")
	ann := s.token(t, api.CreateToken{Role: "submitter", Name: "ann", Queues: []string{"*"}, Shares: []string{"*"}})
	bob := s.token(t, api.CreateToken{Role: "submitter", Name: "bob", Queues: []string{"*"}, Shares: []string{"*"}})
	for _, sub := range []struct{ secret, id string }{{ann.Secret, "a1"}, {bob.Secret, "b1"}, {ann.Secret, "a2"}, {s.admin, "adm"}} {
		s.must(t, 201, sub.secret, "POST", "/v1/jobs", fmt.Sprintf(`{"id":%q,"queue":"batch","tasks":[{"name":"t","run":"true"}]}`, sub.id), nil)
	}
	for _, tc := range []struct {
		secret, query string
		want          string
	}{
		{ann.Secret, "?mine=true", "a1 a2"},
		{bob.Secret, "?mine=true", "b1"},
		{ann.Secret, "", "a1 b1 a2 adm"},
		{s.admin, "?submitter=ann", "a1 a2"},
		{bob.Secret, "?mine=false", "a1 b1 a2 adm"},
	} {
		var list api.JobList
		s.must(t, 200, tc.secret, "GET", "/v1/jobs"+tc.query, "", &list)
		var ids []string
		for _, j := range list.Jobs {
			ids = append(ids, j.ID)
		}
		if got := strings.Join(ids, " "); got != tc.want {
			t.Errorf("GET /v1/jobs%s: %s, want %s", tc.query, got, tc.want)
		}
	}
	if status, eb, _, _ := s.as(t, ann.Secret, "GET", "/v1/jobs?mine=yes", ""); status != 400 || eb.Error.Field != "mine" {
		t.Errorf("mine=yes: %d %+v", status, eb)
	}
}

// GET /v1/usage answers the period asked for; a submitter sees only the
// shares of its scope and its own row.
func TestUsageRouteScopesWhatASubmitterSees(t *testing.T) {
	s := newAuthServer(t, "batch")
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	err := s.st.Commit(t.Context(), store.Batch{Attempts: []store.Attempt{
		{Job: "a", Task: "t", Attempt: 1, Share: "research", Submitter: "ann", Started: day, Ended: day.Add(time.Hour)},
		{Job: "b", Task: "t", Attempt: 1, Share: "ops", Submitter: "bob", Started: day, Ended: day.Add(2 * time.Hour)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ann := s.token(t, api.CreateToken{Role: "submitter", Name: "ann", Queues: []string{"*"}, Shares: []string{"research"}})
	period := "?since=2026-03-02T00:00:00Z&until=2026-03-03T00:00:00Z"
	var all, mine api.Usage
	s.must(t, 200, s.admin, "GET", "/v1/usage"+period, "", &all)
	s.must(t, 200, ann.Secret, "GET", "/v1/usage"+period, "", &mine)
	if len(all.Shares) != 2 || all.Total.SlotHours != 3 || len(all.Submitters) != 2 {
		t.Errorf("admin sees %+v", all)
	}
	if len(mine.Shares) != 1 || mine.Shares[0].Name != "research" || mine.Total.SlotHours != 1 ||
		len(mine.Submitters) != 1 || mine.Submitters[0].Name != "ann" {
		t.Errorf("ann sees %+v", mine)
	}
	for _, q := range []string{"?since=yesterday", "?since=2026-03-03T00:00:00Z&until=2026-03-02T00:00:00Z"} {
		if status, eb, raw, _ := s.as(t, s.admin, "GET", "/v1/usage"+q, ""); status != 400 || eb.Error.Field == "" {
			t.Errorf("%s: %d %s, want 400 naming the field", q, status, raw)
		}
	}
}

// Output chunks need the worker's token and the attempt's secret, and
// reach GET /v1/jobs/{id}/logs, from an offset on.
func TestOutputChunksNeedTheAttemptsSecretAndAreServedFromAnOffset(t *testing.T) {
	s := newAuthServer(t, "batch")
	w := s.token(t, api.CreateToken{Role: "worker", Workers: []string{"w1"}})
	s.must(t, 200, w.Secret, "POST", "/v1/workers", `{"name":"w1","slots":1,"resources":{"cpu":"1","memory":"1Gi"}}`, nil)
	s.must(t, 201, s.admin, "POST", "/v1/jobs", `{"id":"j","queue":"batch","tasks":[{"name":"t","run":"true"}]}`, nil)
	var l api.Lease
	s.must(t, 200, w.Secret, "POST", "/v1/workers/w1/lease", `{}`, &l)
	a := l.Assignments[0]
	send := func(secret string, off int64, data string) (int, []byte) {
		body, _ := json.Marshal(api.OutputChunks{Chunks: []api.OutputChunk{{Attempt: a.Attempt, Secret: secret, Offset: off, Data: []byte(data)}}})
		status, _, raw, _ := s.as(t, w.Secret, "POST", "/v1/workers/w1/output", string(body))
		return status, raw
	}
	if status, raw := send("guessed", 0, "forged\n"); status != 403 {
		t.Errorf("a chunk without the secret: %d %s", status, raw)
	}
	for _, c := range []struct {
		off  int64
		data string
	}{{0, "one\n"}, {4, "two\n"}, {0, "one\n"}} {
		if status, raw := send(a.Secret, c.off, c.data); status != 204 {
			t.Fatalf("chunk at %d: %d %s", c.off, status, raw)
		}
	}
	var logs api.Logs
	s.must(t, 200, s.admin, "GET", "/v1/jobs/j/logs", "", &logs)
	if len(logs.Tasks) != 1 || logs.Tasks[0].Output != "one\ntwo\n" || !logs.Tasks[0].Running || logs.Tasks[0].Total != 8 {
		t.Errorf("logs %+v", logs)
	}
	s.must(t, 200, s.admin, "GET", "/v1/jobs/j/logs?task=t&attempt=1&offset=4", "", &logs)
	if logs.Tasks[0].Output != "two\n" || logs.Tasks[0].Offset != 4 || logs.Tasks[0].Dropped != 0 {
		t.Errorf("from offset 4: %+v", logs.Tasks[0])
	}
	for _, q := range []string{"?task=nope", "?attempt=2"} {
		if status, _, raw, _ := s.as(t, s.admin, "GET", "/v1/jobs/j/logs"+q, ""); status != 404 {
			t.Errorf("%s: %d %s, want 404", q, status, raw)
		}
	}
	if status, eb, _, _ := s.as(t, s.admin, "GET", "/v1/jobs/j/logs?offset=-1", ""); status != 400 || eb.Error.Field != "offset" {
		t.Errorf("offset=-1: %d %+v", status, eb)
	}
}

// A chunk's offset must be a place in an output: not negative, and not so
// far that the chunk would end past store.MaxOutputEnd (near the end of
// int64 offset plus length overflows, and the output read back had a
// negative total and lost what was stored). The 400 names the chunk's
// offset, says nothing of the store, and what was stored stays readable.
func TestOutputChunksAtAnImpossibleOffsetAreRefusedNamingIt(t *testing.T) {
	s := newAuthServer(t, "batch")
	w := s.token(t, api.CreateToken{Role: "worker", Workers: []string{"w1"}})
	s.must(t, 200, w.Secret, "POST", "/v1/workers", `{"name":"w1","slots":1,"resources":{"cpu":"1","memory":"1Gi"}}`, nil)
	s.must(t, 201, s.admin, "POST", "/v1/jobs", `{"id":"out-1","queue":"batch","tasks":[{"name":"t","run":"true"}]}`, nil)
	var l api.Lease
	s.must(t, 200, w.Secret, "POST", "/v1/workers/w1/lease", `{}`, &l)
	a := l.Assignments[0]
	send := func(offs ...int64) (int, api.ErrorBody, []byte) {
		var req api.OutputChunks
		for _, off := range offs {
			req.Chunks = append(req.Chunks, api.OutputChunk{Attempt: a.Attempt, Secret: a.Secret, Offset: off, Data: []byte("hello\n")})
		}
		body, _ := json.Marshal(req)
		status, eb, raw, _ := s.as(t, w.Secret, "POST", "/v1/workers/w1/output", string(body))
		return status, eb, raw
	}
	if status, _, raw := send(0); status != 204 {
		t.Fatalf("the first chunk: %d %s", status, raw)
	}
	for _, tc := range []struct {
		offs  []int64
		field string
	}{
		{[]int64{-5}, "chunks[0].offset"},
		{[]int64{math.MaxInt64 - 1}, "chunks[0].offset"},
		{[]int64{store.MaxOutputEnd - 5}, "chunks[0].offset"},
		{[]int64{6, math.MaxInt64 - 1}, "chunks[1].offset"},
	} {
		status, eb, raw := send(tc.offs...)
		if status != 400 || eb.Error.Field != tc.field {
			t.Errorf("chunks at %v: %d %s, want 400 naming %s", tc.offs, status, raw, tc.field)
		}
		if strings.Contains(eb.Error.Message, "sqlite") || strings.Contains(eb.Error.Message, "postgres") {
			t.Errorf("chunks at %v: the message tells of the store: %s", tc.offs, eb.Error.Message)
		}
	}
	var logs api.Logs
	s.must(t, 200, s.admin, "GET", "/v1/jobs/out-1/logs", "", &logs)
	if tl := logs.Tasks[0]; tl.Output != "hello\n" || tl.Total != 6 || tl.Dropped != 0 {
		t.Errorf("logs after the refused chunks: %+v, want hello\\n of 6 bytes", tl)
	}
}

// A submitter's /v1/usage counts only the attempts of jobs it may read:
// its queues and its shares both. A token named like the submitter of
// attempts in another scope (alice of team A, revoked, and alice of team
// B) sees nothing of them, and a token of queue qb sees no share rows of
// attempts that ran in queue qa.
func TestUsageOfASubmitterKeepsToTheJobsItMayRead(t *testing.T) {
	s := newAuthServer(t, "qa", "qb")
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	hours := func(n int) time.Time { return day.Add(time.Duration(n) * time.Hour) }
	err := s.st.Commit(t.Context(), store.Batch{Attempts: []store.Attempt{
		{Job: "a1", Task: "t", Attempt: 1, Queue: "qa", Share: "teama", Submitter: "alice", Started: day, Ended: hours(1)},
		{Job: "a2", Task: "t", Attempt: 1, Queue: "qa", Share: "teama", Submitter: "alice", Started: day, Ended: hours(2)},
		{Job: "a3", Task: "t", Attempt: 1, Queue: "qa", Share: "teamb", Submitter: "carol", Started: day, Ended: hours(4)},
		{Job: "b1", Task: "t", Attempt: 1, Queue: "qb", Share: "teamb", Submitter: "bob", Started: day, Ended: hours(8)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	aliceA := s.token(t, api.CreateToken{Role: "submitter", Name: "alice", Queues: []string{"qa"}, Shares: []string{"teama"}})
	s.must(t, 200, s.admin, "DELETE", "/v1/tokens/"+aliceA.ID, "", nil)
	aliceB := s.token(t, api.CreateToken{Role: "submitter", Name: "alice", Queues: []string{"qb"}, Shares: []string{"teamb"}})
	qbAny := s.token(t, api.CreateToken{Role: "submitter", Name: "qb-any", Queues: []string{"qb"}, Shares: []string{"*"}})
	period := "?since=2026-03-02T00:00:00Z&until=2026-03-03T00:00:00Z"
	rows := func(rs []api.UsageRow) string {
		var out []string
		for _, r := range rs {
			out = append(out, fmt.Sprintf("%s:%d/%g", r.Name, r.Attempts, r.SlotHours))
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		who, secret               string
		shares, submitters, total string
	}{
		{"admin", s.admin, "teama:2/3 teamb:2/12", "alice:2/3 bob:1/8 carol:1/4", "4/15"},
		{"alice of team B", aliceB.Secret, "teamb:1/8", "", "1/8"},
		{"qb-any", qbAny.Secret, "teamb:1/8", "", "1/8"},
	} {
		var u api.Usage
		s.must(t, 200, tc.secret, "GET", "/v1/usage"+period, "", &u)
		total := fmt.Sprintf("%d/%g", u.Total.Attempts, u.Total.SlotHours)
		if rows(u.Shares) != tc.shares || rows(u.Submitters) != tc.submitters || total != tc.total {
			t.Errorf("%s sees shares %q, submitters %q, total %s; want %q, %q, %s", tc.who, rows(u.Shares), rows(u.Submitters), total,
				tc.shares, tc.submitters, tc.total)
		}
	}
}

// A token's name says whose jobs are whose (a job records it as its
// submitter): a second live token of the same name is refused with a 409
// naming name, and so is a name that is a live token's ID. Once the first
// is revoked the name is free again; tokens without a name are many.
func TestTokenNamesOfLiveTokensAreUnique(t *testing.T) {
	s := newAuthServer(t, "qa", "qb")
	first := s.token(t, api.CreateToken{Role: "submitter", Name: "alice", Queues: []string{"qa"}, Shares: []string{"teama"}})
	status, eb, raw, _ := s.as(t, s.admin, "POST", "/v1/tokens", `{"role":"submitter","name":"alice","queues":["qb"],"shares":["teamb"]}`)
	if status != 409 || eb.Error.Field != "name" || eb.Error.Code != api.CodeConflict {
		t.Errorf("a second token named alice: %d %s, want 409 naming name", status, raw)
	}
	s.must(t, 201, s.admin, "POST", "/v1/tokens", `{"role":"admin"}`, nil)
	nameless := s.token(t, api.CreateToken{Role: "admin"})
	// A nameless token's jobs record its ID as their submitter.
	body := fmt.Sprintf(`{"role":"submitter","name":%q,"queues":["qb"],"shares":["teamb"]}`, nameless.ID)
	if status, eb, raw, _ := s.as(t, s.admin, "POST", "/v1/tokens", body); status != 409 || eb.Error.Field != "name" {
		t.Errorf("a token named as another's ID: %d %s, want 409 naming name", status, raw)
	}
	s.must(t, 200, s.admin, "DELETE", "/v1/tokens/"+first.ID, "", nil)
	s.must(t, 201, s.admin, "POST", "/v1/tokens", `{"role":"submitter","name":"alice","queues":["qb"],"shares":["teamb"]}`, nil)
}
