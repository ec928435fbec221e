package rest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store/sqlite"
	"github.com/allot-sched/allot/internal/store/storetest"
)

// newServerOnFullDisk runs the API on a real controller whose store's
// writes fail as on a full disk while the returned FullDisk is full.
func newServerOnFullDisk(t *testing.T) (*httptest.Server, *storetest.FullDisk) {
	return newServerOnFullDiskWith(t, Options{})
}

func newServerOnFullDiskWith(t *testing.T, opt Options) (*httptest.Server, *storetest.FullDisk) {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "allot.db"))
	if err != nil {
		t.Fatal(err)
	}
	disk := storetest.NewFullDisk(st)
	ctx, cancel := context.WithCancel(context.Background())
	ctrl, err := control.New(ctx, control.Config{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}},
		StoreRetryMax: 20 * time.Millisecond}, disk)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	srv := httptest.NewServer(New(ctrl, opt).Handler())
	t.Cleanup(func() {
		srv.Close()
		cancel()
		<-done
		st.Close()
	})
	return srv, disk
}

func TestFullDiskAnswers503StoreUnavailableAndServesReads(t *testing.T) {
	srv, disk := newServerOnFullDisk(t)
	t.Cleanup(disk.Free) // first: a held request ends, and the server can close
	job := func(id string) string { return "id: " + id + "\nqueue: batch\ntasks: [{name: t, run: 'true'}]\n" }
	disk.Fill()
	held := make(chan int, 1)
	go func() {
		status, _, _ := call(t, srv, "POST", "/v1/jobs", "application/yaml", job("held"))
		held <- status
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, eb, _ := call(t, srv, "GET", "/readyz", "", "")
		if status == http.StatusServiceUnavailable && eb.Error.Code == api.CodeStoreUnavailable && strings.Contains(eb.Error.Message, "disk full") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz on a full disk: %d %+v; want 503 store_unavailable naming the disk", status, eb)
		}
		time.Sleep(5 * time.Millisecond)
	}

	for _, tc := range []struct{ name, method, path, body string }{
		{"submit", "POST", "/v1/jobs", job("refused")},
		{"token", "POST", "/v1/tokens", `{"name": "ci", "role": "submitter", "queues": ["*"], "shares": ["*"]}`},
	} {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/yaml")
			if strings.HasPrefix(tc.body, "{") {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var eb api.ErrorBody
			_ = json.NewDecoder(resp.Body).Decode(&eb)
			if resp.StatusCode != http.StatusServiceUnavailable || eb.Error.Code != api.CodeStoreUnavailable || !strings.Contains(eb.Error.Message, "disk full") {
				t.Errorf("%s on a full disk: %d %+v; want 503 store_unavailable naming the disk", tc.name, resp.StatusCode, eb)
			}
			if resp.Header.Get("Retry-After") == "" {
				t.Errorf("%s on a full disk: no Retry-After", tc.name)
			}
		})
	}
	for _, path := range []string{"/v1/jobs", "/v1/queues", "/v1/workers", "/healthz"} {
		if status, eb, _ := call(t, srv, "GET", path, "", ""); status != http.StatusOK {
			t.Errorf("GET %s on a full disk: %d %+v, want 200", path, status, eb)
		}
	}

	disk.Free()
	if status := <-held; status != http.StatusCreated {
		t.Errorf("the held submission, once stored: %d, want 201", status)
	}
	if status, eb, _ := call(t, srv, "GET", "/readyz", "", ""); status != http.StatusOK {
		t.Errorf("/readyz once there is room: %d %+v", status, eb)
	}
	if status, _, _ := call(t, srv, "GET", "/v1/jobs/refused", "", ""); status != http.StatusNotFound {
		t.Errorf("the refused job: %d, want 404 (a 503 means it was not accepted)", status)
	}
	if status, eb, _ := call(t, srv, "POST", "/v1/jobs", "application/yaml", job("refused")); status != http.StatusCreated {
		t.Errorf("the refused job sent again: %d %+v, want 201", status, eb)
	}
}

// A change held by a full disk is answered before the client's connection
// gives up (the write timeout): 503 held, with the outcome unknown, not an
// answer computed after nobody can read it; once the disk frees, the held
// job is stored, and sending it again says so.
func TestAChangeHeldByAFullDiskIsAnsweredBeforeTheWriteTimeout(t *testing.T) {
	srv, disk := newServerOnFullDiskWith(t, Options{Timeouts: Timeouts{Write: time.Second}})
	t.Cleanup(disk.Free)
	job := "id: held\nqueue: batch\ntasks: [{name: t, run: 'true'}]\n"
	disk.Fill()
	type answer struct {
		status int
		eb     api.ErrorBody
		retry  string
	}
	held := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/jobs", strings.NewReader(job))
		req.Header.Set("Content-Type", "application/yaml")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			held <- answer{}
			return
		}
		defer resp.Body.Close()
		var eb api.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&eb)
		held <- answer{resp.StatusCode, eb, resp.Header.Get("Retry-After")}
	}()
	select {
	case a := <-held:
		if a.status != http.StatusServiceUnavailable || a.eb.Error.Code != api.CodeHeld || !strings.Contains(a.eb.Error.Message, "disk full") ||
			!strings.Contains(a.eb.Error.Message, "same id") || a.retry == "" {
			t.Fatalf("a submission held by a full disk: %d %+v (Retry-After %q); want 503 held naming the disk and how to learn the outcome", a.status, a.eb, a.retry)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to a submission held by a full disk while the disk stays full")
	}
	disk.Free()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if status, _, _ := call(t, srv, "GET", "/readyz", "", ""); status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the store takes no writes once the disk freed")
		}
	}
	if status, eb, _ := call(t, srv, "POST", "/v1/jobs", "application/yaml", job); status != http.StatusConflict && status != http.StatusOK {
		t.Errorf("the held job sent again: %d %+v, want it recognised as stored", status, eb)
	}
}
