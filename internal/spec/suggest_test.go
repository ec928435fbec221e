package spec

import (
	"strings"
	"testing"
)

// Fields written inline (YAML flow style) are named as in block style, and
// an unknown field names the known one it is closest to.
func TestInlineFieldsAreNamedAndMisspellingsGetASuggestion(t *testing.T) {
	for _, tt := range []struct {
		name, doc, field string
		words            []string
	}{
		{"a bad quantity in a flow mapping", "id: a\ntasks:\n  - name: s\n    run: x\n    resources: {cpu: lots}\n",
			"tasks[0].resources.cpu", []string{"lots", "CPU quantity"}},
		{"a misspelt field with a flow list", "id: a\ntasks:\n  - name: s\n    comand: [echo, hi]\n",
			"tasks[0].comand", []string{`unknown field "comand"`, `did you mean "command"?`}},
		{"all in flow style", "id: a\ntasks: [{name: s, comand: [echo, hi]}, {name: t, run: x, resources: {cpus: 2}}]\n",
			"tasks[1].resources.cpus", []string{`did you mean "cpu"?`}},
		{"a misspelt job field", "id: a\npriorty: 3\ntasks: [{name: s, run: x}]\n",
			"priorty", []string{`did you mean "priority"?`}},
		{"JSON", `{"id":"a","tasks":[{"name":"s","comand":["echo"]}]}`,
			"tasks[0].comand", []string{`did you mean "command"?`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantField(t, refusal(t, tt.doc), tt.field, tt.words...)
		})
	}
}

func TestNoSuggestionForAFieldLikeNoKnownOne(t *testing.T) {
	list := refusal(t, "id: a\ntasks: [{name: s, run: x, colour: red}]\n")
	wantField(t, list, "tasks[0].colour", `unknown field "colour"`)
	for _, e := range list {
		if strings.Contains(e.Msg, "did you mean") {
			t.Errorf("%s: %q suggests a field though none is close", e.Path, e.Msg)
		}
	}
}

func TestClosestName(t *testing.T) {
	known := []string{"name", "run", "command", "count", "needs", "resources", "cpu", "gpus", "gpuMemory"}
	for _, tt := range []struct{ key, want string }{
		{"comand", "command"},
		{"Command", "command"},
		{"resource", "resources"},
		{"gpu", "gpus"},
		{"gpumemory", "gpuMemory"},
		{"colour", ""},
		{"x", ""},
		{"nmae", "name"},
	} {
		if got := closestName(tt.key, known); got != tt.want {
			t.Errorf("closestName(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}
