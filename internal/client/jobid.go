package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/spec"
)

// Job IDs the client makes. A submission whose answer is lost (the
// connection broke, the leader failed over) may have been stored or not;
// sent again under the same ID it is either created now or answered as a
// duplicate of the first (api.Error.Duplicate), never stored twice. So the
// client gives every job document that names no ID one before sending it,
// and keeps the server's own naming for callers that send none.

// WithJobID returns a job document (YAML or JSON, one job) that names its
// job ID, and that ID: doc itself when it names one, else doc with a new
// ID (spec.NewJobID) added where it moves no line of the document: in a JSON
// object or a YAML flow mapping right after its opening brace, after the
// last line of a YAML block mapping. ok is false when doc is not one job
// mapping it can read, names an ID that is not a non-empty string, or
// would read differently with the ID added; then doc is returned as it is,
// for the server to name the job (and refuse a bad document).
func WithJobID(doc []byte, contentType string) (out []byte, id string, ok bool) {
	e, ok := jobIDEdit(doc, contentType)
	if !ok || e.text == "" {
		return doc, e.id, ok
	}
	return e.apply(doc), e.id, true
}

// idEdit is how a document gets its ID: text inserted at pos (none when
// the document names its ID), and the ID.
type idEdit struct {
	pos  int
	text string
	id   string
	// lines is how many lines text adds.
	lines int
}

func (e idEdit) apply(doc []byte) []byte {
	out := make([]byte, 0, len(doc)+len(e.text))
	return append(append(append(out, doc[:e.pos]...), e.text...), doc[e.pos:]...)
}

// jobIDEdit finds how doc gets its ID (WithJobID).
// A document that looks like JSON but is not (a YAML flow mapping) is
// read as YAML, unless it is sent as JSON.
func jobIDEdit(doc []byte, contentType string) (idEdit, bool) {
	mt, _, _ := mime.ParseMediaType(contentType)
	sentAsJSON := mt == "application/json" || mt == "application/x-ndjson" || mt == "application/jsonl"
	if t := bytes.TrimSpace(doc); sentAsJSON || (len(t) > 0 && t[0] == '{') {
		if e, ok := jsonIDEdit(doc); ok || sentAsJSON {
			return e, ok
		}
	}
	return yamlIDEdit(doc)
}

func jsonIDEdit(doc []byte) (idEdit, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(doc, &m) != nil || m == nil {
		return idEdit{}, false
	}
	if raw, has := m["id"]; has {
		var id string
		if json.Unmarshal(raw, &id) != nil || id == "" {
			return idEdit{}, false
		}
		return idEdit{id: id}, true
	}
	id := spec.NewJobID(time.Now())
	field := `"id":"` + id + `"`
	if len(m) > 0 {
		field += ","
	}
	return idEdit{pos: bytes.IndexByte(doc, '{') + 1, text: field, id: id}, true
}

func yamlIDEdit(doc []byte) (idEdit, bool) {
	var root yaml.Node
	if yaml.Unmarshal(doc, &root) != nil || root.Kind != yaml.DocumentNode || len(root.Content) != 1 {
		return idEdit{}, false
	}
	m := root.Content[0]
	if m.Kind != yaml.MappingNode {
		return idEdit{}, false
	}
	for k := 0; k+1 < len(m.Content); k += 2 {
		if m.Content[k].Value == "id" {
			v := m.Content[k+1]
			if v.Kind != yaml.ScalarNode || v.Tag != "!!str" || v.Value == "" {
				return idEdit{}, false
			}
			return idEdit{id: v.Value}, true
		}
	}
	e := idEdit{id: spec.NewJobID(time.Now())}
	if m.Style&yaml.FlowStyle != 0 {
		// Right after the mapping's opening brace, on its line.
		start := lineStart(doc, m.Line)
		if start < 0 {
			return idEdit{}, false
		}
		brace := bytes.IndexByte(doc[start:], '{')
		if brace < 0 {
			return idEdit{}, false
		}
		e.pos, e.text = start+brace+1, "id: "+e.id
		if len(m.Content) > 0 {
			e.text += ", "
		}
	} else {
		// A last line at the indentation of the mapping's keys.
		e.pos, e.lines = len(doc), 1
		if len(doc) > 0 && doc[len(doc)-1] != '\n' {
			e.text = "\n"
		}
		e.text += strings.Repeat(" ", max(m.Column-1, 0)) + "id: " + e.id + "\n"
	}
	if !sameButID(&root, e.apply(doc), e.id) {
		return idEdit{}, false
	}
	return e, true
}

// lineStart returns the offset of line n (from 1) of doc, or -1.
func lineStart(doc []byte, n int) int {
	off := 0
	for line := 1; line < n; line++ {
		i := bytes.IndexByte(doc[off:], '\n')
		if i < 0 {
			return -1
		}
		off += i + 1
	}
	return off
}

// sameButID reports whether out reads as one document, the one parsed
// into root with the key id set to id: the check that adding the text
// changed nothing else (a block scalar that keeps trailing lines, a
// document end marker).
func sameButID(root *yaml.Node, out []byte, id string) bool {
	var before map[string]any
	if root.Decode(&before) != nil || before == nil {
		return false
	}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	var after map[string]any
	if dec.Decode(&after) != nil || after["id"] != id {
		return false
	}
	var more any
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return false
	}
	delete(after, "id")
	return reflect.DeepEqual(before, after)
}

// bulkIDs gives every document of a bulk body (a YAML stream or NDJSON,
// split as the server splits it) that names no job ID one, in place in
// the body. It returns the body to send, for each document how many lines
// the additions before it moved it down (to move the answer's error lines
// back), and whether every document names its ID now (the call may be
// sent again). A body it cannot split goes as it is, for the server to
// refuse.
func bulkIDs(body []byte, contentType string) ([]byte, []int, bool) {
	mt, _, _ := mime.ParseMediaType(contentType)
	split := spec.SplitYAMLStream
	if mt == "application/x-ndjson" || mt == "application/jsonl" {
		split = spec.SplitNDJSON
	}
	docs, err := split(body, api.MaxBulkJobs)
	if err != nil || len(docs) == 0 {
		return body, nil, false
	}
	out := make([]byte, 0, len(body)+len(docs)*40)
	moves := make([]int, len(docs))
	copied, moved, all := 0, 0, true
	for i, d := range docs {
		moves[i] = moved
		// A document's text keeps its bytes' places in the body (the
		// splitter only blanks a --- marker), from the start of its line.
		start := lineStart(body, d.Line)
		e, ok := jobIDEdit(d.Body, contentType)
		if !ok {
			all = false
			continue
		}
		if e.text == "" || start < 0 {
			all = all && e.text == ""
			continue
		}
		out = append(out, body[copied:start+e.pos]...)
		out = append(out, e.text...)
		copied = start + e.pos
		moved += e.lines
	}
	out = append(out, body[copied:]...)
	return out, moves, all
}
