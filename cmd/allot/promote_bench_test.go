package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store/postgres"
	"github.com/allot-sched/allot/internal/store/postgres/pgtest"
)

// BenchmarkPromotion measures what a standby does when it wins the
// election: rebuild the engine from a PostgreSQL store (control.New, the
// recovery a restarted server runs) on which 100,000 tasks run on 1,000
// workers. The store is filled once, by a leader's loop; each iteration
// is one promotion.
func BenchmarkPromotion(b *testing.B) {
	const (
		workers  = 1_000
		slots    = 100
		jobs     = 100
		perJob   = 1_000
		expected = jobs * perJob
	)
	ctx := context.Background()
	st, err := postgres.Open(ctx, pgtest.URL(b))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := control.Config{Logger: quiet, CycleEvery: 50 * time.Millisecond, HeartbeatTimeout: time.Hour}
	leader, err := control.New(ctx, cfg, st)
	if err != nil {
		b.Fatal(err)
	}
	loopCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- leader.Run(loopCtx) }()
	for i := range workers {
		reg := api.Register{Name: fmt.Sprintf("w-%04d", i), Resources: spec.Resources{CPU: slots * 1000, Memory: slots * 64}, Slots: slots}
		if _, err := leader.Register(ctx, reg); err != nil {
			b.Fatal(err)
		}
	}
	for j := range jobs {
		var js spec.Job
		doc := fmt.Sprintf(`{"id": "job-%03d", "tasks": [{"name": "t", "count": %d, "command": ["true"], "resources": {"cpu": 1, "memory": "64Mi"}}]}`, j, perJob)
		if _, err := spec.Decode([]byte(doc), &js); err != nil {
			b.Fatal(err)
		}
		if _, err := leader.Submit(ctx, js); err != nil {
			b.Fatal(err)
		}
	}
	running := func() int {
		_, tasks, err := st.Unfinished(ctx)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, ts := range tasks {
			for _, t := range ts {
				if t.State == "running" {
					n++
				}
			}
		}
		return n
	}
	deadline := time.Now().Add(5 * time.Minute)
	for leader.Snapshot().ReadyTasks > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	if n := running(); n != expected {
		b.Fatalf("%d tasks running in the store, want %d", n, expected)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := control.New(ctx, cfg, st); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(expected), "running-tasks")
}
