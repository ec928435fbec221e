package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/allot-sched/allot/internal/agent"
	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/spec"
)

func newDevCmd() *cobra.Command {
	var listen, dataDir, configFile string
	var workers, slots int
	var withAuth bool
	var runAs string
	var allowUsers []string
	var logs logFlags
	var limits limitFlags
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a server, local workers and an embedded store: everything for a first try",
		Long: `dev starts the control plane on an embedded store in a temporary directory (or
--data-dir) and a few worker agents on this machine that run tasks as real processes.
It prints the URL and a first command to try, and stops everything on Ctrl-C.

Without --auth the API takes no token (every caller is an admin), so dev only
listens on a loopback address, and refuses what a web page may make a browser
send it: requests to other names than loopback ones (DNS rebinding), with
another site's Origin, or with bodies of other media types than JSON and YAML.
With --auth it works as allot server does: the admin token's secret is in
DATA_DIR/admin.token, the local workers get a worker token of their own, and
it listens on any --listen address.

The local workers run tasks as allot worker does: started as root, as nobody
(--run-as), or as the user a job names if --allow-user allows it; else as
dev's own user, who can read DATA_DIR and so the admin token: with --auth,
start dev as root to keep tasks from it. Ctrl-C stops the workers (and their
tasks) first, then the server.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (rerr error) {
			if slots < 1 {
				return fmt.Errorf("--slots: must be at least 1, got %d", slots)
			}
			cfg, err := loadServerConfig(configFile)
			if err != nil {
				return err
			}
			cfg.Server.Listen = listen
			if err := limits.apply(&cfg.Server.Limits); err != nil {
				return err
			}
			if !withAuth && !loopback(listen) {
				return fmt.Errorf("--listen %s: without --auth, allot dev listens only on a loopback address (127.0.0.1, ::1, localhost); add --auth to listen there", listen)
			}
			if dataDir == "" {
				dir, err := os.MkdirTemp("", "allot-dev-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				dataDir = dir
			}
			cfg.Server.DataDir = dataDir
			runAs = taskRunAs(runAs, cmd.Flags().Changed("run-as"), os.Geteuid())
			log, err := logs.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if withAuth {
				// The agents hold their token in this process, as allot
				// worker's do in theirs.
				if err := protectProcess(); err != nil {
					return err
				}
			}
			// Ctrl-C stops the workers first, and the server once they
			// told it they stopped: the server has a context of its own.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			srvCtx, stopServer := context.WithCancel(context.WithoutCancel(cmd.Context()))
			defer stopServer()
			var srv *runningServer
			if withAuth {
				srv, err = startServerWith(srvCtx, cfg, log, serverOptions{auth: true})
			} else {
				srv, err = startServer(srvCtx, cfg, log)
			}
			if err != nil {
				return err
			}
			srvErr := make(chan error, 1)
			go func() { srvErr <- srv.Wait() }()
			workersCtx, stopWorkers := context.WithCancel(ctx)
			var wg sync.WaitGroup
			// However dev ends, its workers stop first (each stops its
			// tasks and tells the server), then the server.
			defer func() {
				stop() // a second Ctrl-C ends dev at once
				stopWorkers()
				wg.Wait()
				stopServer()
				if err := <-srvErr; rerr == nil {
					rerr = err
				}
			}()
			var workerToken string
			if withAuth {
				if workerToken, err = devWorkerToken(ctx, srv.URL, dataDir); err != nil {
					return err
				}
				if os.Geteuid() != 0 || runAs == "root" {
					log.Warn("the local workers run tasks as a user who can read the data directory and its admin token: start allot dev as root, without --run-as root, to run them as nobody", "dataDir", dataDir)
				}
			}
			for i := 1; i <= workers; i++ {
				a, err := agent.New(agent.Config{Server: srv.URL, Token: workerToken, Name: fmt.Sprintf("dev-%d", i), Slots: slots,
					Labels: map[string]string{"dev": "true"}, RunAs: runAs, AllowUsers: allowUsers, Logger: log})
				if err != nil {
					return err
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := a.Run(workersCtx); err != nil && workersCtx.Err() == nil {
						log.Error("worker stopped", "err", err)
					}
				}()
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Allot is running at %s (data in %s)\n", srv.URL, dataDir)
			fmt.Fprintf(out, "Dashboard: %s/\n", srv.URL)
			fmt.Fprintf(out, "%d local workers with %d slots each: dev-1 … dev-%d%s\n\n", workers, slots, workers, runningAs(runAs))
			try := devTrySubmit(cfg.Scheduling.Queues) + " --server " + srv.URL
			if withAuth {
				file := filepath.Join(dataDir, auth.AdminTokenFile)
				fmt.Fprintf(out, "Authentication is on; the admin token is in %s\n\n", file)
				fmt.Fprintf(out, "Try, in another terminal:\n  ALLOT_TOKEN=$(cat %s) %s\n\n", file, try)
			} else {
				fmt.Fprintf(out, "Try, in another terminal:\n  %s\n\n", try)
			}
			fmt.Fprintln(out, "Press Ctrl-C to stop.")
			select {
			case <-ctx.Done():
			case err := <-srvErr: // stopped on its own: so do the workers
				srvErr <- err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", defaultListen, "address to listen on")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "directory of the embedded database (default: a temporary directory, removed at exit)")
	cmd.Flags().StringVar(&configFile, "config", "", "configuration file (queues, policies, placement)")
	cmd.Flags().IntVar(&workers, "workers", 2, "local workers to start")
	cmd.Flags().IntVar(&slots, "slots", 2, "slots of each local worker")
	cmd.Flags().BoolVar(&withAuth, "auth", false, "require bearer tokens, as allot server does (the admin token is written to DATA_DIR/admin.token), and listen on any address")
	cmd.Flags().StringVar(&runAs, "run-as", "", "user the local workers run tasks as when their job names none (default: nobody when dev runs as root, else dev's user)")
	cmd.Flags().StringArrayVar(&allowUsers, "allow-user", nil, "user a job may name to run its tasks as, or a pattern like svc-* (repeatable; root only when named)")
	logs.add(cmd)
	limits.add(cmd)
	return cmd
}

// runningAs says whom the local workers run tasks as (runAs, else dev's
// own user), for dev's first lines; "" if that is unknown.
func runningAs(runAs string) string {
	if runAs == "" {
		u, err := user.Current()
		if err != nil {
			return ""
		}
		runAs = u.Username
	}
	return ", running tasks as " + runAs
}

// devTrySubmit is the first command dev suggests: the example pipeline,
// which names no queue, so it goes to the server's default queue (the only
// queue, or the one named "default"); with neither, it needs --queue.
func devTrySubmit(queues []spec.Queue) string {
	cmd := "allot submit examples/jobs/pipeline.yaml --wait"
	if len(queues) < 2 || slices.ContainsFunc(queues, func(q spec.Queue) bool { return q.Name == spec.DefaultQueue }) {
		return cmd
	}
	return cmd + " --queue " + queues[0].Name
}

// loopback reports whether a listen address only accepts connections from
// this machine.
func loopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// devWorkerToken creates the token of dev's local workers (role worker,
// names dev-*), as the admin whose secret the server wrote to dataDir.
func devWorkerToken(ctx context.Context, url, dataDir string) (string, error) {
	secret, err := os.ReadFile(filepath.Join(dataDir, auth.AdminTokenFile))
	if err != nil {
		return "", fmt.Errorf("reading the admin token: %w", err)
	}
	c, err := client.New(url, client.WithToken(strings.TrimSpace(string(secret))))
	if err != nil {
		return "", err
	}
	nt, err := c.CreateToken(ctx, api.CreateToken{Name: "allot dev workers", Role: string(auth.Worker), Workers: []string{"dev-*"}})
	if err != nil {
		return "", fmt.Errorf("creating the local workers' token: %w", err)
	}
	return nt.Secret, nil
}
