package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/spec"
)

// Bulk submission from the command line: `allot submit` of a directory, an
// NDJSON file or a multi-document YAML file sends every job document in
// bulk calls (POST /v1/jobs/bulk) and prints one line per job.

// bulkExts are the files of a directory that `allot submit DIR` reads.
var bulkExts = map[string]bool{".yaml": true, ".yml": true, ".json": true, ".ndjson": true, ".jsonl": true}

// bulkCallBytes bounds the body of one bulk call the command sends, below
// the server's default body limit; a longer list goes in several calls.
const bulkCallBytes = 4 << 20

// jobDocument is one job document read from a file, and where it is.
type jobDocument struct {
	file string
	line int // the file's line its body starts on
	body []byte
	// lineOf is set for a body the flags re-encoded: the file's line of
	// an error's field (0 for a field a flag set).
	lineOf func(field string) int
}

// readJobDir reads the job documents of every job file of a directory
// (bulkExts), in name order.
func readJobDir(dir string) ([]jobDocument, error) {
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, err
	}
	var out []jobDocument
	for _, e := range entries {
		if e.IsDir() || !bulkExts[strings.ToLower(filepath.Ext(e.Name()))] {
			continue
		}
		f := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		docs, err := splitJobFile(f, b)
		if err != nil {
			return nil, err
		}
		out = append(out, docs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no job documents in its *.yaml, *.yml, *.json, *.ndjson files", dir)
	}
	return out, nil
}

// isNDJSON reports whether a file is read one JSON document a line.
func isNDJSON(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	return ext == ".ndjson" || ext == ".jsonl"
}

// splitJobFile splits a file's text into its job documents: NDJSON for
// .ndjson and .jsonl, a YAML stream otherwise.
func splitJobFile(name string, b []byte) ([]jobDocument, error) {
	split := spec.SplitYAMLStream
	if isNDJSON(name) {
		split = spec.SplitNDJSON
	}
	docs, err := split(b, math.MaxInt)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	out := make([]jobDocument, len(docs))
	for i, d := range docs {
		out[i] = jobDocument{file: name, line: d.Line, body: d.Body}
	}
	return out, nil
}

// bulkOutcome is the result of one job document, with the document.
type bulkOutcome struct {
	doc jobDocument
	api.BulkResult
}

// bulkCallDocs is how many of docs, from the first, go in the next bulk
// call: at most api.MaxBulkJobs documents, bulkCallBytes of body (with a
// separator line each) and the tasks the server creates from one call
// (spec.MaxTasksPerJob, counts expanded; it refuses the documents past
// that). The first document always goes, whatever its size: the server
// says what is wrong with it.
func bulkCallDocs(docs []jobDocument) int {
	size, tasks, n := 0, 0, 0
	for ; n < len(docs) && n < api.MaxBulkJobs; n++ {
		size += len(docs[n].body) + len("---\n\n")
		tasks += docTasks(docs[n].body)
		if n > 0 && (size >= bulkCallBytes || tasks > spec.MaxTasksPerJob) {
			break
		}
	}
	return n
}

// docTasks is how many tasks a job document expands to, as the server
// counts them against a call's budget; a document that cannot be read
// counts one (the server refuses it).
func docTasks(body []byte) int {
	var js spec.Job
	if _, err := spec.Decode(body, &js); err != nil {
		return 1
	}
	n := 0
	for _, t := range js.Tasks {
		n += min(max(t.Count, 1), spec.MaxTasksPerJob+1) // no sum of counts wraps
	}
	return max(n, 1)
}

