package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/spec"
)

// The server as allot server and allot dev start it exports /metrics, with
// the loop's and the API's metrics wired.
func TestStartedServerServesMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var cfg spec.ServerConfig
	cfg.Server.Listen = "127.0.0.1:0"
	cfg.Server.DataDir = filepath.Join(t.TempDir(), "data")
	srv, err := startServer(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		if err := srv.Wait(); err != nil {
			t.Error(err)
		}
	}()
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("X-Request-Id") == "" {
		t.Error("no X-Request-Id on the answer")
	}
	resp, err = http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"allot_scheduling_cycles_total", "allot_workers{state=\"ready\"} 0",
		`allot_api_request_duration_seconds_count{code="2xx",route="GET /healthz"} 1`, "go_goroutines"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestLogFlagsPickFormatAndLevel(t *testing.T) {
	t.Setenv("ALLOT_DEBUG", "")
	cases := []struct {
		format, level string
		wantErr       string
		json, debug   bool
	}{
		{format: "text"},
		{format: "json", json: true},
		{format: "json", level: "debug", json: true, debug: true},
		{format: "text", level: "WARN"},
		{format: "xml", wantErr: "--log-format"},
		{format: "text", level: "loud", wantErr: "--log-level"},
	}
	for _, c := range cases {
		t.Run(c.format+"/"+c.level, func(t *testing.T) {
			var buf bytes.Buffer
			f := logFlags{format: c.format, level: c.level}
			log, err := f.logger(&buf)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want one naming %s", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := log.Enabled(context.Background(), slog.LevelDebug); got != c.debug {
				t.Errorf("debug enabled %v, want %v", got, c.debug)
			}
			log.Error("x", "job", "j1")
			var m map[string]any
			isJSON := json.Unmarshal(buf.Bytes(), &m) == nil
			if isJSON != c.json || (isJSON && m["job"] != "j1") {
				t.Errorf("output %q: JSON %v, want %v", buf.String(), isJSON, c.json)
			}
		})
	}
}
