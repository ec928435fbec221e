package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/spec"
)

func newTokensCmd(f *clientFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tokens",
		Short: "Manage API tokens (admin): `tokens create|list|revoke`",
		Long: `tokens manages the bearer tokens of the API. Only an admin token may. A token
has a role: admin (everything), submitter (jobs of its queues and shares,
within its limits), or worker (the worker protocol, for its worker names).
The server stores only a hash of each secret: the secret is printed once,
when the token is created.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return listTokens(cmd, f) },
	}
	cmd.AddCommand(newTokensCreateCmd(f), &cobra.Command{
		Use:   "list",
		Short: "List tokens (never their secrets)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return listTokens(cmd, f) },
	}, &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token: requests with it are refused from now on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			t, err := c.RevokeToken(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return f.print(cmd.OutOrStdout(), t, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "revoked %s (%s)\n", t.ID, describe(t))
				return err
			})
		},
	})
	return cmd
}

func newTokensCreateCmd(f *clientFlags) *cobra.Command {
	var (
		req     api.CreateToken
		expires daysDuration
		quiet   bool
	)
	cmd := &cobra.Command{
		Use:   "create --role admin|submitter|worker",
		Short: "Create a token and print its secret (shown only this once)",
		Long: `create makes a token. A submitter token needs --queue and --share (each
repeatable; '*' allows any); a worker token needs --worker (an exact name, or a
prefix ending in '*'). The secret is printed once; the server keeps only its hash.

A submitter's jobs are also limited in what they ask of the scheduler. Without
limits a submitter token allows priority 0 at most, no urgent jobs, no SLA
group, no run-as user, and no requestor but the token's --name. Raise them with
--max-priority, --urgent, --requestor, --sla-group and --user (names, or
prefixes ending in '*'; '*' alone allows any).`,
		Example: `  allot tokens create --role submitter --queue batch --share research --name alice --expires 720h
  allot tokens create --role submitter --queue grid --share '*' --name grid-ci \
      --max-priority 7 --urgent --requestor 'team-a-*' --sla-group silver --user 'svc-a-*'
  allot tokens create --role worker --worker 'gpu-*' --name gpu-fleet
  export ALLOT_TOKEN=$(allot tokens create --role admin --name ops -q)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if req.Role == "" {
				return fmt.Errorf("--role: required (admin, submitter or worker)")
			}
			if cmd.Flags().Changed("expires") {
				// Set, it counts: --expires 0s is refused by the
				// server (naming --expires), not taken as never.
				req.ExpiresIn = new(spec.Duration(expires))
			}
			c, err := f.client()
			if err != nil {
				return err
			}
			t, err := c.CreateToken(cmd.Context(), req)
			if err != nil {
				return withTokenFlags(err)
			}
			warnUnknownQueues(cmd.Context(), c, req.Queues, cmd.ErrOrStderr())
			if quiet {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), t.Secret)
				return err
			}
			return f.print(cmd.OutOrStdout(), t, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "created %s (%s)\nsecret, shown only now (the server keeps only its hash):\n%s\n", t.ID, describe(t.Token), t.Secret)
				return err
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&req.Role, "role", "", "admin, submitter or worker")
	fl.StringVar(&req.Name, "name", "", "who or what the token is for, shown by tokens list")
	fl.StringSliceVar(&req.Queues, "queue", nil, "submitter: a queue it may use ('*': any; repeatable)")
	fl.StringSliceVar(&req.Shares, "share", nil, "submitter: a share it may use ('*': any; repeatable)")
	fl.StringSliceVar(&req.Workers, "worker", nil, "worker: a worker name it may act for, or a prefix ending in '*' (repeatable)")
	fl.IntVar(&req.MaxPriority, "max-priority", 0, "submitter: the highest priority its jobs may have (default 0)")
	fl.BoolVar(&req.Urgent, "urgent", false, "submitter: its jobs may be urgent")
	fl.StringSliceVar(&req.Requestors, "requestor", nil, "submitter: a requestor its jobs may name, or a prefix ending in '*' (repeatable; default: only the token's --name)")
	fl.StringSliceVar(&req.SLAGroups, "sla-group", nil, "submitter: an SLA group its jobs may name, or a prefix ending in '*' (repeatable; default: none)")
	fl.StringSliceVar(&req.Users, "user", nil, "submitter: a Unix user its jobs may run as, or a prefix ending in '*' (repeatable; default: none)")
	fl.Var(&expires, "expires", "the token expires this long after now, e.g. 30d, 1d12h or 720h (default: never)")
	fl.BoolVarP(&quiet, "quiet", "q", false, "print only the secret")
	return cmd
}

