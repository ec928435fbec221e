package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-sched/allot/internal/api/rest"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// defaultListen is where the server listens and the client looks.
const defaultListen = "127.0.0.1:7070"

func newServerCmd() *cobra.Command {
	var configFile, listen, dataDir string
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the control plane: the API, the scheduling loop and the embedded store",
		Long: `server runs Allot's control plane. It keeps its state in an embedded SQLite
database under --data-dir, serves the REST API under /v1, and schedules tasks onto
the workers that register with it (allot worker).`,
		Example: `  allot server --data-dir /var/lib/allot --listen 0.0.0.0:7070
  allot server --config allot.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cfg spec.ServerConfig
			if configFile != "" {
				var err error
				if cfg, err = spec.LoadServerConfig(configFile); err != nil {
					return fmt.Errorf("%s:\n%w", configFile, err)
				}
			}
			if cmd.Flags().Changed("listen") || cfg.Server.Listen == "" {
				cfg.Server.Listen = listen
			}
			if cmd.Flags().Changed("data-dir") || cfg.Server.DataDir == "" {
				cfg.Server.DataDir = dataDir
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			srv, err := startServer(ctx, cfg, newLogger())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "allot server listening on %s (data in %s)\n", srv.URL, cfg.Server.DataDir)
			return srv.Wait()
		},
	}
	cmd.Flags().StringVar(&configFile, "config", "", "configuration file (YAML): queues, policies, placement, server settings")
	cmd.Flags().StringVar(&listen, "listen", defaultListen, "address to listen on")
	cmd.Flags().StringVar(&dataDir, "data-dir", "allot-data", "directory of the embedded database")
	return cmd
}

func newLogger() *slog.Logger {
	level := slog.LevelInfo
	if os.Getenv("ALLOT_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// runningServer is a started control plane.
type runningServer struct {
	URL  string
	errc chan error
}

// Wait blocks until the server stops and returns why.
func (s *runningServer) Wait() error { return <-s.errc }

// startServer opens the store, rebuilds the engine, and serves the API until
// ctx ends.
func startServer(ctx context.Context, cfg spec.ServerConfig, log *slog.Logger) (*runningServer, error) {
	if err := os.MkdirAll(cfg.Server.DataDir, 0o755); err != nil {
		return nil, err
	}
	st, err := sqlite.Open(filepath.Join(cfg.Server.DataDir, "allot.db"))
	if err != nil {
		return nil, err
	}
	ctrl, err := control.New(ctx, control.Config{Scheduling: cfg.Scheduling, CycleEvery: time.Duration(cfg.Server.CycleEvery),
		StopGrace: time.Duration(cfg.Server.StopGrace), Logger: log}, st)
	if err != nil {
		st.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		st.Close()
		return nil, err
	}
	api := rest.New(ctrl, rest.Options{MaxBodyBytes: int64(cfg.Server.MaxBodyBytes) << 20, Logger: log})
	hs := &http.Server{Handler: api.Handler(), ReadHeaderTimeout: 10 * time.Second}
	hs.RegisterOnShutdown(ctrl.ReleaseWaiters)
	s := &runningServer{URL: "http://" + ln.Addr().String(), errc: make(chan error, 1)}
	loopCtx, stopLoop := context.WithCancel(context.Background())
	loopErr := make(chan error, 1)
	go func() { loopErr <- ctrl.Run(loopCtx) }()
	go func() {
		serveErr := make(chan error, 1)
		go func() { serveErr <- hs.Serve(ln) }()
		var err error
		select {
		case <-ctx.Done():
		case err = <-loopErr:
			loopErr <- err
		case err = <-serveErr:
		}
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = hs.Shutdown(shutdown)
		cancel()
		stopLoop()
		if lerr := <-loopErr; err == nil {
			err = lerr
		}
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.errc <- err
	}()
	return s, nil
}
