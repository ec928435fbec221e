package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/api/rest"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/config"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/datadir"
	"github.com/allot-sched/allot/internal/metrics"
	"github.com/allot-sched/allot/internal/netlimit"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store/postgres"
)

// defaultListen is where the server listens and the client looks.
const defaultListen = "127.0.0.1:7070"

func newServerCmd() *cobra.Command {
	var configFile, listen, dataDir, storeURL string
	var heartbeatTimeout, leaderTimeout time.Duration
	var advertise string
	var noAuth bool
	var tlsCert, tlsKey string
	var logs logFlags
	var limits limitFlags
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the control plane: the API, the scheduling loop and the embedded store",
		Long: `server runs Allot's control plane. It keeps its state in an embedded SQLite
database under --data-dir, or in PostgreSQL with --store postgres://... (env
ALLOT_STORE, server.store; the data directory then keeps only the server's lock
and admin token), serves the REST API under /v1, and schedules tasks onto the
workers that register with it (allot worker).

Several servers may share one PostgreSQL database (each with its own --data-dir): one
leads and schedules, the others stand by, answer 503 not_leader with the leader's
URL (--advertise), and one of them takes over when the leader dies, freezes or
loses the database for --leader-timeout (docs/ha.md).

One server uses a data directory at a time (it locks DATA_DIR/allot.lock); its files
are readable by their owner only. While the disk is full, changes are refused with
503 store_unavailable, reads and running tasks go on, and the server resumes by itself
once there is room.

Every API call but /healthz, /readyz and /openapi.json needs a bearer token. On
its first start the server creates an admin token and writes its secret to
DATA_DIR/admin.token (readable by its owner only); create the other tokens with
allot tokens create. --tls-cert and --tls-key serve the API over HTTPS.

Connections are bounded in total and per client address, sized from the
open-file limit, with a reserve for /healthz and the workers; idle and slow
clients are cut by the timeouts (server.limits in the configuration file,
or the flags below; docs/security.md, "Connections and timeouts").`,
		Example: `  allot server --data-dir /var/lib/allot --listen 0.0.0.0:7070
  allot server --store 'postgres://allot@db.internal/allot?sslmode=verify-full' --data-dir /var/lib/allot
  allot server --config allot.yaml --tls-cert server.crt --tls-key server.key
  ALLOT_TOKEN=$(cat /var/lib/allot/admin.token) allot tokens list`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadServerConfig(configFile)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("listen") || cfg.Server.Listen == "" {
				cfg.Server.Listen = listen
			}
			if cmd.Flags().Changed("data-dir") || cfg.Server.DataDir == "" {
				cfg.Server.DataDir = dataDir
			}
			storeField, err := applyStore(&cfg, cmd.Flags().Changed("store"), storeURL, os.LookupEnv)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("heartbeat-timeout") {
				cfg.Server.HeartbeatTimeout = spec.Duration(heartbeatTimeout)
			}
			if cmd.Flags().Changed("leader-timeout") {
				cfg.Server.LeaderTimeout = spec.Duration(leaderTimeout)
			}
			if cmd.Flags().Changed("advertise") {
				cfg.Server.Advertise = advertise
			}
			if cmd.Flags().Changed("tls-cert") {
				cfg.Server.TLS.Cert = tlsCert
			}
			if cmd.Flags().Changed("tls-key") {
				cfg.Server.TLS.Key = tlsKey
			}
			if err := limits.apply(&cfg.Server.Limits); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log, err := logs.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if noAuth {
				log.Warn("authentication is off (--no-auth): anyone who reaches the API may do anything", "listen", cfg.Server.Listen)
			} else if len(cfg.Server.Inputs.Allow) == 0 {
				log.Warn("server.inputs.allow is not set: a submitter's job inputs make the server check any local path or URL; list the allowed directories and URL prefixes on a shared server")
			}
			srv, err := startServerWith(ctx, cfg, log, serverOptions{auth: !noAuth, storeField: storeField})
			if err != nil {
				return err
			}
			if cfg.Server.Store != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "allot server listening on %s (store %s, local files in %s)\n", srv.URL, postgres.Redact(cfg.Server.Store), cfg.Server.DataDir)
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "allot server listening on %s (data in %s)\n", srv.URL, cfg.Server.DataDir)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "dashboard: %s/\n", srv.URL)
			return srv.Wait()
		},
	}
	cmd.Flags().StringVar(&configFile, "config", "", "configuration file (YAML): queues, policies, placement, server settings")
	cmd.Flags().StringVar(&listen, "listen", defaultListen, "address to listen on")
	cmd.Flags().StringVar(&dataDir, "data-dir", "allot-data", "directory of the embedded database (with --store: of the server's lock and admin token)")
	cmd.Flags().StringVar(&storeURL, "store", "", "PostgreSQL URL to keep the state in instead of the data directory (env ALLOT_STORE)")
	cmd.Flags().DurationVar(&heartbeatTimeout, "heartbeat-timeout", control.DefaultHeartbeatTimeout, "a worker silent this long is declared lost and its tasks requeued")
	cmd.Flags().DurationVar(&leaderTimeout, "leader-timeout", DefaultLeaderTimeout, "with --store: a leader silent this long (frozen, cut from the database) loses the lead to a standby")
	cmd.Flags().StringVar(&advertise, "advertise", "", "with --store: the URL the other servers send clients to while this one leads (default: the listen URL)")
	cmd.Flags().BoolVar(&noAuth, "no-auth", false, "serve the API without authentication: every caller is an admin (trusted networks only)")
	cmd.Flags().StringVar(&tlsCert, "tls-cert", "", "certificate file (PEM) to serve HTTPS with; needs --tls-key")
	cmd.Flags().StringVar(&tlsKey, "tls-key", "", "private key file (PEM) of --tls-cert")
	logs.add(cmd)
	limits.add(cmd)
	return cmd
}