// submitBulk sends docs in bulk calls (bulkCallDocs), and returns one
// outcome per document, in order. A refused job's error lines are the
// lines of its file.
func submitBulk(ctx context.Context, c *client.Client, docs []jobDocument) ([]bulkOutcome, error) {
	out := make([]bulkOutcome, 0, len(docs))
	for len(docs) > 0 {
		var body bytes.Buffer
		var starts []int // the line of the body each document's separator is on
		line, n := 1, bulkCallDocs(docs)
		for _, d := range docs[:n] {
			starts = append(starts, line)
			body.WriteString("---\n")
			body.Write(d.body)
			if !bytes.HasSuffix(d.body, []byte("\n")) {
				body.WriteByte('\n')
			}
			line += 1 + bytes.Count(d.body, []byte("\n")) + boolInt(!bytes.HasSuffix(d.body, []byte("\n")))
		}
		res, err := c.SubmitJobs(ctx, body.Bytes(), "application/yaml")
		if err != nil {
			return out, err
		}
		if len(res.Results) != n {
			return out, fmt.Errorf("the server answered %d results for %d jobs", len(res.Results), n)
		}
		for i, r := range res.Results {
			r.Index = len(out)
			switch {
			case r.Error != nil && docs[i].lineOf != nil:
				r.Error.MapLines(docs[i].lineOf)
			case r.Error != nil:
				// From the lines of the call's body to the lines of the job's file.
				r.Error.ShiftLines(docs[i].line - starts[i] - 1)
			}
			out = append(out, bulkOutcome{doc: docs[i], BulkResult: r})
		}
		docs = docs[n:]
	}
	return out, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// bulkLine is the line `allot submit` prints for one job of a bulk
// submission: where it is, what became of it, and the job's ID or why it
// was refused.
func bulkLine(o bulkOutcome) string {
	where := fmt.Sprintf("%s:%d", o.doc.file, o.doc.line)
	if o.Status != api.BulkRefused {
		line := fmt.Sprintf("%s: %s %s", where, o.Status, o.ID)
		for _, w := range o.Warnings {
			line += "; warning: " + w.Message
		}
		return line
	}
	e := o.Error
	var msg string
	switch {
	case e == nil:
		msg = "no reason given"
	case len(e.Details) > 0:
		parts := make([]string, len(e.Details))
		for i, d := range e.Details {
			parts[i] = d.Error()
		}
		msg = strings.Join(parts, "; ")
	default:
		msg = e.Message
	}
	if e != nil && e.Code != "" {
		msg = e.Code + ": " + msg
	}
	return fmt.Sprintf("%s: refused: %s", where, msg)
}

// bulkSummary is the error `allot submit` exits with when not every job was
// created, or nil.
func bulkSummary(outs []bulkOutcome) error {
	refused := slices.IndexFunc(outs, func(o bulkOutcome) bool { return o.Status == api.BulkRefused }) >= 0
	dead := slices.IndexFunc(outs, func(o bulkOutcome) bool { return o.Status == api.BulkDeadLettered }) >= 0
	if !refused && !dead {
		return nil
	}
	counts := map[string]int{}
	for _, o := range outs {
		counts[o.Status]++
	}
	return fmt.Errorf("%d of %d jobs created, %d refused, %d dead-lettered", counts[api.BulkCreated], len(outs),
		counts[api.BulkRefused], counts[api.BulkDeadLettered])
}

// runBulkSubmit submits docs in bulk, prints one line per job (or the
// results as JSON or YAML) and fails unless every job was created.
func runBulkSubmit(ctx context.Context, f *clientFlags, c *client.Client, w io.Writer, docs []jobDocument) error {
	outs, err := submitBulk(ctx, c, docs)
	results := api.BulkResults{Results: make([]api.BulkResult, len(outs))}
	for i, o := range outs {
		results.Results[i] = o.BulkResult
	}
	perr := f.print(w, results, func(w io.Writer) error {
		for _, o := range outs {
			if _, err := fmt.Fprintln(w, bulkLine(o)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		if len(outs) > 0 {
			return fmt.Errorf("after %d of %d jobs: %w", len(outs), len(docs), err)
		}
		return err
	}
	if perr != nil {
		return perr
	}
	return bulkSummary(outs)
}
