package priority_test

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/allot-sched/allot/internal/engine/policy"
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
	const sla = `
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
	}{{prio, &p}, {sla, &s}} {
		dec := yaml.NewDecoder(strings.NewReader(doc.text))
		dec.KnownFields(true)
		if err := dec.Decode(doc.out); err != nil {
			t.Fatalf("decode: %v", err)
		}
	}
	if err := p.Priority.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := s.SLA.Validate(); err != nil {
		t.Fatal(err)
	}
	if p.Priority.UsageWindow != 10*time.Minute || p.Priority.PreemptDelay != 30*time.Second ||
		p.Priority.PreemptablePercent != 50 || p.Priority.PreemptThreshold != 30*time.Minute || len(p.Priority.Weights) != 10 {
		t.Errorf("priority block = %+v", p.Priority)
	}
	if len(s.SLA.Groups) != 3 || s.SLA.Groups[2] != (policy.SLAGroup{Name: "c", Value: 50}) || !s.SLA.Preemption {
		t.Errorf("sla block = %+v", s.SLA)
	}
}
