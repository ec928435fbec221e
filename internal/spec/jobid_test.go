package spec

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

var jobIDForm = regexp.MustCompile(`^job-\d{8}-\d{6}-[0-9a-hjkmnp-tv-z]{10}$`)

func TestNewJobIDsAreValidNamesAndDiffer(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewJobID(time.Date(2026, 11, 25, 16, 40, 0, 0, time.UTC))
		if !jobIDForm.MatchString(id) || !model.ValidName(id) {
			t.Fatalf("%q is not a valid job ID of the form NewJobID promises", id)
		}
		if seen[id] {
			t.Fatalf("%q made twice in 1000 IDs of the same second", id)
		}
		seen[id] = true
	}
}

func TestNewJobIDWithPrefixKeepsTheTimeAndRandomPart(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	a, b := NewJobIDWithPrefix("nightly", now), NewJobIDWithPrefix("nightly", now)
	if !strings.HasPrefix(a, "nightly-20260304-050607-") || len(a) != len("nightly-20260304-050607-")+10 || a == b || !validName(a) {
		t.Fatalf("ids %q and %q", a, b)
	}
}
