package client

import (
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
)

// clientID is the form of the IDs the client adds (spec.NewJobID).
var clientID = regexp.MustCompile(`^job-\d{8}-\d{6}-[0-9a-hjkmnp-tv-z]{10}$`)

// A document that names no ID gets one where no line of it moves; one
// that names its ID is sent as it is; one the client cannot safely add to
// is sent as it is, without an ID.
func TestWithJobIDAddsAnIDWithoutMovingALine(t *testing.T) {
	cases := []struct {
		name, doc, contentType string
		ok, added              bool
	}{
		{"JSON", `{"tasks":[{"name":"t","run":"true"}]}`, "application/json", true, true},
		{"JSON, empty object", `{}`, "application/json", true, true},
		{"JSON with an id", `{"id":"mine","tasks":[]}`, "application/json", true, false},
		{"JSON with an empty id", `{"id":"","tasks":[]}`, "application/json", false, false},
		{"not JSON", `{"tasks":`, "application/json", false, false},
		{"YAML block", "# a job\nqueue: batch\ntasks:\n  - name: t\n    run: |\n      echo hi\n", "application/yaml", true, true},
		{"YAML block without a last newline", "queue: batch\ntasks: []", "application/yaml", true, true},
		{"YAML block, indented", "  queue: batch\n  tasks: []\n", "application/yaml", true, true},
		{"YAML flow", "{queue: batch,\n tasks: []}\n", "application/yaml", true, true},
		{"YAML with an id", "id: mine\nqueue: batch\n", "application/yaml", true, false},
		{"YAML with a number for an id", "id: 12\nqueue: batch\n", "application/yaml", false, false},
		{"YAML ending in a block scalar that keeps its last lines", "queue: batch\nnote: |+\n  kept\n\n", "application/yaml", true, true},
		{"YAML list", "- a\n- b\n", "application/yaml", false, false},
		{"YAML with a document end", "queue: batch\n...\n", "application/yaml", false, false},
		{"two YAML documents", "queue: a\n---\nqueue: b\n", "application/yaml", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, id, ok := WithJobID([]byte(tc.doc), tc.contentType)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (out %q)", ok, tc.ok, out)
			}
			if !tc.added {
				if string(out) != tc.doc {
					t.Errorf("out = %q, want the document as it was", out)
				}
				if ok && id != "mine" {
					t.Errorf("id = %q, want the document's", id)
				}
				return
			}
			if !clientID.MatchString(id) {
				t.Fatalf("id = %q, want a new ID", id)
			}
			var before, after map[string]any
			if err := yaml.Unmarshal([]byte(tc.doc), &before); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(out, &after); err != nil {
				t.Fatalf("%q: %v", out, err)
			}
			if after["id"] != id {
				t.Errorf("%q names id %v, want %q", out, after["id"], id)
			}
			delete(after, "id")
			if len(before) != len(after) {
				t.Errorf("%q reads %v, want %v and the id", out, after, before)
			}
			// Every line of the document is still on its line.
			lines, outLines := strings.Split(tc.doc, "\n"), strings.Split(string(out), "\n")
			for i, l := range lines[:len(lines)-1] {
				if i >= len(outLines) || (!strings.Contains(outLines[i], l) && !strings.Contains(l, "{")) {
					t.Errorf("line %d %q moved: %q", i+1, l, out)
				}
			}
		})
	}
}

// In a bulk body every document gets an ID in place; the lines a YAML
// block document gains are given back to the answer's errors.
func TestBulkIDsNameEveryDocumentAndGiveTheLinesBack(t *testing.T) {
	body := "queue: a\ntasks: []\n---\nid: mine\nqueue: b\n---\n{queue: c}\n---\nqueue: d\nbad: x\n"
	out, moves, all := bulkIDs([]byte(body), "application/yaml")
	if !all {
		t.Fatalf("not every document named: %q", out)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(out)))
	var ids []string
	for {
		var m map[string]any
		if dec.Decode(&m) != nil {
			break
		}
		id, _ := m["id"].(string)
		ids = append(ids, id)
	}
	if len(ids) != 4 || !clientID.MatchString(ids[0]) || ids[1] != "mine" || !clientID.MatchString(ids[2]) || !clientID.MatchString(ids[3]) {
		t.Fatalf("ids %q in %q", ids, out)
	}
	if want := []int{0, 1, 1, 1}; len(moves) != 4 || moves[0] != want[0] || moves[1] != want[1] || moves[2] != want[2] || moves[3] != want[3] {
		t.Errorf("moves = %v, want %v", moves, want)
	}
	// "bad" is on line 10 of the body; the server sees it on line 11.
	if got := strings.Split(string(out), "\n")[10]; got != "bad: x" {
		t.Fatalf("line 11 of the sent body is %q", got)
	}
	e := &api.Error{Line: 11, Message: "line 11: bad: unknown field", Details: []*model.FieldError{{Path: "bad", Line: 11}}}
	e.ShiftLines(-moves[3])
	if e.Line != 10 || e.Message != "line 10: bad: unknown field" || e.Details[0].Line != 10 {
		t.Errorf("shifted error %+v %+v, want line 10", e, e.Details[0])
	}

	nd := "{\"queue\":\"a\"}\n\n{\"id\":\"x\"}\n"
	out, moves, all = bulkIDs([]byte(nd), "application/x-ndjson")
	if !all || strings.Count(string(out), "\n") != 3 || moves[1] != 0 || !strings.Contains(string(out), `{"id":"job-`) {
		t.Errorf("NDJSON: %q %v %v", out, moves, all)
	}
}

// BenchmarkWithJobID is what naming a job costs a submission on the
// client: a JSON document that names its ID (allot bench's), one that
// does not, and a YAML one that does not (parsed twice: once to find
// where the ID goes, once to check the result).
func BenchmarkWithJobID(b *testing.B) {
	for _, bc := range []struct{ name, doc, contentType string }{
		{"json-named", `{"id":"bench-1","tasks":[{"name":"t","count":1000,"run":"true"}]}`, "application/json"},
		{"json", `{"tasks":[{"name":"t","count":1000,"run":"true"}]}`, "application/json"},
		{"yaml", "queue: batch\nshare: research\ntasks:\n  - name: prep\n    run: ./prep.sh\n  - name: train\n    needs: [prep]\n    run: ./train.sh\n    resources: {cpu: 4, memory: 8Gi, gpus: 1}\n", "application/yaml"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			doc := []byte(bc.doc)
			for b.Loop() {
				if _, _, ok := WithJobID(doc, bc.contentType); !ok {
					b.Fatal("not named")
				}
			}
		})
	}
}