// logFlags are --log-format and --log-level of the commands that run a
// server: text for people, JSON for log pipelines that index request_id
// and job.
type logFlags struct{ format, level string }

func (f *logFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.format, "log-format", "text", "log format: text or json")
	cmd.Flags().StringVar(&f.level, "log-level", "", "log level: debug, info, warn or error (default info; debug when ALLOT_DEBUG is set)")
}

// logger builds the logger the flags ask for, writing to w.
func (f *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	if os.Getenv("ALLOT_DEBUG") != "" {
		opts.Level = slog.LevelDebug
	}
	if f.level != "" {
		var l slog.Level
		if err := l.UnmarshalText([]byte(f.level)); err != nil {
			return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", f.level)
		}
		opts.Level = l
	}
	switch f.format {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", f.format)
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

// serverOptions are the ways a started server differs between commands.
type serverOptions struct {
	// auth switches authentication on, creating the first admin token in
	// the data directory if the store has none.
	auth bool
	// storeField names where cfg.Server.Store came from (--store,
	// ALLOT_STORE, server.store), for the errors about it.
	storeField string
}

// sharedStore is a store that several servers may open (PostgreSQL): one
// of them leads at a time, elected through the store.
type sharedStore interface {
	Candidate(holder, url string, timeout time.Duration) *postgres.Candidate
}

// eventWatcher is a shared store that tells of every commit that appended
// events, whichever server made it: a follower's event streams wake by it.
type eventWatcher interface {
	WatchEvents(ctx context.Context, changed func())
}

// currentCtrl shows the metrics the snapshot of the replica's controller
// while it leads, and an empty one while it does not: a follower schedules
// nothing, and sums over the replicas must not count the former leader's
// last snapshot again.
type currentCtrl struct{ r *replica }

func (c currentCtrl) serving() *control.Controller {
	c.r.mu.Lock()
	serving := c.r.serving
	c.r.mu.Unlock()
	if !serving {
		return nil
	}
	return c.r.ctrl.Load()
}

func (c currentCtrl) Snapshot() *control.Snapshot {
	if ctrl := c.serving(); ctrl != nil {
		return ctrl.Snapshot()
	}
	return &control.Snapshot{}
}

func (c currentCtrl) FleetCost() api.FleetCost {
	if ctrl := c.serving(); ctrl != nil {
		return ctrl.FleetCost()
	}
	return api.FleetCost{}
}

// applyStore sets cfg.Server.Store from --store (when given) or else
// ALLOT_STORE (when set), which win over the configuration file, and
// returns the name of the setting it came from; a value that is not a
// PostgreSQL URL is refused, naming that setting.
func applyStore(cfg *spec.ServerConfig, flagSet bool, flag string, lookup func(string) (string, bool)) (string, error) {
	field := "server.store"
	if env, ok := lookup("ALLOT_STORE"); ok && env != "" {
		cfg.Server.Store, field = env, "ALLOT_STORE"
	}
	if flagSet {
		cfg.Server.Store, field = flag, "--store"
	}
	if err := spec.CheckStoreURL(cfg.Server.Store); err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	return field, nil
}

// startServer opens the store, rebuilds the engine, and serves the API until
// ctx ends, without authentication: every caller is an admin. allot dev uses
// it on loopback; allot server uses startServerWith.
func startServer(ctx context.Context, cfg spec.ServerConfig, log *slog.Logger) (*runningServer, error) {
	return startServerWith(ctx, cfg, log, serverOptions{})
}

// startServerWith is startServer with options.
func startServerWith(ctx context.Context, cfg spec.ServerConfig, log *slog.Logger, opt serverOptions) (*runningServer, error) {
	tuneGC()
	tlsConfig, err := serverTLS(cfg.Server.TLS)
	if err != nil {
		return nil, err
	}
	var dir *datadir.Dir
	if cfg.Server.Store != "" {
		dir, err = datadir.OpenLocal(cfg.Server.DataDir, cfg.Server.Store, log)
	} else {
		dir, err = datadir.Open(cfg.Server.DataDir, log)
	}
	if err != nil {
		return nil, err
	}
	st, err := dir.OpenStore(ctx)
	if err != nil {
		dir.Close()
		if cfg.Server.Store != "" {
			field := opt.storeField
			if field == "" {
				field = "server.store"
			}
			err = fmt.Errorf("%s: %w", field, err)
		}
		return nil, err
	}
	// A store that servers share (PostgreSQL) is led by one of them at a
	// time: this server stands in the election (replica.go).
	shared, isShared := st.(sharedStore)
	// closeStore closes the store, then releases the directory: another
	// server may take it only once this one wrote its last.
	closeStore := func() error {
		err := st.Close()
		dir.Close()
		return err
	}
	mx := metrics.New()
	var authn *auth.Authenticator
	if opt.auth {
		file := dir.AdminToken()
		tok, created, err := auth.Bootstrap(ctx, st, file, time.Now())
		if err != nil {
			closeStore()
			return nil, err
		}
		if created {
			log.Info("created the first admin token; its secret is in the file (mode 0600)", "token", tok.ID, "file", file)
		}
		if err := reportUnreadableTokens(ctx, st, log, mx); err != nil {
			closeStore()
			return nil, err
		}
		authn = auth.NewAuthenticator(st, nil, 0)
	}
	lim, timeouts := serverLimits(cfg.Server.Limits, log)
	ctrlCfg := control.Config{Scheduling: cfg.Scheduling, CycleEvery: time.Duration(cfg.Server.CycleEvery),
		StopGrace: time.Duration(cfg.Server.StopGrace), HeartbeatTimeout: time.Duration(cfg.Server.HeartbeatTimeout), InputAllow: cfg.Server.Inputs.Allow,
		MaxOutputBytes: int64(cfg.Server.MaxOutput) << 20, Logger: log, Observer: mx,
		MaxLiveTasks: cfg.Server.Limits.MaxLiveTasks, MaxLiveTasksPerSubmitter: cfg.Server.Limits.MaxLiveTasksPerSubmitter}
	var ctrl *control.Controller
	if !isShared {
		if ctrl, err = control.New(ctx, ctrlCfg, st); err != nil {
			closeStore()
			return nil, err
		}
	}
	tcp, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		closeStore()
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("cannot listen on %s: the address is in use (another allot server or allot dev?): "+
				"stop it, or listen elsewhere with --listen (server.listen in the configuration)", cfg.Server.Listen)
		}
		return nil, fmt.Errorf("cannot listen on %s (--listen, server.listen in the configuration): %w", cfg.Server.Listen, err)
	}
	// The limits sit under TLS: they count and refuse TCP connections,
	// and write their refusals through TLS themselves.
	limited := netlimit.Wrap(tcp, lim, netlimit.Options{Observer: mx, TLS: tlsConfig})
	mx.WatchConnections(limited)
	restOpt := rest.Options{MaxBodyBytes: int64(cfg.Server.MaxBodyBytes) << 20, Logger: log, Auth: authn,
		Metrics: mx.Handler(), Requests: mx, Timeouts: timeouts, Hosts: serverHosts(cfg.Server.Listen, cfg.Server.Advertise)}
	var (
		handler http.Handler
		rep     *replica
	)
	if isShared {
		timeout := time.Duration(cfg.Server.LeaderTimeout)
		if timeout <= 0 {
			timeout = DefaultLeaderTimeout
		}
		rep = &replica{timeout: timeout, log: log, settled: make(chan struct{})}
		restOpt.Leadership = rep
		handler = rep
	} else {
		mx.Watch(ctrl)
		handler = rest.New(ctrl, restOpt).Handler()
	}
	hs := &http.Server{Handler: handler, TLSConfig: tlsConfig,
		ReadHeaderTimeout: timeouts.Header, IdleTimeout: timeouts.Idle,
		ConnState: limited.ConnState, ConnContext: netlimit.ConnContext}
	if isShared {
		hs.RegisterOnShutdown(rep.releaseWaiters)
	} else {
		hs.RegisterOnShutdown(ctrl.ReleaseWaiters)
	}
	scheme := "http"
	var ln net.Listener = limited
	if tlsConfig != nil {
		scheme = "https"
		ln = tls.NewListener(limited, tlsConfig)
	}
	s := &runningServer{URL: scheme + "://" + ln.Addr().String(), errc: make(chan error, 1)}
	loopCtx, stopLoop := context.WithCancel(context.Background())
	loopErr := make(chan error, 1)
	if isShared {
		advertise := cfg.Server.Advertise
		if advertise == "" {
			advertise = s.URL
		}
		host, _ := os.Hostname()
		rep.self = advertise
		rep.cand = shared.Candidate(fmt.Sprintf("allot server on %s (PID %d) at %s", host, os.Getpid(), advertise), advertise, rep.timeout)
		var watch sync.Once
		rep.promote = func(ctx context.Context) (*control.Controller, http.Handler, error) {
			c, err := control.New(ctx, ctrlCfg, st)
			if err != nil {
				return nil, nil, err
			}
			watch.Do(func() { mx.Watch(currentCtrl{rep}) })
			return c, rest.New(c, restOpt).Handler(), nil
		}
		followerOpt := restOpt
		followerOpt.Leadership = followerView{rep}
		reads := control.NewStoreReader(st)
		followerOpt.FollowerReads = reads
		if w, ok := st.(eventWatcher); ok {
			go w.WatchEvents(loopCtx, reads.Notify)
		}
		hs.RegisterOnShutdown(reads.Close)
		follower := rest.New(nil, followerOpt).Handler()
		go func() { loopErr <- rep.run(loopCtx, follower) }()
		// Serve once the role is known, as a single server serves once its
		// engine is rebuilt; a replica that finds no leader serves
		// not_leader after a while.
		select {
		case <-rep.settled:
		case err := <-loopErr:
			loopErr <- err
		case <-ctx.Done():
		case <-time.After(rep.timeout + 10*time.Second):
		}
	} else {
		go func() { loopErr <- ctrl.Run(loopCtx) }()
	}
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
		if cerr := closeStore(); err == nil {
			err = cerr
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.errc <- err
	}()
	return s, nil
}

