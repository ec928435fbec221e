package priority_test

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/priority"
	"github.com/allot-sched/allot/internal/engine/policy/sla"
)

// TestConfigBlocksDecode checks that the YAML blocks shown in
// docs/policies/priority.md decode into the config types, durations
// included, and validate.
func TestConfigBlocksDecode(t *testing.T) {
	const prio = `
kind: priority
priority:
  levels: 10
  weights: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
  algorithm: usage
  serialPriority: false
  aggregation: false
  usageWindow: 10m
  preemptDelay: 30s
  preemptablePercent: 50
  preemptThreshold: 30m
`
	const slaDoc = `
kind: sla
sla:
  groups:
    - {name: a, value: 20}
    - {name: b, value: 30}
    - {name: c, value: 50}
  preemption: true
  usageWindow: 10m
`
	var p, s policy.Config
	for _, doc := range []struct {
		text string
		out  *policy.Config
	}{{prio, &p}, {slaDoc, &s}} {
		dec := yaml.NewDecoder(strings.NewReader(doc.text))
		dec.KnownFields(true)
		if err := dec.Decode(doc.out); err != nil {
			t.Fatalf("decode: %v", err)
		}
	}
	pc, sc := p.Settings.(*priority.Config), s.Settings.(*sla.Config)
	if err := pc.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	if pc.UsageWindow != 10*time.Minute || pc.PreemptDelay != 30*time.Second ||
		pc.PreemptablePercent != 50 || pc.PreemptThreshold != 30*time.Minute || len(pc.Weights) != 10 {
		t.Errorf("priority block = %+v", pc)
	}
	if len(sc.Groups) != 3 || sc.Groups[2] != (sla.Group{Name: "c", Value: 50}) || !sc.Preemption {
		t.Errorf("sla block = %+v", sc)
	}
}
