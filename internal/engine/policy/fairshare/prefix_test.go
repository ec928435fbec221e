package fairshare

import (
	"errors"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/model"
)

// AWS Batch's share identifier prefixes: an entry ending in * sets the
// weight factor of every share identifier that starts with it. An exact
// entry wins over a prefix, and a longer prefix over a shorter one (Batch
// refuses such overlapping entries; the weights it gives every policy it
// accepts are the same).
func TestPrefixEntriesWeighEveryShareStartingWithThem(t *testing.T) {
	p := mustNew(t, &Config{Shares: []ShareWeight{
		{Share: "User*", WeightFactor: w(2)},
		{Share: "UserA*", WeightFactor: w(0.5)},
		{Share: "UserA1", WeightFactor: w(0.25)},
		{Share: "blue"},
	}})
	for share, want := range map[string]float64{
		"UserA7":  0.5,  // the prefix UserA*
		"UserA":   0.5,  // the prefix itself is a share that starts with it
		"UserA1":  0.25, // its exact entry
		"UserA10": 0.5,  // not the exact UserA1
		"UserB":   2,    // the shorter prefix User*
		"user":    1,    // prefixes are case-sensitive, as share identifiers
		"blue":    1,
		"UserA*":  0.5, // a share literally named with a star is just a name that starts with UserA
		"green":   1,
	} {
		if got := p.WeightFactor(share); got != want {
			t.Errorf("WeightFactor(%q) = %g, want %g", share, got, want)
		}
	}
}

func TestShareNamesThatCannotBeUsedAreRefused(t *testing.T) {
	for _, tc := range []struct {
		share, want string
	}{
		{"*", `fairshare.shares[0].share: a prefix needs at least one character before '*'`},
		{"User*A", `fairshare.shares[0].share: "User*A": '*' may only end a share identifier prefix`},
		{"User**", `fairshare.shares[0].share: "User**": '*' may only end a share identifier prefix`},
		{"a\tb", `fairshare.shares[0].share: "a\tb": no job's share can contain a control character`},
		{strings.Repeat("x", 257), `fairshare.shares[0].share: longer than 256 bytes, the longest share a job can name`},
	} {
		err := (&Config{Shares: []ShareWeight{{Share: tc.share}}}).Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("share %.20q: Validate() = %v, want %q", tc.share, err, tc.want)
		}
	}
	for _, ok := range []string{"UserA*", "a*", "team.x-1", strings.Repeat("x", 256), strings.Repeat("x", 256) + "*"} {
		if err := (&Config{Shares: []ShareWeight{{Share: ok}}}).Validate(); err != nil {
			t.Errorf("share %.20q: Validate() = %v, want nil", ok, err)
		}
	}
}

// The even reservation holds back a part for each entry with no active
// share: a prefix entry is active as soon as one share it weighs is.
func TestReservationCountsAPrefixEntryOnce(t *testing.T) {
	p := mustNew(t, &Config{ComputeReservation: 50, Shares: []ShareWeight{
		{Share: "UserA*"}, {Share: "blue"},
	}})
	if r := p.reserve(100, []string{"blue"}); r.held != 25 {
		t.Errorf("with UserA* idle: held %d of 100, want 25", r.held)
	}
	if r := p.reserve(100, []string{"UserA1", "UserA2"}); r.held != 25 {
		t.Errorf("with blue idle: held %d of 100, want 25", r.held)
	}
	if r := p.reserve(100, []string{"UserA1", "blue"}); r.held != 0 {
		t.Errorf("with both entries active: held %d of 100, want 0", r.held)
	}
}

// A job's share is an identifier, never a prefix: a '*' in it would read
// as a prefix entry of the policy and is refused at submission.
func TestAJobShareWithAStarIsRefused(t *testing.T) {
	for _, cfg := range []*Config{nil, {Shares: []ShareWeight{{Share: "UserA*"}}}} {
		err := cfg.CheckJob(&model.Job{ID: "j", Share: "UserA*"})
		var fe *model.FieldError
		if !errors.As(err, &fe) || fe.Path != "share" || !strings.Contains(fe.Msg, `"UserA*": a share identifier cannot contain '*'`) {
			t.Errorf("CheckJob = %v, want a field error on share", err)
		}
		if err := cfg.CheckJob(&model.Job{ID: "j", Share: "UserA1"}); err != nil {
			t.Errorf("CheckJob(UserA1) = %v", err)
		}
	}
}
