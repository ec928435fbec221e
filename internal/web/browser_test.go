package web_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds Debian's Chromium. A machine without it skips the browser
// tests, but CI (CI=true), whose .ci/run installs it, fails instead.
func chromium(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is not installed (.ci/run installs Debian's chromium): %v", err)
		}
		t.Skipf("chromium is not installed (apt-get install chromium): %v", err)
	}
	return path
}

// browser starts headless Chromium with the flags this machine needs: no
// sandbox (root), no GPU, and none of Chromium's own background traffic,
// which a closed network refuses; a fresh profile each time.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	// The first call starts the browser, which lives as long as its
	// context: the time limit goes on the calls after it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancelTimeout)
	return ctx
}

// screenshotDir is docs/screenshots with ALLOT_SCREENSHOTS=1 (to refresh
// the pictures the docs show), a temporary directory otherwise.
func screenshotDir(t *testing.T) string {
	if os.Getenv("ALLOT_SCREENSHOTS") == "1" {
		dir := filepath.Join("..", "..", "docs", "screenshots")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

// TestBrowserShowsEveryPage logs in through the login page with the admin
// token, as a person would, then loads each page of a server that ran the
// scenario, checks what it shows against the control plane, and saves a
// full-page screenshot.
func TestBrowserShowsEveryPage(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, true)
	f.scenario()
	want := expectations(t, f)
	shots := screenshotDir(t)

	err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/workers"), chromedp.WaitVisible(chromedp.CSS("#token")))
	if err != nil {
		t.Fatalf("opening the dashboard: %v", err)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(loc, "/login?next=") {
		t.Fatalf("without a login the dashboard shows %s, want the login page", loc)
	}
	if err := shoot(ctx, filepath.Join(shots, "login.png")); err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#token"), f.admin),
		chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(`//h1[text()="Workers"]`),
	)
	if err != nil {
		t.Fatalf("logging in: %v", err)
	}
	if loc, err = chromedp.Run(ctx, chromedp.Location()); err != nil {
		t.Fatal(err)
	}
	if loc != f.srv.URL+"/workers" {
		t.Fatalf("after the login the browser is at %s, want /workers", loc)
	}

	pages := []struct{ path, title, shot string }{
		{"/", "Overview", "overview.png"},
		{"/workers", "Workers", "workers.png"},
		{"/jobs", "Jobs", "jobs.png"},
		{"/jobs/pipeline", "Job pipeline", "job.png"},
		{"/endpoints", "Endpoints", "endpoints.png"},
	}
	for _, p := range pages {
		t.Run(p.path, func(t *testing.T) {
			err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+p.path), chromedp.WaitVisible(`//h1[text()="`+p.title+`"]`))
			if err != nil {
				t.Fatalf("loading %s: %v", p.path, err)
			}
			text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
			if err != nil {
				t.Fatal(err)
			}
			text = normalise(text)
			for _, w := range want[p.path] {
				if !strings.Contains(text, w) {
					t.Errorf("%s lacks %q", p.path, w)
				}
			}
			if err := shoot(ctx, filepath.Join(shots, p.shot)); err != nil {
				t.Fatal(err)
			}
		})
	}

	t.Run("DAG boxes and edges", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/jobs/pipeline"), chromedp.WaitVisible(chromedp.CSS(".dag"))); err != nil {
			t.Fatal(err)
		}
		boxes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(".dag g.task")))
		if err != nil {
			t.Fatal(err)
		}
		edges, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(".dag path.edge")))
		if err != nil {
			t.Fatal(err)
		}
		var job struct {
			Tasks []struct {
				Needs []string `json:"needs"`
			} `json:"tasks"`
		}
		f.must(200, "GET", "/v1/jobs/pipeline", "", &job)
		needs := 0
		for _, tk := range job.Tasks {
			needs += len(tk.Needs)
		}
		if len(boxes) != len(job.Tasks) || len(edges) != needs {
			t.Errorf("the DAG has %d boxes and %d edges, want %d and %d", len(boxes), len(edges), len(job.Tasks), needs)
		}
	})

	t.Run("the overview refreshes itself", func(t *testing.T) {
		// A new worker registers while the page is open: htmx's next poll
		// shows it without a reload.
		if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(".card"))); err != nil {
			t.Fatal(err)
		}
		before, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".card")))
		if err != nil {
			t.Fatal(err)
		}
		after := before
		f.register("node-late", 1, `{"cpu":"1"}`, nil)
		f.advance(10 * time.Second)
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			if after, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".card"))); err != nil {
				t.Fatal(err)
			}
			// Mid-swap the card can read empty: wait for the new figure.
			if strings.Contains(normalise(after), "ready 4") {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if !strings.Contains(normalise(after), "ready 4") {
			t.Errorf("the workers card did not refresh: before %q, after %q", normalise(before), normalise(after))
		}
	})
}

// shoot saves a full-page PNG of what the browser shows.
func shoot(ctx context.Context, file string) error {
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return err
	}
	return os.WriteFile(file, png, 0o644)
}
