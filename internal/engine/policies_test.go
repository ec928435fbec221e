package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/classload"
	"github.com/allot-sched/allot/internal/engine/policy/fairshare"
	"github.com/allot-sched/allot/internal/engine/policy/priority"
	"github.com/allot-sched/allot/internal/engine/policy/sla"
	"github.com/allot-sched/allot/internal/model"
)

// Every registered policy reports a problem in its block, and a job it
// refuses, as a field error whose path is data: the caller roots it under
// the queue (queues[0].policy) or the job without reading the text.
func TestPolicyErrorsCarryTheirFieldPath(t *testing.T) {
	cases := []struct {
		name string
		err  func() error
		path string
		msg  string
	}{
		{"unknown kind", func() error { _, err := policy.New(policy.Config{Kind: "lottery"}); return err },
			"kind", `unknown policy "lottery" (known: [classload fairshare fifo priority sla])`},
		{"another policy's block", func() error {
			_, err := policy.New(policy.Config{Kind: fairshare.Name, Settings: &sla.Config{}})
			return err
		}, "fairshare", "settings of type *sla.Config belong to another policy"},
		{"fairshare", func() error {
			_, err := policy.New(policy.Config{Kind: fairshare.Name, Settings: &fairshare.Config{Shares: []fairshare.ShareWeight{{Share: "a"}, {}}}})
			return err
		}, "fairshare.shares[1].share", "required"},
		{"priority", func() error {
			_, err := policy.New(policy.Config{Kind: priority.Kind.Name, Settings: &priority.Config{UsageWindow: -time.Second}})
			return err
		}, "priority.usageWindow", "must not be negative (got -1s)"},
		{"sla", func() error {
			_, err := policy.New(policy.Config{Kind: sla.Name, Settings: &sla.Config{Groups: []sla.Group{{Name: "a", Value: 2}, {Name: "a", Value: 1}}}})
			return err
		}, "sla.groups[1].name", `group "a" is already defined by groups[0]`},
		{"classload absent", func() error { _, err := policy.New(policy.Config{Kind: classload.Name}); return err },
			"classload", `required when kind is "classload"`},
		{"classload", func() error {
			_, err := policy.New(policy.Config{Kind: classload.Name, Settings: &classload.Config{Classes: []classload.LoadClass{{Name: "a", Percent: 50}, {Name: "b", Percent: 101}}}})
			return err
		}, "classload.classes[1].percent", "must be between 0 and 100, got 101"},
		{"classload JSON", func() error {
			var c classload.Config
			return c.UnmarshalJSON([]byte(`{"classes":[],"rebalanceMinimumDuration":5}`))
		}, "classload.rebalanceMinimumDuration", `want a duration string such as "5m", got 5`},
		{"priority job", func() error {
			return policy.CheckJob(policy.Config{Kind: priority.Kind.Name}, &model.Job{ID: "j", Priority: 10})
		}, "priority", "10 is outside levels 0-9"},
		{"sla job", func() error {
			return policy.CheckJob(policy.Config{Kind: sla.Name, Settings: &sla.Config{Groups: []sla.Group{{Name: "gold", Value: 2}}}}, &model.Job{ID: "j", SLAGroup: "tin"})
		}, "slaGroup", `"tin" is not an SLA group (groups: gold)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var fe *model.FieldError
			if err := tc.err(); !errors.As(err, &fe) || fe.Path != tc.path || fe.Msg != tc.msg {
				t.Fatalf("err = %#v, want a field error at %q: %q", err, tc.path, tc.msg)
			}
		})
	}
}
