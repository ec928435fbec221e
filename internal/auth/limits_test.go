package auth

import (
	"errors"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/store"
)

var (
	// plain is a submitter token created without limits: the defaults.
	plain = Principal{TokenID: "tok-p", Name: "alice", Role: Submitter, Queues: []string{Any}, Shares: []string{Any}}
	// nameless is the same without a name.
	nameless = Principal{TokenID: "tok-n", Role: Submitter, Queues: []string{Any}, Shares: []string{Any}}
	// grid may use priorities up to 7, urgent, its team's requestors, two
	// SLA groups and the users of its team. Lists are sorted, as New
	// stores them.
	grid = Principal{TokenID: "tok-g", Name: "grid-ci", Role: Submitter, Queues: []string{Any}, Shares: []string{Any},
		Limits: store.TokenLimits{MaxPriority: 7, Urgent: true, Requestors: []string{"ci", "team-a-*"},
			SLAGroups: []string{"bronze", "silver"}, Users: []string{"build", "svc-a-*"}}}
	// anything may use any requestor, SLA group and user.
	anything = Principal{TokenID: "tok-x", Role: Submitter, Queues: []string{Any}, Shares: []string{Any},
		Limits: store.TokenLimits{MaxPriority: 9999, Requestors: []string{Any}, SLAGroups: []string{Any}, Users: []string{Any}}}
)

func TestSubmittersSetOnlyWhatTheirTokenAllows(t *testing.T) {
	cases := []struct {
		name    string
		p       Principal
		s       Scheduling
		field   string // "" allowed, "-" refused without a field
		message string // when set, the refusal's message
	}{
		{"defaults: a plain job", plain, Scheduling{}, "", ""},
		{"defaults: priority 0", plain, Scheduling{Priority: 0}, "", ""},
		{"defaults: a lower priority", plain, Scheduling{Priority: -3}, "", ""},
		{"defaults: priority 1", plain, Scheduling{Priority: 1}, "priority",
			"priority 1 is above this token's maximum priority 0"},
		{"defaults: priority 999", plain, Scheduling{Priority: 999}, "priority", ""},
		{"defaults: urgent", plain, Scheduling{Urgent: true}, "urgent", "this token may not make jobs urgent"},
		{"defaults: its own name as requestor", plain, Scheduling{Requestor: "alice"}, "", ""},
		{"defaults: another requestor", plain, Scheduling{Requestor: "bob"}, "requestor",
			`requestor "bob" is not allowed for this token (allowed: its own name "alice")`},
		{"defaults: a requestor that starts like its name", plain, Scheduling{Requestor: "alice2"}, "requestor", ""},
		{"defaults without a name: any requestor", nameless, Scheduling{Requestor: "bob"}, "requestor",
			`requestor "bob" is not allowed for this token (allowed: none)`},
		{"defaults: an SLA group", plain, Scheduling{SLAGroup: "gold"}, "slaGroup",
			`slaGroup "gold" is not allowed for this token (allowed: none)`},
		{"defaults: a user", plain, Scheduling{User: "root"}, "user", `user "root" is not allowed for this token (allowed: none)`},
		{"limits: everything within", grid, Scheduling{Priority: 7, Urgent: true, Requestor: "team-a-etl", SLAGroup: "silver", User: "svc-a-1"}, "", ""},
		{"limits: exact requestor", grid, Scheduling{Requestor: "ci"}, "", ""},
		{"limits: prefix itself", grid, Scheduling{Requestor: "team-a-"}, "", ""},
		{"limits: the token's name is not implied by a list", grid, Scheduling{Requestor: "grid-ci"}, "requestor",
			`requestor "grid-ci" is not allowed for this token (allowed: ci, team-a-*)`},
		{"limits: priority above", grid, Scheduling{Priority: 8}, "priority", "priority 8 is above this token's maximum priority 7"},
		{"limits: another team's requestor", grid, Scheduling{Requestor: "team-b-etl"}, "requestor", ""},
		{"limits: a requestor that only contains the prefix", grid, Scheduling{Requestor: "x-team-a-1"}, "requestor", ""},
		{"limits: another SLA group", grid, Scheduling{SLAGroup: "gold"}, "slaGroup",
			`slaGroup "gold" is not allowed for this token (allowed: bronze, silver)`},
		{"limits: another user", grid, Scheduling{User: "root"}, "user", `user "root" is not allowed for this token (allowed: build, svc-a-*)`},
		{"limits: no requestor, group or user", grid, Scheduling{}, "", ""},
		{"priority is checked first", grid, Scheduling{Priority: 8, SLAGroup: "gold"}, "priority", ""},
		{"any: all names", anything, Scheduling{Priority: 9999, Requestor: "r", SLAGroup: "g", User: "u"}, "", ""},
		{"any: urgent still needs its own limit", anything, Scheduling{Urgent: true}, "urgent", ""},
		{"admin: no limits", admin, Scheduling{Priority: 1 << 30, Urgent: true, Requestor: "r", SLAGroup: "g", User: "root"}, "", ""},
		{"anonymous: no limits", Anonymous, Scheduling{Priority: 99, Urgent: true, User: "root"}, "", ""},
		{"worker: refused", gpuWorker, Scheduling{}, "-", "a worker token may not submit jobs"},
		{"no role: refused", noRole, Scheduling{}, "-", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.AllowScheduling(tc.s)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("AllowScheduling(%+v) = %v, want allowed", tc.s, err)
				}
				return
			}
			var d *Denied
			if !errors.As(err, &d) || !errors.Is(err, ErrForbidden) {
				t.Fatalf("AllowScheduling(%+v) = %v, want *Denied", tc.s, err)
			}
			if tc.field != "-" && d.Field != tc.field {
				t.Errorf("field %q, want %q (%s)", d.Field, tc.field, d.Message)
			}
			if tc.message != "" && d.Message != tc.message {
				t.Errorf("message %q, want %q", d.Message, tc.message)
			}
		})
	}
}

