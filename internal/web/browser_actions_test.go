package web_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/allot-sched/allot/internal/api"
)

// browserLogin logs the browser in through the login page with secret.
func browserLogin(t *testing.T, ctx context.Context, f *fixture, secret string) {
	t.Helper()
	err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/login"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), secret),
		chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(`//h1[text()="Overview"]`),
	)
	if err != nil {
		t.Fatalf("logging in: %v", err)
	}
}

// eventually polls cond (the state through the API) for a few seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not so after 10s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// submit clicks sel, a form's button, and waits until the page the form's
// answer leads to has loaded: the page the click leaves is marked first, so
// the wait cannot end on it, and the next navigation cannot abort the form's
// (net::ERR_ABORTED). Evaluations that meet the page changing are retried.
func submit(ctx context.Context, sel string) error {
	if err := chromedp.Do(ctx, chromedp.WaitVisible(sel), chromedp.Evaluate[chromedp.Void]("window.__left = true"),
		chromedp.Click(sel)); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		loaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__left === undefined && document.readyState === "complete"`))
		if err == nil && loaded {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the page after clicking %s did not load in 10s (last error: %v)", sel, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBrowserActions clicks each action of the dashboard as an admin and
// as a submitter, and checks the state it changed through the API.
func TestBrowserActions(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, true)
	shots := screenshotDir(t)
	f.register("node-1", 1, `{"cpu":"4","memory":"8Gi"}`, map[string]string{"zone": "eu-1"})
	f.register("node-2", 1, `{"cpu":"2","memory":"4Gi"}`, nil)
	f.must(201, "POST", "/v1/jobs", "id: first\nqueue: fair\nshare: ops\ntasks: [{name: a, run: 'sleep 60', resources: {cpu: 3, memory: 6Gi}}]\n", nil)
	f.must(201, "POST", "/v1/jobs", "id: waits\nqueue: fair\nshare: research\ntasks:\n  - {name: step, count: 3, run: 'sleep 60', resources: {cpu: 1}}\n", nil)
	var alice api.NewToken
	f.must(201, "POST", "/v1/tokens", `{"name":"alice","role":"submitter","queues":["*"],"shares":["research"]}`, &alice)
	f.must(201, "POST", "/v1/jobs", "id: report\nqueue: batch\nshare: research\ntasks: [{name: r, run: 'true'}]\n", nil)
	f.must(201, "POST", "/v1/jobs", "id: huge\nqueue: batch\ntasks: [{name: h, run: 'true', resources: {cpu: 64, memory: 1Gi}}]\n", nil)
	f.advance(10 * time.Second)
	job := func(id string) api.Job {
		var j api.Job
		f.must(200, "GET", "/v1/jobs/"+id, "", &j)
		return j
	}
	worker := func(name string) string {
		var ws []api.Worker
		f.must(200, "GET", "/v1/workers", "", &ws)
		for _, w := range ws {
			if w.Name == name {
				return w.State
			}
		}
		return ""
	}
	click := func(t *testing.T, page, sel, then string) {
		t.Helper()
		err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+page))
		if err == nil {
			err = submit(ctx, sel)
		}
		if err == nil {
			err = chromedp.Do(ctx, chromedp.WaitVisible(then))
		}
		if err != nil {
			t.Fatalf("on %s clicking %s: %v", page, sel, err)
		}
	}

	browserLogin(t, ctx, f, f.admin)
	t.Run("hold and release", func(t *testing.T) {
		click(t, "/jobs/waits", "#hold", "#release")
		eventually(t, "the job is held", func() bool { return job("waits").HeldBy != "" })
		text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(normalise(text), "held by") || !strings.Contains(normalise(text), "Held by") {
			t.Errorf("the held job's page does not say who holds it and why it waits:\n%s", normalise(text))
		}
		if err := shoot(ctx, filepath.Join(shots, "job-held.png")); err != nil {
			t.Fatal(err)
		}
		click(t, "/jobs/waits", "#release", "#hold")
		eventually(t, "the job is released", func() bool { return job("waits").HeldBy == "" })
	})
	t.Run("priority", func(t *testing.T) {
		err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/jobs/waits"), chromedp.WaitVisible("#priority"),
			chromedp.SetValue("#priority", "3"))
		if err == nil {
			err = submit(ctx, "#set-priority")
		}
		if err == nil {
			err = chromedp.Do(ctx, chromedp.WaitVisible(`//b[@id="job-priority" and text()="3"]`))
		}
		if err != nil {
			t.Fatalf("setting the priority: %v", err)
		}
		eventually(t, "the priority is 3", func() bool { return job("waits").Priority == 3 })
	})
	t.Run("resources", func(t *testing.T) {
		err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/jobs/huge"), chromedp.WaitVisible("#res-cpu"),
			chromedp.SetValue("#res-cpu", "500m"), chromedp.SetValue("#res-memory", "2Gi"))
		if err == nil {
			err = submit(ctx, "#set-resources")
		}
		if err == nil {
			err = chromedp.Do(ctx, chromedp.WaitVisible(`//h1[text()="Job huge"]`))
		}
		if err != nil {
			t.Fatalf("setting the resources: %v", err)
		}
		eventually(t, "the job asks for 500m CPU and 2Gi", func() bool {
			r := job("huge").Spec.Tasks[0].Resources
			return r.CPU == 500 && r.Memory == 2048
		})
	})
	t.Run("drain, disable and ready", func(t *testing.T) {
		for _, state := range []string{"draining", "disabled", "ready"} {
			sel := `button[data-worker="node-2"][data-state="` + state + `"]`
			err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/workers"))
			if err == nil {
				err = submit(ctx, sel)
			}
			if err == nil {
				err = chromedp.Do(ctx, chromedp.WaitVisible("#worker-node-2 .ws-"+state))
			}
			if err != nil {
				t.Fatalf("clicking %s: %v", sel, err)
			}
			eventually(t, "node-2 is "+state, func() bool { return worker("node-2") == state })
		}
	})
	t.Run("overview shows fair-share usage and entitlement", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/"), chromedp.WaitVisible("#shares-fair")); err != nil {
			t.Fatalf("no fair-share table: %v", err)
		}
		text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#shares-fair")))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text, "ops") || !strings.Contains(text, "research") {
			t.Errorf("the fair-share table lacks a share: %s", normalise(text))
		}
		if err := shoot(ctx, filepath.Join(shots, "overview-fairshare.png")); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		click(t, "/jobs/waits", "#cancel", `//span[@id="job-state" and text()="cancelled"]`)
		eventually(t, "the job is cancelled", func() bool { return job("waits").State == "cancelled" })
	})

	t.Run("a submitter acts on its own jobs only", func(t *testing.T) {
		browserLogin(t, ctx, f, alice.Secret)
		if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/jobs"), chromedp.WaitVisible(`//h1[text()="Jobs"]`)); err != nil {
			t.Fatal(err)
		}
		text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text, "report") || strings.Contains(text, "first") {
			t.Errorf("alice's job list:\n%s\nwant her job report and not ops' first", normalise(text))
		}
		click(t, "/jobs/report", "#hold", "#release")
		eventually(t, "alice holds her job", func() bool { return job("report").HeldBy == "alice" })
		if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/jobs/first"), chromedp.WaitVisible(`//h1`)); err != nil {
			t.Fatal(err)
		}
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("form[action$='/hold']").length`))
		if err != nil || n != 0 {
			t.Errorf("alice's page of another team's job has %d hold forms (%v), want none", n, err)
		}
		if text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main"))); err != nil || !strings.Contains(text, "There is no job") {
			t.Errorf("alice's page of another team's job: %v\n%s\nwant it answered as missing", err, text)
		}
	})
}
