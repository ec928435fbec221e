package metrics

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// TestAnUnreadableStoredJobIsQuarantinedAndCounted writes a job row no
// version can read back (the memory 1e30 wrapped to the most negative
// integer) straight into a real SQLite store with SQL: a controller still
// starts on it, the job is failed with a reason, and the metric counts it.
func TestAnUnreadableStoredJobIsQuarantinedAndCounted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "allot.db")
	cfg := control.Config{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}}, Logger: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := control.New(ctx, cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	if _, err := c.Submit(ctx, spec.Job{ID: "big", Queue: "batch", Tasks: []spec.Task{{Name: "t", Run: "true"}}}); err != nil {
		t.Fatal(err)
	}
	stop()
	<-done
	st.Close()

	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE jobs SET spec = CAST(? AS BLOB) WHERE id = 'big'`,
		`{"id":"big","queue":"batch","tasks":[{"name":"t","run":"true","resources":{"memory":"-9223372036854775808Mi"}}]}`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	st, err = sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := New()
	cfg.Observer = m
	c, err = control.New(ctx, cfg, st)
	if err != nil {
		t.Fatalf("the server does not start on an unreadable row: %v", err)
	}
	runCtx, stop = context.WithCancel(ctx)
	defer func() { stop(); <-done }()
	go func() { done <- c.Run(runCtx) }()
	j, err := c.Job(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	if j.State != "failed" || len(j.Tasks) != 1 || j.Tasks[0].Reason == nil || j.Tasks[0].Reason.Code != model.ReasonQuarantined {
		t.Fatalf("the unreadable job is %s with tasks %+v; want failed, its task quarantined", j.State, j.Tasks)
	}
	if got := testutil.ToFloat64(m.quarantined.WithLabelValues(control.QuarantinedJob)); got != 1 {
		t.Errorf("allot_store_rows_quarantined_total{kind=\"job\"} = %v, want 1", got)
	}
}
