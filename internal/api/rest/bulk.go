package rest

import (
	"fmt"
	"mime"
	"net/http"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/spec"
	"go.yaml.in/yaml/v3"
)

// Bulk submission (POST /v1/jobs/bulk): many job documents in one body,
// NDJSON or a YAML stream, each checked and authorized on its own exactly
// as POST /v1/jobs checks one, and the accepted ones submitted together in
// one loop round (control.SubmitManyBy). The answer is 200 with one result
// per document, in order: a refused document carries the error the
// single-job route would have answered. Only what concerns the call as a
// whole (no submit permission at all, an unreadable or oversized body,
// more than api.MaxBulkJobs documents, the store refusing writes) is an
// error status, and then nothing was stored.
//
// One call creates at most Options.bulkTasks tasks (spec.MaxTasksPerJob,
// counts expanded), so that no small body makes the server build a
// billion tasks at once: a document that would pass the budget, and every
// document after it, is refused (too_large, naming its tasks) before it is
// checked, and the client sends them in another call. The documents
// before it are stored as usual. A document refused while it is read and
// checked spends nothing; one the controller refuses afterwards (a taken
// ID, a live-task bound) has spent its tasks, since all go to the
// controller together once counted.

// ndjsonTypes are the media types of a body read one JSON document a
// line; any other body is read as a YAML stream (JSON documents included).
var ndjsonTypes = map[string]bool{"application/x-ndjson": true, "application/jsonl": true}

// bulkDocument is one document of a bulk body being submitted.
type bulkDocument struct {
	index int
	line  int // the line of the body it starts on
	root  *yaml.Node
	spec  spec.Job
}

func (s *Server) submitBulk(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.SubmitJobs) {
		return
	}
	b, ok := s.body(w, r)
	if !ok {
		return
	}
	docs, err := splitBulk(b, r.Header.Get("Content-Type"))
	if err != nil {
		s.fail(w, err)
		return
	}
	results := make([]api.BulkResult, len(docs))
	var accepted []bulkDocument
	budget := taskBudget{max: s.opt.bulkTasks()}
	for i, d := range docs {
		results[i] = api.BulkResult{Index: i}
		doc, over, err := s.admitDocument(r, i, d, &budget)
		results[i].ID = doc.spec.ID
		switch {
		case over != nil:
			results[i].Status, results[i].Error = api.BulkRefused, over
			continue
		case err != nil:
			results[i].Status, results[i].Error = api.BulkRefused, s.itemError(w, r, i, err)
			continue
		}
		accepted = append(accepted, doc)
	}
	specs := make([]spec.Job, len(accepted))
	for k, d := range accepted {
		specs[k] = d.spec
	}
	opts := control.SubmitOptions{AnySubmitter: principal(r).Role == auth.Admin}
	subs, err := s.ctrl.SubmitCheckedWith(r.Context(), principal(r).SubmitterName(), specs, opts) // each passed CheckJob in admitDocument
	if err != nil {
		s.fail(w, err)
		return
	}
	counts := map[string]int{}
	for k, sub := range subs {
		d := accepted[k]
		res := &results[d.index]
		switch {
		case sub.Err != nil:
			res.Status = api.BulkRefused
			res.Error = s.itemError(w, r, d.index, spec.ShiftLines(spec.WithLines(sub.Err, d.root), d.line-1))
		case sub.Job.State == api.AdmissionDeadLettered:
			res.ID, res.Status = sub.Job.ID, api.BulkDeadLettered
		default:
			res.ID, res.Status, res.Warnings = sub.Job.ID, api.BulkCreated, sub.Job.Warnings
		}
	}
	for _, res := range results {
		counts[res.Status]++
	}
	s.logger(r).Info("jobs submitted in bulk", "documents", len(docs), "created", counts[api.BulkCreated],
		"dead_lettered", counts[api.BulkDeadLettered], "refused", counts[api.BulkRefused], "by", principal(r).TokenID)
	writeJSON(w, http.StatusOK, api.BulkResults{Results: results})
}

// splitBulk splits a bulk body into its documents by its media type.
func splitBulk(b []byte, contentType string) ([]spec.StreamDocument, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	var docs []spec.StreamDocument
	var err error
	if ndjsonTypes[mt] {
		docs, err = spec.SplitNDJSON(b, api.MaxBulkJobs)
	} else {
		docs, err = spec.SplitYAMLStream(b, api.MaxBulkJobs)
	}
	if err == nil && len(docs) == 0 {
		err = spec.Errors{{Path: "body", Msg: "the body holds no job documents"}}
	}
	return docs, err
}

// admitDocument decodes, checks and authorizes one job document as the
// single-job route does, in the same order; its errors name lines of the
// whole body. A document past the call's task budget is refused (over)
// once decoded, before the costlier check; one admitted spends its tasks.
func (s *Server) admitDocument(r *http.Request, index int, d spec.StreamDocument, budget *taskBudget) (doc bulkDocument, over *api.Error, err error) {
	doc = bulkDocument{index: index, line: d.Line}
	shift := d.Line - 1
	root, err := spec.Decode(d.Body, &doc.spec)
	if err != nil {
		return doc, nil, spec.ShiftLines(err, shift)
	}
	doc.root = root
	n, over := budget.refuses(doc.spec, d.Line)
	if over != nil {
		return doc, over, nil
	}
	if err := s.ctrl.CheckJob(doc.spec); err != nil {
		return doc, nil, spec.ShiftLines(spec.WithLines(err, root), shift)
	}
	if err := s.submitDenied(r, doc.spec); err != nil {
		return doc, nil, err
	}
	budget.used += n
	return doc, nil, nil
}

// taskBudget is what is left of the tasks one bulk call may create.
type taskBudget struct {
	max, used int
	spent     bool // a document did not fit: every later one is refused
}

// refuses counts the tasks of a decoded document and refuses it when
// they do not fit in the budget, naming the task entry that passes it.
// A document whose own count is beyond one job's (CheckJob refuses it,
// naming that) is let through while the budget is not spent.
func (b *taskBudget) refuses(js spec.Job, line int) (int, *api.Error) {
	n := 0
	for k, t := range js.Tasks {
		c := max(t.Count, 1)
		if !b.spent && c > spec.MaxTasksPerJob-n {
			return 0, nil
		}
		n += c
		if b.spent || n > b.max-b.used {
			b.spent = true
			field := fmt.Sprintf("tasks[%d]", k)
			if t.Count > 0 {
				field += ".count"
			}
			return 0, &api.Error{Code: api.CodeTooLarge, Field: field, Line: line, Message: fmt.Sprintf(
				"%s: the call's task budget is spent: one bulk call creates at most %d tasks and the documents before this one "+
					"hold %d; send this document and the ones after it in another call", field, b.max, b.used)}
		}
	}
	return n, nil
}

// itemError is the error a refused document's result carries: the body
// of the error POST /v1/jobs would have answered. An error of no known
// kind goes to the log, as fail does with one.
func (s *Server) itemError(w http.ResponseWriter, r *http.Request, index int, err error) *api.Error {
	_, e, ok := errorOf(err)
	if !ok {
		id := w.Header().Get(RequestIDHeader)
		s.logger(r).Error("bulk submission: a job failed", "request_id", id, "index", index, "err", err)
		e = api.Error{Code: api.CodeInternal, Message: internalMessage(id)}
	}
	e = shortened(e)
	return &e
}
