package spec

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// refusal decodes and expands a job document the way a submission does and
// returns its field errors; it fails the test when the job is accepted.
func refusal(t *testing.T, doc string) Errors {
	t.Helper()
	var j Job
	_, err := Decode([]byte(doc), &j)
	if err == nil {
		_, err = j.Expand("", time.Time{})
	}
	if err == nil {
		err = j.CheckRunnable("")
	}
	if err == nil {
		t.Fatalf("accepted %q as %+v", doc, j)
	}
	var list Errors
	if !errors.As(err, &list) {
		t.Fatalf("%q: %T is not a list of field errors: %v", doc, err, err)
	}
	return list
}

// wantField checks that one of the errors names field and says each of
// words.
func wantField(t *testing.T, list Errors, field string, words ...string) {
	t.Helper()
	for _, e := range list {
		if e.Path != field {
			continue
		}
		for _, w := range words {
			if !strings.Contains(e.Msg, w) {
				t.Errorf("the error of %s, %q, does not say %q", field, e.Msg, w)
			}
		}
		return
	}
	t.Errorf("no error names %s: %v", field, list)
}

func TestQuantitiesOutOfRangeAreRefusedNamingTheField(t *testing.T) {
	for _, tt := range []struct {
		name, doc, field string
	}{
		{"memory that overflows", "tasks: [{name: t, run: x, resources: {memory: 1e30}}]", "tasks[0].resources.memory"},
		{"memory as a quoted number", `tasks: [{name: t, run: x, resources: {memory: "1e30"}}]`, "tasks[0].resources.memory"},
		{"memory with a unit that overflows", "tasks: [{name: t, run: x, resources: {memory: 1e30Ti}}]", "tasks[0].resources.memory"},
		{"memory NaN with a unit", "tasks: [{name: t, run: x, resources: {memory: NaNGi}}]", "tasks[0].resources.memory"},
		{"memory infinite", "tasks: [{name: t, run: x, resources: {memory: .inf}}]", "tasks[0].resources.memory"},
		{"memory past the maximum", "tasks: [{name: t, run: x, resources: {memory: 2Ei}}]", "tasks[0].resources.memory"},
		{"gpu memory that overflows", "tasks: [{name: t, run: x, resources: {gpus: 1, gpuMemory: 1e30}}]", "tasks[0].resources.gpuMemory"},
		{"cpu that overflows", "tasks: [{name: t, run: x, resources: {cpu: 1e30}}]", "tasks[0].resources.cpu"},
		{"cpu in thousandths that overflows", "tasks: [{name: t, run: x, resources: {cpu: 99999999999999999999m}}]", "tasks[0].resources.cpu"},
		{"cpu past the maximum", "tasks: [{name: t, run: x, resources: {cpu: 9223372036854775m}}]", "tasks[0].resources.cpu"},
		{"cpu NaN", "tasks: [{name: t, run: x, resources: {cpu: .nan}}]", "tasks[0].resources.cpu"},
		{"negative cpu in thousandths", "tasks: [{name: t, run: x, resources: {cpu: -5m}}]", "tasks[0].resources.cpu"},
		{"gpus that overflow", "tasks: [{name: t, run: x, resources: {gpus: 1e30}}]", "tasks[0].resources.gpus"},
		{"gpus past the maximum", "tasks: [{name: t, run: x, resources: {gpus: 100000000}}]", "tasks[0].resources.gpus"},
		{"a timeout past what a duration holds", "tasks: [{name: t, run: x, timeout: 1e30}]", "tasks[0].timeout"},
		{"a negative zero-ish duration", "tasks: [{name: t, run: x, timeout: -1e-300}]", "tasks[0].timeout"},
		{"memory in JSON on one line", `{"tasks": [{"name": "t", "run": "x", "resources": {"memory": "1e30", "cpu": 1}}]}`, "tasks[0].resources.memory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantField(t, refusal(t, tt.doc), tt.field)
		})
	}
}

func TestNumbersThatAreNotWholeAreRefusedNamingTheField(t *testing.T) {
	for _, tt := range []struct {
		name, doc, field string
		words            []string
	}{
		{"a fractional count", "tasks: [{name: t, run: x, count: 2.7}]", "tasks[0].count", []string{"whole number", "2.7"}},
		{"a fractional count in JSON", `{"tasks": [{"name": "t", "count": 2.7, "run": "x"}]}`, "tasks[0].count", []string{"whole number"}},
		{"a huge negative priority", "priority: -1e308\ntasks: [{name: t, run: x}]", "priority", []string{"-1000000", "1000000"}},
		{"a priority past the range", "priority: 5000000\ntasks: [{name: t, run: x}]", "priority", []string{"-1000000", "1000000"}},
		{"a fractional maxSlots", "maxSlots: 1.5\ntasks: [{name: t, run: x}]", "maxSlots", []string{"whole number"}},
		{"an integer too large for any field", "maxSlots: 1e30\ntasks: [{name: t, run: x}]", "maxSlots", []string{"1e30"}},
		{"a fractional image width", "image: {width: 10.5, height: 3}\ntasks: [{name: t, run: x}]", "image.width", []string{"whole number"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantField(t, refusal(t, tt.doc), tt.field, tt.words...)
		})
	}
}