func TestEachLimitHasItsOwnCheck(t *testing.T) {
	// The single checks are what other routes use: the priority route, and
	// the run-as user of a job.
	if err := grid.AllowPriority(7, true); err != nil {
		t.Errorf("AllowPriority(7, urgent) = %v", err)
	}
	for _, tc := range []struct {
		name  string
		err   error
		field string
	}{
		{"priority", plain.AllowPriority(1, false), "priority"},
		{"urgent", plain.AllowPriority(0, true), "urgent"},
		{"requestor", plain.AllowRequestor("bob"), "requestor"},
		{"slaGroup", grid.AllowSLAGroup("gold"), "slaGroup"},
		{"user", grid.AllowUser("root"), "user"},
		{"user of a worker token", gpuWorker.AllowUser("build"), ""},
	} {
		var d *Denied
		if !errors.As(tc.err, &d) || d.Field != tc.field {
			t.Errorf("%s: %v, want a refusal naming %q", tc.name, tc.err, tc.field)
		}
	}
	for name, err := range map[string]error{
		"own user":          grid.AllowUser("svc-a-7"),
		"no user":           plain.AllowUser(""),
		"admin user":        admin.AllowUser("root"),
		"own SLA group":     grid.AllowSLAGroup("bronze"),
		"own requestor":     plain.AllowRequestor("alice"),
		"no requestor":      nameless.AllowRequestor(""),
		"admin priority":    admin.AllowPriority(1<<30, true),
		"anonymous urgency": Anonymous.AllowPriority(5, true),
	} {
		if err != nil {
			t.Errorf("%s: %v, want allowed", name, err)
		}
	}
}

func TestTokenLimitsAreCheckedAtCreation(t *testing.T) {
	sub := func(l store.TokenLimits) Spec {
		return Spec{Role: Submitter, Queues: []string{Any}, Shares: []string{Any}, Limits: l}
	}
	checkSpecs(t, []specCase{
		{"no limits", sub(store.TokenLimits{}), ""},
		{"all limits", sub(store.TokenLimits{MaxPriority: 9, Urgent: true, Requestors: []string{"team-*", "ci"},
			SLAGroups: []string{"gold"}, Users: []string{"svc-*", "*"}}), ""},
		{"negative maximum priority", sub(store.TokenLimits{MaxPriority: -1}), "maxPriority"},
		{"empty requestor pattern", sub(store.TokenLimits{Requestors: []string{"ci", ""}}), "requestors[1]"},
		{"star inside a requestor pattern", sub(store.TokenLimits{Requestors: []string{"te*m"}}), "requestors[0]"},
		{"space in an SLA group", sub(store.TokenLimits{SLAGroups: []string{"go ld"}}), "slaGroups[0]"},
		{"control character in a user", sub(store.TokenLimits{Users: []string{"ro\not"}}), "users[0]"},
		{"long user", sub(store.TokenLimits{Users: []string{strings.Repeat("u", MaxNameLen+1)}}), "users[0]"},
		{"too many users", sub(store.TokenLimits{Users: make([]string, MaxScopeItems+1)}), "users"},
		{"admin with a maximum priority", Spec{Role: Admin, Limits: store.TokenLimits{MaxPriority: 3}}, "maxPriority"},
		{"admin with urgent", Spec{Role: Admin, Limits: store.TokenLimits{Urgent: true}}, "urgent"},
		{"worker with users", Spec{Role: Worker, Workers: []string{"w"}, Limits: store.TokenLimits{Users: []string{"u"}}}, "users"},
		{"worker with requestors", Spec{Role: Worker, Workers: []string{"w"}, Limits: store.TokenLimits{Requestors: []string{"r"}}}, "requestors"},
		{"admin with SLA groups", Spec{Role: Admin, Limits: store.TokenLimits{SLAGroups: []string{"g"}}}, "slaGroups"},
	})
}

func TestNewTokenKeepsItsLimitsAndThePrincipalCarriesThem(t *testing.T) {
	tok, _, err := New(Spec{Name: "ci", Role: Submitter, Queues: []string{Any}, Shares: []string{Any},
		Limits: store.TokenLimits{MaxPriority: 5, Urgent: true, Requestors: []string{"ci", "b", "ci"}, Users: []string{"z", "a"}}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	want := store.TokenLimits{MaxPriority: 5, Urgent: true, Requestors: []string{"b", "ci"}, Users: []string{"a", "z"}}
	if got := FromToken(tok).Limits; !equalLimits(got, want) {
		t.Errorf("principal limits %+v, want %+v (sorted, without repeats)", got, want)
	}
}

func TestSubmitterNameIsTheTokensNameOrID(t *testing.T) {
	for _, tc := range []struct {
		p    Principal
		want string
	}{
		{plain, "alice"},
		{nameless, "tok-n"},
		{Principal{TokenID: "tok-a", Name: "ops", Role: Admin}, "ops"},
		{Anonymous, ""},
	} {
		if got := tc.p.SubmitterName(); got != tc.want {
			t.Errorf("%+v: SubmitterName = %q, want %q", tc.p, got, tc.want)
		}
	}
}

func equalLimits(a, b store.TokenLimits) bool {
	return a.MaxPriority == b.MaxPriority && a.Urgent == b.Urgent && strings.Join(a.Requestors, ",") == strings.Join(b.Requestors, ",") &&
		strings.Join(a.SLAGroups, ",") == strings.Join(b.SLAGroups, ",") && strings.Join(a.Users, ",") == strings.Join(b.Users, ",")
}
