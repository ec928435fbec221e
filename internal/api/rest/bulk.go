package rest

import (
	"mime"
	"net/http"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
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
	for i, d := range docs {
		results[i] = api.BulkResult{Index: i}
		doc, err := s.admitDocument(r, i, d)
		results[i].ID = doc.spec.ID
		if err != nil {
			results[i].Status, results[i].Error = api.BulkRefused, s.itemError(w, r, i, err)
			continue
		}
		accepted = append(accepted, doc)
	}
	specs := make([]spec.Job, len(accepted))
	for k, d := range accepted {
		specs[k] = d.spec
	}
	subs, err := s.ctrl.SubmitCheckedBy(r.Context(), principal(r).SubmitterName(), specs) // each passed CheckJob in admitDocument
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
// whole body.
func (s *Server) admitDocument(r *http.Request, index int, d spec.StreamDocument) (bulkDocument, error) {
	doc := bulkDocument{index: index, line: d.Line}
	shift := d.Line - 1
	root, err := spec.Decode(d.Body, &doc.spec)
	if err != nil {
		return doc, spec.ShiftLines(err, shift)
	}
	doc.root = root
	if err := s.ctrl.CheckJob(doc.spec); err != nil {
		return doc, spec.ShiftLines(spec.WithLines(err, root), shift)
	}
	return doc, s.submitDenied(r, doc.spec)
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
