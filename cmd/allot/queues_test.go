package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
)

func TestQueuesTableIsReadable(t *testing.T) {
	var qs []api.Queue
	raw := `[{"name":"batch","priority":0,"running":1,"waiting":2,
	  "policy":{"kind":"fairshare","fairshare":{"shares":[{"share":"research","weightFactor":0.5},{"share":"prod"}],"shareDecaySeconds":3600}},
	  "status":[{"entitledFraction":0.25,"named":true,"running":1,"share":"prod","slotSeconds":12,"usage":0.5,"waiting":2,"weightFactor":1}]},
	 {"name":"inference","priority":10,"running":0,"waiting":0,"policy":{"kind":"fifo"}}]`
	if err := json.Unmarshal([]byte(raw), &qs); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := queuesTable(&b, qs, &clientFlags{noHeaders: true}); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(b.String(), "\n"); !strings.HasPrefix(first, "batch ") {
		t.Errorf("with --no-headers the first line is %q, want the batch queue's", first)
	}
	b.Reset()
	if err := queuesTable(&b, qs, &clientFlags{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(out, "\n")
	if got := strings.Fields(lines[0]); strings.Join(got, " ") != "QUEUE PRIORITY RUNNING WAITING POLICY" {
		t.Errorf("header %q", lines[0])
	}
	if strings.Contains(out, `{"`) {
		t.Errorf("the policy is printed as JSON:\n%s", out)
	}
	for _, want := range []string{"fairshare: shares=research(weightFactor=0.5) prod, shareDecaySeconds=3600", "inference  10", "fifo"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	var status string
	for _, l := range lines {
		if strings.Contains(l, "SHARE") {
			status = strings.Join(strings.Fields(l), " ")
		}
	}
	if want := "SHARE RUNNING WAITING ENTITLED FRACTION NAMED SLOT SECONDS USAGE WEIGHT FACTOR"; status != want {
		t.Errorf("status header %q, want %q\n%s", status, want, out)
	}
}
