package main

import (
	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "allot",
		Short: "Allot: a multi-tenant job and task scheduler",
		Long: `Allot decides, at every scheduling event, which job starts, which task runs on
which worker, and which running task must make room.

  allot plan -f scenario.yaml     one scheduling cycle over a scenario
  allot sim  -f scenario.yaml     a scenario (or --trace FILE.swf) over simulated time`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newPlanCmd(), newSimCmd(), newServerCmd(), newDevCmd(), newWorkerCmd(), newBenchCmd())
	addClientCommands(root)
	root.AddCommand(newExplainCmd())
	addEndpointCommands(root)
	adviseAll(root)
	return root
}
