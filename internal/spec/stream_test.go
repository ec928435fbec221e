package spec

import (
	"strings"
	"testing"
)

func TestSplittingStreamsKeepsEachDocumentsLine(t *testing.T) {
	type doc struct {
		line  int
		first string // its first non-blank line
	}
	cases := []struct {
		name, in string
		ndjson   bool
		want     []doc
	}{
		{"one document", "id: a\n", false, []doc{{1, "id: a"}}},
		{"leading marker and comments", "# jobs\n---\nid: a\n---\n# only a comment\n---\nid: b\n", false, []doc{{2, "id: a"}, {6, "id: b"}}},
		{"content on the marker line", "--- {id: a}\n--- {id: b}\n", false, []doc{{1, "{id: a}"}, {2, "{id: b}"}}},
		{"document end marker", "id: a\n...\nid: b\n", false, []doc{{1, "id: a"}, {3, "id: b"}}},
		{"marker-like text is content", "run: |\n  ---\nid: a\n", false, []doc{{1, "run: |"}}},
		{"NDJSON skips blank lines", "{\"id\":\"a\"}\n\n{\"id\":\"b\"}", true, []doc{{1, `{"id":"a"}`}, {3, `{"id":"b"}`}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			split := SplitYAMLStream
			if tc.ndjson {
				split = SplitNDJSON
			}
			docs, err := split([]byte(tc.in), 10)
			if err != nil {
				t.Fatal(err)
			}
			var got []doc
			for _, d := range docs {
				got = append(got, doc{d.Line, strings.TrimSpace(strings.SplitN(strings.TrimLeft(string(d.Body), " \n"), "\n", 2)[0])})
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("document %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestSplittingMoreDocumentsThanAllowedNamesTheBody(t *testing.T) {
	for _, split := range []func([]byte, int) ([]StreamDocument, error){SplitYAMLStream, SplitNDJSON} {
		in := "{}\n---\n{}\n---\n{}\n"
		if _, err := split([]byte(in), 2); err == nil || !strings.Contains(err.Error(), "body: more than 2 job documents") {
			t.Errorf("error %v, want one naming the body and the limit", err)
		}
	}
}
