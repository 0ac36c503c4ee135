package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/node/controlplane"
)

func newConfigDiffCommand() *cobra.Command {
	var f adminFlags
	cmd := &cobra.Command{
		Use:          "diff FROM [TO]",
		Short:        "Show what changed between two stored configurations, secrets hidden (TO: the served one when omitted)",
		Args:         cobra.RangeArgs(1, 2),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{"from": {args[0]}}
			if len(args) == 2 {
				q.Set("to", args[1])
			}
			var ans struct {
				From    config.StoredRevision `json:"from"`
				To      config.StoredRevision `json:"to"`
				Changed bool                  `json:"changed"`
				Lines   []string              `json:"lines"`
			}
			if err := f.call(cmd.Context(), http.MethodGet, controlplane.PathAdminConfigDiff, q, &ans); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "--- %d %s\n+++ %d %s\n", ans.From.ID, ans.From.Revision, ans.To.ID, ans.To.Revision)
			if !ans.Changed {
				fmt.Fprintln(out, "(no change)")
			}
			for _, l := range ans.Lines {
				fmt.Fprintln(out, l)
			}
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

func newConfigRejectionsCommand() *cobra.Command {
	var f adminFlags
	var limit int
	cmd := &cobra.Command{
		Use:          "rejections",
		Short:        "List the configuration edits the control plane refused and why, newest first",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			var ans struct {
				Rejections []config.Rejection `json:"rejections"`
			}
			q := url.Values{"limit": {fmt.Sprint(limit)}}
			if err := f.call(cmd.Context(), http.MethodGet, controlplane.PathAdminConfigRejections, q, &ans); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tREFUSED\tSOURCE\tREASON")
			for _, r := range ans.Rejections {
				reason := strings.ReplaceAll(r.Reason, "\n", "; ")
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", r.ID, r.CreatedAt.UTC().Format(time.RFC3339), r.Source, reason)
			}
			return tw.Flush()
		},
	}
	f.register(cmd)
	cmd.Flags().IntVar(&limit, "limit", 20, "how many refusals to list")
	return cmd
}
