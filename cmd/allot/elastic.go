package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/client"
)

// newWorkersElasticCmd is `allot workers elastic WORKER on|off`: a manual
// toggle held to the elastic coordinator's cooldown (seed 002).
func newWorkersElasticCmd(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "elastic WORKER on|off",
		Short: "Switch a worker on or off by hand, under the elastic coordinator's toggle cooldown",
		Long: `elastic switches a worker off (it takes no new tasks and leaves cost figures) or
back on, like the elastic coordinator does. A worker toggled, by hand or by the
coordinator, less than placement.elastic.toggleCooldownSeconds ago is refused,
so an operator and the coordinator cannot flap it between them.`,
		Example: `  allot workers elastic gpu-3 off
  allot workers elastic gpu-3 on`,
		Args: cobra.ExactArgs(2),
		RunE: show(f, func(cmd *cobra.Command, args []string, c *client.Client) (api.Worker, error) {
			var enabled bool
			switch args[1] {
			case "on":
				enabled = true
			case "off":
			default:
				return api.Worker{}, fmt.Errorf("%q: want on or off", args[1])
			}
			return c.ToggleElastic(cmd.Context(), args[0], enabled)
		}, line(func(wk api.Worker) string { return "worker " + wk.Name + " is " + workerStateText(wk) })),
	}
}

// workerStateText is a worker's state for tables: a disabled worker says
// who disabled it ("disabled (elastic)").
func workerStateText(wk api.Worker) string {
	if wk.DisabledBy != "" {
		return wk.State + " (" + wk.DisabledBy + ")"
	}
	return wk.State
}

// parseCacheHints reads --cache KIND=NAME flags.
func parseCacheHints(kvs []string) ([]api.CacheHint, error) {
	var out []api.CacheHint
	for _, kv := range kvs {
		kind, name, ok := strings.Cut(kv, "=")
		if !ok || name == "" || kind != api.CacheModel && kind != api.CacheDataset {
			return nil, fmt.Errorf("--cache %q: want model=NAME or dataset=NAME", kv)
		}
		out = append(out, api.CacheHint{Kind: kind, Name: name})
	}
	return out, nil
}
