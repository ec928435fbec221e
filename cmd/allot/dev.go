package main

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/allot-sched/allot/internal/agent"
	"github.com/allot-sched/allot/internal/spec"
)

func newDevCmd() *cobra.Command {
	var listen, dataDir, configFile string
	var workers, slots int
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a server, local workers and an embedded store: everything for a first try",
		Long: `dev starts the control plane on an embedded store in a temporary directory (or
--data-dir) and a few worker agents on this machine that run tasks as real processes.
It prints the URL and a first command to try, and stops everything on Ctrl-C.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cfg spec.ServerConfig
			if configFile != "" {
				var err error
				if cfg, err = spec.LoadServerConfig(configFile); err != nil {
					return fmt.Errorf("%s:\n%w", configFile, err)
				}
			}
			cfg.Server.Listen = listen
			if dataDir == "" {
				dir, err := os.MkdirTemp("", "allot-dev-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				dataDir = dir
			}
			cfg.Server.DataDir = dataDir
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log := newLogger()
			srv, err := startServer(ctx, cfg, log)
			if err != nil {
				return err
			}
			var wg sync.WaitGroup
			for i := 1; i <= workers; i++ {
				a, err := agent.New(agent.Config{Server: srv.URL, Name: fmt.Sprintf("dev-%d", i), Slots: slots,
					Labels: map[string]string{"dev": "true"}, Logger: log})
				if err != nil {
					return err
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := a.Run(ctx); err != nil && ctx.Err() == nil {
						log.Error("worker stopped", "err", err)
					}
				}()
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Allot is running at %s (data in %s)\n", srv.URL, dataDir)
			fmt.Fprintf(out, "%d local workers with %d slots each: dev-1 … dev-%d\n\n", workers, slots, workers)
			fmt.Fprintf(out, "Try, in another terminal:\n  allot submit examples/jobs/pipeline.yaml --wait --server %s\n\n", srv.URL)
			fmt.Fprintln(out, "Press Ctrl-C to stop.")
			err = srv.Wait()
			wg.Wait()
			return err
		},
	}
	cmd.Flags().StringVar(&listen, "listen", defaultListen, "address to listen on")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "directory of the embedded database (default: a temporary directory, removed at exit)")
	cmd.Flags().StringVar(&configFile, "config", "", "configuration file (queues, policies, placement)")
	cmd.Flags().IntVar(&workers, "workers", 2, "local workers to start")
	cmd.Flags().IntVar(&slots, "slots", 2, "slots of each local worker")
	return cmd
}