// serverTLS loads the certificate and key of server.tls (or --tls-cert and
// --tls-key); nil when neither is set: plain HTTP.
func serverTLS(t spec.TLSSettings) (*tls.Config, error) {
	if t.Cert == "" && t.Key == "" {
		return nil, nil
	}
	if t.Cert == "" || t.Key == "" {
		return nil, errors.New("server.tls: the certificate (--tls-cert) and its key (--tls-key) go together; give both")
	}
	cert, err := tls.LoadX509KeyPair(t.Cert, t.Key)
	if err != nil {
		return nil, fmt.Errorf("server.tls: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// loadServerConfig reads the configuration file, if any, and overlays the
// seeds' environment variables, which win over the file in server and dev
// alike.
func loadServerConfig(file string) (spec.ServerConfig, error) {
	var cfg spec.ServerConfig
	if file != "" {
		var err error
		if cfg, err = config.LoadServer(file); err != nil {
			return cfg, fmt.Errorf("%s:\n%w", file, err)
		}
	}
	if err := applyServerEnv(&cfg, os.LookupEnv); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// applyServerEnv lets the seeds' environment variables override the
// throttling and placement blocks of the server's configuration: in the
// seeds, they are the configuration. A bad value stops the server, naming
// the variable.
func applyServerEnv(cfg *spec.ServerConfig, lookup func(string) (string, bool)) error {
	if err := cfg.Scheduling.ApplyEnv(lookup); err != nil {
		return fmt.Errorf("environment:\n%w", err)
	}
	return nil
}

// reportUnreadableTokens logs and counts the stored tokens whose rows could
// not be read back: they authorise nothing (package auth refuses them),
// and an admin should revoke and replace them.
func reportUnreadableTokens(ctx context.Context, st auth.TokenStore, log *slog.Logger, mx *metrics.Metrics) error {
	toks, err := st.Tokens(ctx)
	if err != nil {
		return fmt.Errorf("listing tokens: %w", err)
	}
	n := 0
	for _, t := range toks {
		if t.Unreadable != "" {
			log.Error("a stored token cannot be read back; it authorises nothing: revoke it and create another",
				"token", t.ID, "name", t.Name, "err", t.Unreadable)
			n++
		}
	}
	mx.TokensUnreadable(n)
	return nil
}

// gcFloor is memory the garbage collector counts as live in a server
// (unless GOGC is set), so that it collects when the heap has grown by the
// live data plus gcFloor, not by the live data alone. A submission
// allocates about 30 KB that is garbage once it is answered; with a small
// live heap the collector ran every few megabytes and took about a tenth
// of the server's CPU under many small submissions. Raising GOGC would do
// the same for a small heap but multiply a large one (100,000 pending jobs
// held 1.8 GB at GOGC=400 against 1.1 GB at 100); this costs at most twice
// gcFloor whatever the heap holds. The floor is never written, so the
// kernel gives it no memory.
const gcFloor = 64 << 20

// gcBallast holds the floor for the life of the process.
var gcBallast []byte

// tuneGC sets the floor once, unless the environment chose (GOGC).
func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); !set && gcBallast == nil {
		gcBallast = make([]byte, gcFloor)
	}
}

// serverHosts are the names a request's Host may give while
// authentication is off, besides the loopback ones (rest.Options.Hosts):
// the listen address's host and the advertised URL's.
func serverHosts(listen, advertise string) []string {
	hosts := []string{listen}
	if u, err := url.Parse(advertise); err == nil && u.Host != "" {
		hosts = append(hosts, u.Host)
	}
	return hosts
}
