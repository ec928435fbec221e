package web_test

import (
	"regexp"
	"strings"
	"testing"
)

func TestJobPagesShowWhoSubmitted(t *testing.T) {
	f := newFixture(t, true)
	submitter, _ := authTokens(t, f) // named alice
	if status, body := f.callAs(submitter, "POST", "/v1/jobs", "id: hers\nqueue: batch\ntasks: [{name: t, run: 'true'}]\n"); status != 201 {
		t.Fatalf("submit: %d %s", status, body)
	}
	_, list := f.callAs(submitter, "GET", "/jobs", "")
	if text := pageText(list); !strings.Contains(text, "Submitter") || !strings.Contains(text, "hers batch alice") {
		t.Errorf("the job list lacks the submitter column: %s", text)
	}
	_, page := f.callAs(submitter, "GET", "/jobs/hers", "")
	if text := pageText(page); !regexp.MustCompile(`submitted [^·]* by alice`).MatchString(text) {
		t.Errorf("the job page does not say who submitted: %s", text)
	}
}
