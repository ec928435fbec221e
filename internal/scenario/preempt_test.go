package scenario

import (
	"strings"
	"testing"
)

// The block's errors name the field; a written 0 for maxPercent is not "no
// cap"; preemption and a decay window are refused together.
func TestFairsharePreemptionConfigErrors(t *testing.T) {
	cases := []struct{ policy, want string }{
		{`{kind: fairshare, fairshare: {preemption: {maxPercent: 0}}}`, "queues[0].policy.fairshare.preemption.maxPercent: must be between 1 and 100 (got 0)"},
		{`{kind: fairshare, fairshare: {preemption: {maxPercent: 101}}}`, "queues[0].policy.fairshare.preemption.maxPercent: must be between 1 and 100"},
		{`{kind: fairshare, fairshare: {preemption: {afterSeconds: -1}}}`, "queues[0].policy.fairshare.preemption.afterSeconds: must not be negative"},
		{`{kind: fairshare, fairshare: {shareDecaySeconds: 60, preemption: {}}}`, "queues[0].policy.fairshare.preemption: works on current usage only"},
		{`{kind: fairshare, fairshare: {preemption: {after: 5}}}`, "queues[0].policy.fairshare.preemption.after"},
	}
	for _, tc := range cases {
		doc := "queues:\n  - name: q\n    policy: " + tc.policy + "\nworkers: [{name: w}]\njobs: [{id: j, tasks: [{name: t}]}]\n"
		_, err := Parse([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.policy, err, tc.want)
		}
	}
}
