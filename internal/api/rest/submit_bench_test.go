package rest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// BenchmarkSubmitLatency measures POST /v1/jobs of a one-task job against
// the size of the backlog: the server (a real controller on a SQLite file,
// synchronous=FULL, as in production) holds 0, 10,000 or 100,000 pending
// one-task jobs that no worker runs. An op is one submission; p50-ms and
// p99-ms are the latencies its caller saw. With clients=1 one caller
// submits after another (each call is a loop round and its commit); with
// clients=64 that many callers submit at once, as `allot bench --job-size
// 1 --submitters 64` does, and their submissions share rounds and commits.
// A submit must cost the same whatever the backlog.
func BenchmarkSubmitLatency(b *testing.B) {
	for _, pending := range []int{0, 10_000, 100_000} {
		for _, clients := range []int{1, 64} {
			b.Run(fmt.Sprintf("pending=%d/clients=%d", pending, clients), func(b *testing.B) {
				srv := newBacklogServer(b, pending)
				tr := http.DefaultTransport.(*http.Transport).Clone()
				tr.MaxIdleConnsPerHost = clients
				hc := &http.Client{Transport: tr}
				defer tr.CloseIdleConnections()
				var next atomic.Int64
				submit := func() time.Duration {
					doc := fmt.Sprintf(`{"id":"s-%d","tasks":[{"name":"t","run":"true"}]}`, next.Add(1))
					start := time.Now()
					resp, err := hc.Post(srv.URL+"/v1/jobs", "application/json", strings.NewReader(doc))
					if err != nil {
						b.Error(err)
						return 0
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					took := time.Since(start)
					if resp.StatusCode != http.StatusCreated {
						b.Errorf("status %d", resp.StatusCode)
					}
					return took
				}
				var mu sync.Mutex
				var took []time.Duration
				if clients == 1 {
					for b.Loop() {
						took = append(took, submit())
					}
				} else {
					b.SetParallelism((clients + 1) / 2) // RunParallel starts GOMAXPROCS times this many callers
					b.ResetTimer()
					b.RunParallel(func(pb *testing.PB) {
						var mine []time.Duration
						for pb.Next() {
							mine = append(mine, submit())
						}
						mu.Lock()
						took = append(took, mine...)
						mu.Unlock()
					})
				}
				reportLatency(b, took)
			})
		}
	}
}

// reportLatency reports the median and 99th percentile of took, in
// milliseconds, and the submissions per second.
func reportLatency(b *testing.B, took []time.Duration) {
	if len(took) == 0 {
		return
	}
	slices.Sort(took)
	at := func(q float64) float64 {
		i := min(len(took)-1, int(q*float64(len(took))))
		return float64(took[i]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(float64(len(took))/b.Elapsed().Seconds(), "jobs/s")
}

// newBacklogServer runs the API, with the server's default settings, on a
// real controller and SQLite file that holds pending one-task jobs: no
// worker is registered, so none of them runs.
func newBacklogServer(b *testing.B, pending int) *httptest.Server {
	b.Helper()
	st, err := sqlite.Open(filepath.Join(b.TempDir(), "allot.db"))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	quiet := slog.New(slog.DiscardHandler)
	ctrl, err := control.New(ctx, control.Config{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}}, Logger: quiet}, st)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	srv := httptest.NewServer(New(ctrl, Options{Logger: quiet}).Handler())
	b.Cleanup(func() {
		srv.Close()
		cancel()
		<-done
		st.Close()
	})
	const chunk = 1000
	for i := 0; i < pending; i += chunk {
		specs := make([]spec.Job, min(chunk, pending-i))
		for k := range specs {
			specs[k] = spec.Job{ID: fmt.Sprintf("backlog-%d", i+k), Tasks: []spec.Task{{Name: "t", Run: "true"}}}
		}
		subs, err := ctrl.SubmitManyBy(ctx, "", specs)
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range subs {
			if s.Err != nil {
				b.Fatal(s.Err)
			}
		}
	}
	return srv
}
