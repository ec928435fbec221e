package web

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/store"
)

// failingControl answers every list with an internal error whose text must
// stay in the server's log.
type failingControl struct{}

var errInternal = errors.New("sqlite: disk I/O error at /var/lib/allot/allot.db page 7")

func (failingControl) Snapshot() *control.Snapshot                   { return &control.Snapshot{} }
func (failingControl) Queues(context.Context) ([]api.Queue, error)   { return nil, errInternal }
func (failingControl) Workers(context.Context) ([]api.Worker, error) { return nil, errInternal }
func (failingControl) Jobs(context.Context, store.JobFilter) (api.JobList, error) {
	return api.JobList{}, errInternal
}
func (failingControl) Job(context.Context, string) (api.Job, error) { return api.Job{}, errInternal }
func (failingControl) PendingOf(context.Context, []string) (map[string][]engine.Pending, error) {
	return nil, errInternal
}
func (failingControl) Explain(context.Context, string) (api.Explanation, error) {
	return api.Explanation{}, errInternal
}
func (failingControl) Logs(context.Context, string) (api.Logs, error) { return api.Logs{}, errInternal }
func (failingControl) RunningTasks(context.Context) (map[string][]control.WorkerTask, error) {
	return nil, errInternal
}
func (failingControl) TaskCounts(context.Context, []string) (map[string]map[string]int, error) {
	return nil, errInternal
}

// A page that fails for an internal reason answers 500 without the
// internal error's text, which the log keeps.
func TestAFailedPageDoesNotShowTheInternalError(t *testing.T) {
	d := New(failingControl{}, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for _, path := range []string{"/jobs", "/workers", "/jobs/j1"} {
		rec := httptest.NewRecorder()
		d.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		body := rec.Body.String()
		if rec.Code != http.StatusInternalServerError {
			t.Errorf("%s: status %d, want 500", path, rec.Code)
		}
		if strings.Contains(body, "sqlite") || strings.Contains(body, "/var/lib/allot") {
			t.Errorf("%s: the page shows the internal error:\n%s", path, body)
		}
	}
}
