package spec

import (
	"strings"
	"testing"
	"time"
)

func TestEveryStringOfAJobIsBounded(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	task := func(extra string) string { return "tasks:\n  - name: t\n    run: x\n" + extra }
	for _, tt := range []struct {
		name, doc, field string
	}{
		{"a command argument", "tasks: [{name: t, command: [echo, " + long(MaxArgBytes+1) + "]}]", "tasks[0].command[1]"},
		{"a script", task("    env: {A: b}\n") + "  - {name: u, run: " + long(MaxScriptBytes+1) + "}\n", "tasks[1].run"},
		{"an env value", task("    env: {A: " + long(MaxEnvValueBytes+1) + "}\n"), "tasks[0].env.A"},
		{"an env key", task("    env: {A" + long(MaxEnvKeyLen) + ": b}\n"), "tasks[0].env"},
		{"a workdir", task("    workdir: " + long(MaxPathBytes+1) + "\n"), "tasks[0].workdir"},
		{"a model", task("    model: " + long(MaxValueLen+1) + "\n"), "tasks[0].model"},
		{"a dataset", task("    dataset: " + long(MaxValueLen+1) + "\n"), "tasks[0].dataset"},
		{"a label value", "labels: {team: " + long(MaxValueLen+1) + "}\n" + task(""), "labels"},
		{"a selector value", "selector: {zone: " + long(MaxValueLen+1) + "}\n" + task(""), "selector"},
		{"a selector key", "selector: {" + long(MaxNameLen+1) + ": a}\n" + task(""), "selector"},
		{"a requestor", "requestor: " + long(MaxValueLen+1) + "\n" + task(""), "requestor"},
		{"a share", "share: " + long(MaxValueLen+1) + "\n" + task(""), "share"},
		{"an SLA group", "slaGroup: " + long(MaxValueLen+1) + "\n" + task(""), "slaGroup"},
		{"a queue", "queue: " + long(MaxNameLen+1) + "\n" + task(""), "queue"},
		{"an endpoint", "endpoint: " + long(MaxNameLen+1) + "\n" + task(""), "endpoint"},
		{"a variant", "endpoint: e\nvariant: " + long(MaxNameLen+1) + "\n" + task(""), "variant"},
		{"an input", "inputs: [/" + long(MaxPathBytes) + "]\n" + task(""), "inputs[0]"},
		{"a control character in a requestor", "requestor: \"a\\u0000b\"\n" + task(""), "requestor"},
		{"the whole job", task("    command: [" + strings.Repeat(long(MaxArgBytes-10)+", ", MaxJobSpecBytes/MaxArgBytes+1) + "x]\n"), "body"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantField(t, refusal(t, tt.doc), tt.field)
		})
	}
}

func TestJobsWithinTheLimitsAreAccepted(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	doc := "id: " + long(MaxNameLen) + "\nrequestor: alice@example.com\nlabels: {team: " + long(MaxValueLen) + "}\ntasks:\n" +
		"  - name: t\n    command: [echo, " + long(MaxArgBytes) + "]\n    env: {A: " + long(MaxEnvValueBytes) + "}\n    workdir: /" + long(MaxPathBytes-1) + "\n"
	var j Job
	if _, err := Decode([]byte(doc), &j); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Expand("", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := j.CheckRunnable(""); err != nil {
		t.Fatal(err)
	}
}
