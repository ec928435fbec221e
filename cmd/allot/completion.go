package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-sched/allot/internal/client"
)

// Shell completion (allot completion bash|zsh|fish|powershell, cobra's):
// job IDs, task names, queues and worker names come from the server the
// command line names (--server, --token or the environment), so that
// `allot logs <TAB>` offers the jobs there are.

// completionTimeout bounds the API call behind one completion: a shell
// must not hang on a server that does not answer.
const completionTimeout = 3 * time.Second

// completionJobs is how many of the newest jobs a job ID completion offers.
const completionJobs = 200

// completeFlags sets the completions of cmd and its subcommands: each
// positional argument by the name its usage line gives it (JOB, TASK,
// WORKER, QUEUE, a|b choices), and the --queue, --job, --worker and --task
// flags.
func completeFlags(cmd *cobra.Command, f *clientFlags) {
	for _, c := range append([]*cobra.Command{cmd}, cmd.Commands()...) {
		if c != cmd {
			completeFlags(c, f)
			continue
		}
		if c.ValidArgsFunction == nil && len(c.ValidArgs) == 0 {
			if names := argNames(c.Use); len(names) > 0 {
				c.ValidArgsFunction = func(cc *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
					if len(args) >= len(names) {
						return nil, cobra.ShellCompDirectiveNoFileComp
					}
					return completeName(cc, f, names[len(args)], args, prefix)
				}
			}
		}
		for flag, name := range map[string]string{"queue": "QUEUE", "job": "JOB", "worker": "WORKER", "task": "TASK"} {
			if c.Flags().Lookup(flag) == nil {
				continue
			}
			if _, set := c.GetFlagCompletionFunc(flag); set {
				continue
			}
			_ = c.RegisterFlagCompletionFunc(flag, func(cc *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return completeName(cc, f, name, args, prefix)
			})
		}
	}
}

// argNames are the positional arguments of a usage line ("logs JOB
// [TASK]": JOB, TASK), without brackets; flags end the list.
func argNames(use string) []string {
	var out []string
	for _, w := range strings.Fields(use)[1:] {
		w = strings.Trim(w, "[]().")
		if strings.HasPrefix(w, "-") || w == "" {
			break
		}
		out = append(out, w)
	}
	return out
}

// completeName offers the values of one kind of name that start with
// prefix.
func completeName(cmd *cobra.Command, f *clientFlags, name string, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if strings.Contains(name, "|") {
		var out []cobra.Completion
		for _, v := range strings.Split(name, "|") {
			if strings.HasPrefix(v, prefix) {
				out = append(out, v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	switch name {
	case "JOB", "QUEUE", "WORKER", "TASK":
	case "FILE", "DIR", "FILE|DIR":
		return nil, cobra.ShellCompDirectiveDefault
	default:
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := f.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	out, err := names(ctx, c, name, args)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	kept := out[:0]
	for _, o := range out {
		if strings.HasPrefix(o, prefix) {
			kept = append(kept, o)
		}
	}
	return kept, cobra.ShellCompDirectiveNoFileComp
}

// names asks the server for the names of a kind, each with a description
// after a tab (the shells that show descriptions show it).
func names(ctx context.Context, c *client.Client, kind string, args []string) ([]cobra.Completion, error) {
	var out []cobra.Completion
	switch kind {
	case "JOB":
		list, err := c.Jobs(ctx, client.JobFilter{Sort: "-submitted", Limit: completionJobs})
		if err != nil {
			return nil, err
		}
		for _, j := range list.Jobs {
			out = append(out, cobra.CompletionWithDesc(j.ID, j.State+" in "+j.Queue))
		}
	case "TASK":
		if len(args) == 0 {
			return nil, nil
		}
		j, err := c.Job(ctx, args[0])
		if err != nil {
			return nil, err
		}
		for _, t := range j.Tasks {
			out = append(out, cobra.CompletionWithDesc(t.Name, t.State))
		}
	case "QUEUE":
		qs, err := c.Queues(ctx)
		if err != nil {
			return nil, err
		}
		for _, q := range qs {
			out = append(out, cobra.CompletionWithDesc(q.Name, fmt.Sprintf("%d running, %d waiting", q.Running, q.Waiting)))
		}
	case "WORKER":
		ws, err := c.Workers(ctx)
		if err != nil {
			return nil, err
		}
		for _, w := range ws {
			out = append(out, cobra.CompletionWithDesc(w.Name, w.State))
		}
	}
	return out, nil
}
