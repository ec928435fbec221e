package rest

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/model"
)

// usage answers GET /v1/usage?since=&until= (RFC 3339 times; the last
// seven days by default): what the attempts of each share and submitter
// used (control.Usage). A submitter's answer counts only the attempts of
// the jobs it may read (its queues and its shares, as GET /v1/jobs/{id}),
// and of the submitters only its own row: names are not scopes (a token
// of another team may be called the same), so the row is of attempts
// within the token's scope alone.
func (s *Server) usage(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.ReadJobs) {
		return
	}
	q := r.URL.Query()
	until, since := time.Now().UTC(), time.Time{}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"until", &until}, {"since", &since}} {
		if v := q.Get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				s.fail(w, model.FieldErrors{{Path: p.name, Msg: fmt.Sprintf("%q is not an RFC 3339 time (2026-03-01T00:00:00Z)", v)}})
				return
			}
			*p.dst = t.UTC()
		}
	}
	if since.IsZero() {
		since = until.Add(-control.DefaultUsagePeriod)
	}
	if !until.After(since) {
		s.fail(w, model.FieldErrors{{Path: "until", Msg: "must be after since"}})
		return
	}
	var sees func(queue, share string) bool
	if p := principal(r); p.Role == auth.Submitter {
		sees = p.Sees
	}
	u, err := control.Usage(r.Context(), s.jobReads().Store(), since, until, sees)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, scopeUsage(principal(r), u))
}

// scopeUsage keeps what p may see of u, summed over the attempts p may
// read (see usage): everything for an admin; for a submitter, its own
// submitter row.
func scopeUsage(p auth.Principal, u api.Usage) api.Usage {
	if p.Role != auth.Submitter {
		return u
	}
	me := p.SubmitterName()
	u.Submitters = slices.DeleteFunc(u.Submitters, func(row api.UsageRow) bool { return row.Name != me })
	return u
}

// output answers POST /v1/workers/{name}/output: chunks of the output of
// the worker's running attempts (control.Controller.AppendOutput).
func (s *Server) output(w http.ResponseWriter, r *http.Request) {
	if !s.check(w, principal(r).ActAs(r.PathValue("name"))) {
		return
	}
	var req api.OutputChunks
	if !s.decodeJSON(w, r, &req) {
		return
	}
	if err := s.ctrl.AppendOutput(r.Context(), r.PathValue("name"), req.Chunks); err != nil {
		s.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// logQuery reads the task, attempt and offset parameters of GET
// /v1/jobs/{id}/logs.
func logQuery(r *http.Request) (api.LogQuery, error) {
	q := r.URL.Query()
	lq := api.LogQuery{Task: q.Get("task")}
	for _, p := range []struct {
		name string
		set  func(int64)
	}{{"attempt", func(n int64) { lq.Attempt = int(n) }}, {"offset", func(n int64) { lq.Offset = n }}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || (p.name == "attempt" && n > 1<<30) {
			return lq, model.FieldErrors{{Path: p.name, Msg: fmt.Sprintf("%q is not a non-negative integer", v)}}
		}
		p.set(n)
	}
	return lq, nil
}
