package spec

import (
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestLineOfNamesOnlyLinesThatHoldTheField(t *testing.T) {
	const doc = "# a comment\nid: pipeline\ntasks:\n  - name: a\n    run: echo a\n"
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &root); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path string
		want int
	}{
		{"id", 2},
		{"tasks[0].run", 5},
		{"tasks[0].count", 4},   // absent: the task's line
		{"queue", 0},            // absent at the top: no line, not the first field's
		{"dependsOn[0].job", 0}, // the same
		{"", 2},
	}
	for _, tc := range cases {
		if got := LineOf(&root, tc.path); got != tc.want {
			t.Errorf("LineOf(%q) = %d, want %d", tc.path, got, tc.want)
		}
	}
}
