package spec

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// aliasBomb is a small YAML job whose tasks all reuse one anchored
// mapping of a 65,000-byte value: each task is within every field's bound,
// and the job, expanded, is tasks × 65 KB.
func aliasBomb(tasks int) string {
	var b strings.Builder
	b.WriteString("tasks:\n  - {name: t0, run: x, env: &e {A: \"" + strings.Repeat("y", 65000) + "\"}}\n")
	for i := 1; i < tasks; i++ {
		fmt.Fprintf(&b, "  - {name: t%d, run: x, env: *e}\n", i)
	}
	return b.String()
}

// laughs nests aliases: each level repeats the one before ten times, so
// that the text grows by a line a level and the expansion tenfold.
func laughs(levels int) string {
	var b strings.Builder
	b.WriteString("labels: {}\nx0: &x0 [\"" + strings.Repeat("l", 100) + "\"]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "x%d: &x%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*x%d, ", i-1), 10), ", "))
	}
	fmt.Fprintf(&b, "tasks: [{name: t, command: *x%d}]\n", levels)
	return b.String()
}

// allocated returns the bytes allocated while fn runs.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A document's aliases repeat a node without repeating its text: a small
// body could expand into gigabytes before the stored job's limit is
// checked. Decode refuses an expansion past the limit before it expands,
// naming the body and the line where the limit is passed, and without
// allocating anything like the expansion.
func TestAliasesCannotExpandAJobPastTheStoredLimit(t *testing.T) {
	var merged strings.Builder
	merged.WriteString("tasks:\n  - &t {name: t0, run: x, env: {A: \"" + strings.Repeat("m", 65000) + "\"}}\n")
	for i := 1; i < 2000; i++ {
		fmt.Fprintf(&merged, "  - {<<: *t, name: t%d}\n", i)
	}
	for _, tt := range []struct {
		name, doc string
		line      int // where the expansion passes the limit
	}{
		{"one anchored mapping in every task", aliasBomb(2000), 18},
		{"aliases of aliases", laughs(7), 6},
		{"merge keys", merged.String(), 18},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var list Errors
			bytes := allocated(func() { list = refusal(t, tt.doc) })
			wantField(t, list, "body", "alias", fmt.Sprint(MaxJobSpecBytes))
			if list[0].Line != tt.line {
				t.Errorf("the error is on line %d, want %d: %v", list[0].Line, tt.line, list)
			}
			if bytes > 50<<20 {
				t.Errorf("refusing a %d-byte document allocated %d MB", len(tt.doc), bytes>>20)
			}
		})
	}
}

// Aliases within the limit still decode, and a document without aliases
// is bounded by its own size: its fields' limits name what is too long.
func TestAliasesWithinTheLimitDecode(t *testing.T) {
	var j Job
	if _, err := Decode([]byte(aliasBomb(15)), &j); err != nil {
		t.Fatalf("15 tasks of one 65 KB mapping: %v", err)
	}
	if len(j.Tasks) != 15 || len(j.Tasks[14].Env["A"]) != 65000 {
		t.Fatalf("decoded %d tasks", len(j.Tasks))
	}
	long := "tasks: [{name: t, run: x, env: {A: " + strings.Repeat("x", 2*MaxJobSpecBytes) + "}}]"
	wantField(t, refusal(t, long), "tasks[0].env.A", fmt.Sprint(MaxEnvValueBytes))
}

// A document is one document: what follows it, a second document or text
// that is not part of the first, is refused naming the body, not dropped.
func TestTextAfterTheDocumentIsRefused(t *testing.T) {
	for _, tt := range []struct {
		name, doc string
		line      int
		words     []string
	}{
		{"a second YAML document", "id: y-1\ntasks: [{name: t, run: x}]\n---\nid: y-2\ntasks: [{name: t, run: x}]\n", 4, []string{"second document"}},
		{"a second document after an empty one", "id: y-1\ntasks: [{name: t, run: x}]\n---\n---\nid: y-2\n", 5, []string{"second document"}},
		{"a second document after an end marker", "id: y-1\ntasks: [{name: t, run: x}]\n...\nid: y-2\n", 4, []string{"after the document"}},
		{"text after JSON", `{"id":"a","tasks":[{"name":"t","run":"x"}]} GARBAGE`, 1, []string{"GARBAGE"}},
		{"brackets after JSON", `{"id":"a","tasks":[{"name":"t","run":"x"}]}]]]`, 1, []string{"]]]"}},
		{"a second JSON object", `{"id":"a","tasks":[{"name":"t","run":"x"}]} {"id":"b"}`, 1, []string{"second document"}},
		{"a second JSON object on the next line", "{\"id\":\"a\",\n\"tasks\":[{\"name\":\"t\",\"run\":\"x\"}]}\n{\"id\":\"b\"}", 3, []string{"second document"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			list := refusal(t, tt.doc)
			wantField(t, list, "body", tt.words...)
			if tt.line > 0 && list[0].Line != tt.line {
				t.Errorf("the error is on line %d, want %d: %v", list[0].Line, tt.line, list)
			}
		})
	}
	for _, doc := range []string{
		"id: a\ntasks: [{name: t, run: x}]\n---\n",
		"id: a\ntasks: [{name: t, run: x}]\n...\n",
		"id: a\ntasks: [{name: t, run: x}]\n---\n# nothing\n",
		"---\nid: a\ntasks: [{name: t, run: x}]\n",
		"{\"id\":\"a\",\"tasks\":[{\"name\":\"t\",\"run\":\"x\"}]}\n\n",
	} {
		var j Job
		if _, err := Decode([]byte(doc), &j); err != nil || j.ID != "a" {
			t.Errorf("%q: %v, id %q", doc, err, j.ID)
		}
	}
}