func listTokens(cmd *cobra.Command, f *clientFlags) error {
	c, err := f.client()
	if err != nil {
		return err
	}
	ts, err := c.Tokens(cmd.Context())
	if err != nil {
		return err
	}
	now := time.Now()
	return f.print(cmd.OutOrStdout(), ts, func(w io.Writer) error {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tROLE\tNAME\tSCOPE\tCREATED\tEXPIRES\tSTATE")
		for _, t := range ts {
			expires, state := "never", "active"
			if t.Expires != nil {
				expires = t.Expires.Format(time.RFC3339)
				if !now.Before(*t.Expires) {
					state = "expired"
				}
			}
			if t.Revoked != nil {
				state = "revoked " + t.Revoked.Format(time.RFC3339)
			}
			if t.Unreadable != "" {
				state = "unreadable (" + t.Unreadable + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Role, t.Name, scope(t), t.Created.Format(time.RFC3339), expires, state)
		}
		return tw.Flush()
	})
}

// scope is a token's scope and limits in one column.
func scope(t api.Token) string {
	var parts []string
	add := func(name string, items []string) {
		if len(items) > 0 {
			parts = append(parts, name+"="+strings.Join(items, ","))
		}
	}
	add("queues", t.Queues)
	add("shares", t.Shares)
	add("workers", t.Workers)
	if t.MaxPriority != nil {
		parts = append(parts, fmt.Sprintf("maxPriority=%d", *t.MaxPriority))
	}
	if t.Urgent {
		parts = append(parts, "urgent")
	}
	add("requestors", t.Requestors)
	add("slaGroups", t.SLAGroups)
	add("users", t.Users)
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// describe is a token in a few words, for messages.
func describe(t api.Token) string {
	out := t.Role
	if t.Name != "" {
		out += fmt.Sprintf(" %q", t.Name)
	}
	if s := scope(t); s != "-" {
		out += ", " + s
	}
	if t.Expires != nil {
		out += ", expires " + t.Expires.Format(time.RFC3339)
	}
	return out
}

// warnUnknownQueues says on w which of a token's queues the server does
// not have: the token is valid (a queue may be configured later), but its
// submissions there are refused until then, which is otherwise only found
// out at the first submission. Nothing is said when the queues cannot be
// read.
func warnUnknownQueues(ctx context.Context, c *client.Client, queues []string, w io.Writer) {
	if len(queues) == 0 || slices.Contains(queues, "*") {
		return
	}
	have, err := c.Queues(ctx)
	if err != nil {
		return
	}
	names := make([]string, len(have))
	for i, q := range have {
		names[i] = q.Name
	}
	var missing []string
	for _, q := range queues {
		if !slices.Contains(names, q) && !strings.HasSuffix(q, "*") {
			missing = append(missing, strconv.Quote(q))
		}
	}
	if len(missing) == 0 {
		return
	}
	what := "queue"
	if len(missing) > 1 {
		what = "queues"
	}
	fmt.Fprintf(w, "warning: this server has no %s %s (queues: %s): the token's jobs there are refused until it has one\n",
		what, strings.Join(missing, ", "), strings.Join(names, ", "))
}