func TestTypeErrorsInOneLineJSONNameTheirField(t *testing.T) {
	for _, tt := range []struct {
		name, doc, field string
	}{
		{"the issue's example", `{"id":"a","tasks":[{"name":"x","count":"many"}]}`, "tasks[0].count"},
		{"a field after the bad one", `{"id":"a","tasks":[{"name":"x","count":"many","run":"true"}]}`, "tasks[0].count"},
		{"the second task", `{"tasks":[{"name":"x","run":"a"},{"name":"y","maxAttempts":"no","run":"b"}],"queue":"q"}`, "tasks[1].maxAttempts"},
		{"a list where a mapping goes", `{"tasks":[{"name":"x","run":"a","env":["A"]}],"id":"j"}`, "tasks[0].env"},
		{"an unknown field", `{"tasks":[{"name":"x","run":"a","bogus":1}],"id":"j"}`, "tasks[0].bogus"},
		{"a bad urgent flag", `{"urgent":"maybe","tasks":[{"name":"x","run":"a"}],"id":"j"}`, "urgent"},
		{"a bad label value", `{"labels":{"team":["a"]},"tasks":[{"name":"x","run":"a"}]}`, "labels.team"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			list := refusal(t, tt.doc)
			if list[0].Path != tt.field {
				t.Errorf("first error names %q, want %q: %v", list[0].Path, tt.field, list)
			}
		})
	}
}

func TestValidDocumentsStillDecode(t *testing.T) {
	for _, doc := range []string{
		"tasks: [{name: t, run: x, count: 3, resources: {cpu: 0.5, memory: 1.5Gi, gpus: 2, gpuMemory: 24Gi}}]",
		`{"priority": -3, "tasks": [{"name": "t", "run": "x", "count": 3.0, "resources": {"cpu": "250m", "memory": 512}}]}`,
		"priority: 1000000\nmaxSlots: 0x10\ntasks: [{name: t, run: x, timeout: 1h30m, count: 1_000}]",
		"tasks:\n  - &b {name: a, run: x, resources: {cpu: 1}}\n  - {<<: *b, name: t}\n",
	} {
		var j Job
		if _, err := Decode([]byte(doc), &j); err != nil {
			t.Errorf("%q: %v", doc, err)
		}
	}
	var j Job
	if _, err := Decode([]byte("tasks: [{name: t, run: x, count: 3.0}]"), &j); err != nil || j.Tasks[0].Count != 3 {
		t.Errorf("count 3.0 = %d, %v; want 3", j.Tasks[0].Count, err)
	}
}

func TestJobIDsAreNamesThatCanBeRead(t *testing.T) {
	for _, id := range []string{".", "..", "...", "-x", ".hidden", strings.Repeat("a", MaxNameLen+1), "a/b", "a b", "é"} {
		t.Run(id, func(t *testing.T) {
			wantField(t, refusal(t, "id: '"+id+"'\ntasks: [{name: t, run: x}]"), "id")
		})
	}
	for _, id := range []string{"a", "job-1", "A.b_c-9", "1.2.3", strings.Repeat("a", MaxNameLen)} {
		var j Job
		if _, err := Decode([]byte("id: '"+id+"'\ntasks: [{name: t, run: x}]"), &j); err != nil {
			t.Fatal(err)
		}
		if _, err := j.Expand("", time.Time{}); err != nil {
			t.Errorf("id %q refused: %v", id, err)
		}
	}
}

// Counts are added up to bound the job's tasks: a count near the largest
// integer must not wrap the sum past the bound and expand.
func TestACountThatWouldWrapTheTotalIsRefused(t *testing.T) {
	for _, doc := range []string{
		"tasks: [{name: a, run: x}, {name: b, run: x, count: 9223372036854775807}]",
		"tasks: [{name: a, run: x, count: 3}, {name: b, run: x, count: 9223372036854775806}]",
	} {
		wantField(t, refusal(t, doc), "tasks[1].count", "100000")
	}
}