// A key given twice is named by its path, in a one-line JSON document as
// on separate lines, whatever follows it on its line.
func TestAKeyGivenTwiceIsNamed(t *testing.T) {
	for _, tt := range []struct {
		name, doc, field string
	}{
		{"a queue in one-line JSON", `{"queue":"qb","queue":"qa","share":"teama","tasks":[{"name":"t","run":"x"}]}`, "queue"},
		{"an id in one-line JSON", `{"id":"d1","id":"d2","tasks":[{"name":"t","run":"x"}]}`, "id"},
		{"a task's name in one-line JSON", `{"tasks":[{"name":"t","name":"u","run":"x","priority":1}]}`, "tasks[0].name"},
		{"an env key of the second task", `{"tasks":[{"name":"t","run":"x"},{"name":"u","run":"x","env":{"A":"1","A":"2"},"count":2}]}`, "tasks[1].env.A"},
		{"a label in YAML", "labels: {team: a, team: b}\ntasks: [{name: t, run: x}]", "labels.team"},
		{"a queue in YAML", "queue: a\ntasks: [{name: t, run: x}]\nqueue: b\n", "queue"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			list := refusal(t, tt.doc)
			if list[0].Path != tt.field || !strings.Contains(list[0].Msg, "twice") {
				t.Errorf("first error %v, want one naming %s given twice", list, tt.field)
			}
		})
	}
}

// count makes names: an entry a of count 2 makes a-0 and a-1. An entry
// written with one of those names is refused naming the written entry and
// the one whose count made the name.
func TestANameThatCountMakesCannotBeWrittenToo(t *testing.T) {
	for _, tt := range []struct {
		name, doc, field string
		words            []string
	}{
		{"after the count", `{"queue":"qa","tasks":[{"name":"a","run":"x","count":2},{"name":"a-0","run":"y"}]}`, "tasks[1].name", []string{"a-0", "count", "tasks[0]"}},
		{"before the count", `{"tasks":[{"name":"a-1","run":"y"},{"name":"a","run":"x","count":2}]}`, "tasks[0].name", []string{"a-1", "count", "tasks[1]"}},
		{"zero-padded", "tasks: [{name: b, run: x, count: 12}, {name: c, run: x}, {name: b-07, run: x}]", "tasks[2].name", []string{"b-07", "tasks[0]"}},
		{"needed by another", "tasks: [{name: w, run: x, count: 3}, {name: w-2, run: x}, {name: z, run: x, needs: [w]}]", "tasks[1].name", []string{"w-2", "tasks[0]"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			list := refusal(t, tt.doc)
			wantField(t, list, tt.field, tt.words...)
			if len(list) != 1 {
				t.Errorf("want one error, got %v", list)
			}
		})
	}
	for _, doc := range []string{
		"tasks: [{name: b, run: x, count: 12}, {name: b-7, run: x}, {name: b-12, run: x}, {name: b-x, run: x}]",
		"tasks: [{name: b, run: x, count: 1}, {name: b-0, run: x}]",
		"tasks: [{name: a-0, run: x, count: 2}, {name: a, run: x, count: 2}]",
	} {
		var j Job
		if _, err := Decode([]byte(doc), &j); err != nil {
			t.Fatal(err)
		}
		if _, err := j.Expand("", time.Time{}); err != nil {
			t.Errorf("%q: %v", doc, err)
		}
	}
}

// The decoder compares the keys of a mapping pair by pair, so its time
// grows with the square of the keys (30,000 took 10 s). A job's mapping
// of thousands of keys, far more than any of its mappings holds, is
// refused naming it before it is decoded.
func TestAJobMappingOfThousandsOfKeysIsRefusedBeforeDecoding(t *testing.T) {
	keys := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"k%d":""`, i)
		}
		return b.String()
	}
	for _, tt := range []struct {
		name, doc, field string
	}{
		{"env", `{"tasks":[{"name":"t","run":"x","env":{` + keys(5000) + `}}]}`, "tasks[0].env"},
		{"labels", `{"labels":{` + keys(5000) + `},"tasks":[{"name":"t","run":"x"}]}`, "labels"},
		{"the job", `{` + keys(4999) + `,"tasks":[{"name":"t","run":"x"}]}`, "body"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var j Job
			_, err := Decode([]byte(tt.doc), &j)
			var list Errors
			if !errors.As(err, &list) || list[0].Path != tt.field || !strings.Contains(list[0].Msg, "5000 keys") {
				t.Errorf("Decode: %.300v; want an error naming %q and its 5000 keys", err, tt.field)
			}
		})
	}
	var j Job
	if _, err := Decode([]byte(`{"tasks":[{"name":"t","run":"x","env":{`+keys(MaxEnv)+`}}]}`), &j); err != nil {
		t.Errorf("an env of %d variables: %v", MaxEnv, err)
	}
}
