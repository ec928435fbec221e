package web_test

import (
	"strings"
	"testing"
)

func TestJobPageSaysWhatOtherJobsTheJobWaitsFor(t *testing.T) {
	f := newFixture(t, false)
	f.must(201, "POST", "/v1/jobs", "id: first\nqueue: batch\ntasks: [{name: t, run: 'true', resources: {gpus: 64}}]\n", nil)
	f.must(201, "POST", "/v1/jobs", "id: second\nqueue: batch\ndependsOn: [{job: first, type: afterany}]\ntasks: [{name: t, run: 'true'}]\n", nil)
	_, body := f.call("GET", "/jobs/second", "")
	if want := `Depends on afterany <a href="/jobs/first">first</a> (waiting)`; !strings.Contains(body, want) {
		t.Errorf("the job page lacks %q:\n%s", want, body)
	}
}
