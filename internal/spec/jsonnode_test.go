package spec

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// jsonNodeCases are JSON documents jsonNode must read as the parser does
// or leave to it: layouts, every kind of value, numbers the parser
// resolves in different ways, and text that is not plain JSON.
var jsonNodeCases = []string{
	`{}`, `{ }`, "\n\n  {\"id\": \"a\"}\n", `{"id":"a","tasks":[{"name":"t","run":"true"}]}`,
	`{"a": [1, 2.5, -0, 0.0, 1e3, 1E+3, -2.5e-3, 123456789012345678901234567890], "b": [true, false, null], "c": [], "d": {}}`,
	"{\n  \"a\": {\n    \"b\": [\n      1,\n      \"x\"\n    ]\n  }\n}\n",
	`{"a" : 1 , "b" :[ 1 ,2 ] }`, `{"a":"# not a comment","b":"x: y","c":"- z","d":"&anchor *alias !tag","e":"<<"}`,
	`{"a":"","b":" spaced ","c":"'single'"}`, `{"a":1,"a":2}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":+1}`, `{"a":- 1}`,
	`{"a":tru}`, `{"a":truex}`, `{"a":nulls}`, `{"a":1}x`, `{"a":1}}`, `{"a":1,}`, `{"a":[1,]}`, `{,}`, `{"a"}`, `{"a":}`,
	`{"a":1`, `{"a":"x`, `{"a":"\u00e9"}`, `{"a":"é"}`, "{\"a\":\t1}", "{\"a\":1}\r\n", `[1,2]`, `"x"`, `1`, ``, `   `,
	`{"a":[[[[[[[[[[1]]]]]]]]]]}`, `{a: 1}`, `{"a": 1} # comment`, `{"a": 0x10}`, `{"a": .inf}`, `{"a": NaN}`,
	"{\"a\":\n1}", "{\"a\":\n[\n1\n,\n2]\n}", "{\n\"a\"\n}", "{\"a\"\n:1}", "{\"a\":1\n,\"b\":2\n}", "{\n}", "{\"a\":[\n]}",
	`{"a": ~}`, `{"a": yes}`, `{"a": "yes"}`, `{"a": 1_000}`, `{"a": 1:2}`, `{"a"  :  "b"  }`,
}

// TestJSONNodeIsTheParsersTree checks jsonNode against the YAML parser on
// the cases above and on every JSON file of the repository: where it
// builds a tree, the parser builds the same one (positions included);
// where the parser refuses a document, jsonNode leaves it.
func TestJSONNodeIsTheParsersTree(t *testing.T) {
	docs := append([]string(nil), jsonNodeCases...)
	// The parser takes for a key only what ends in a colon within 1,024
	// characters of its start.
	for _, n := range []int{990, 998, 999, 1000, 1020, 1021, 1022, 1023, 1024, 1100} {
		k := strings.Repeat("k", n)
		docs = append(docs, `{"`+k+`":1}`, `{"`+k+`"  :1}`, `{"a":{"`+k+`":[1]}}`, `{"a":"`+k+`","`+k+`":"b"}`)
	}
	root := filepath.Join("..", "..")
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, ".json") {
			if b, err := os.ReadFile(path); err == nil && len(b) < 1<<20 {
				docs = append(docs, string(b))
			}
		}
		return nil
	})
	fast := 0
	for _, doc := range docs {
		if sameAsParser(t, []byte(doc)) {
			fast++
		}
	}
	if fast < len(jsonNodeCases)/4 {
		t.Errorf("jsonNode read %d of %d documents: the fast path is hardly taken", fast, len(docs))
	}
	for _, doc := range []string{`{"id":"a","tasks":[{"name":"t","run":"true"}]}`, "{\n  \"a\": [1, true, null]\n}\n"} {
		if _, ok := jsonNode([]byte(doc)); !ok {
			t.Errorf("jsonNode left %q to the parser", doc)
		}
	}
}

// sameAsParser fails t when jsonNode's tree for doc differs from the
// parser's, and reports whether jsonNode built one.
func sameAsParser(t testing.TB, doc []byte) bool {
	n, ok := jsonNode(doc)
	if !ok {
		return false
	}
	var want yaml.Node
	if err := yaml.Unmarshal(doc, &want); err != nil {
		t.Errorf("jsonNode read %q, which the parser refuses: %v", doc, err)
		return true
	}
	if !reflect.DeepEqual(*n, want) {
		t.Errorf("jsonNode(%q) differs from the parser's tree:\n got %s\nwant %s", doc, dumpNode(n), dumpNode(&want))
	}
	return true
}

func dumpNode(n *yaml.Node) string {
	var b strings.Builder
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		fmt.Fprintf(&b, "%s%s %q kind %d style %d at %d:%d\n", strings.Repeat("  ", depth), n.Tag, n.Value, n.Kind, n.Style, n.Line, n.Column)
		for _, c := range n.Content {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return b.String()
}

// FuzzJSONNode compares jsonNode with the parser on any input.
func FuzzJSONNode(f *testing.F) {
	for _, doc := range jsonNodeCases {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		sameAsParser(t, doc)
	})
}
