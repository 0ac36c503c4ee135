package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/node/controlplane"
)

func newLeasesCommand() *cobra.Command {
	cmd, client, asJSON := adminCommand("leases", "Show and revoke the control plane's capacity leases")
	var cluster string
	list := &cobra.Command{
		Use:   "list",
		Short: "One line per capacity lease (of one cluster with --cluster)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{}
			if cluster != "" {
				q.Set("cluster", cluster)
			}
			var ls []capacity.Lease
			if err := client.do(cmd.Context(), http.MethodGet, controlplane.PathAdminLeases, q, nil, &ls); err != nil {
				return err
			}
			if *asJSON {
				return printJSON(cmd.OutOrStdout(), ls)
			}
			printLeaseTable(cmd.OutOrStdout(), ls)
			return nil
		},
	}
	list.Flags().StringVar(&cluster, "cluster", "", "only this cluster's leases")
	cmd.AddCommand(list)
	var statsCluster string
	stats := &cobra.Command{
		Use:   "stats",
		Short: "Per cluster: leases held against the cap, acquires waiting and their p99 wait, grants, denials, reclaims, fairness per worker",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{}
			if statsCluster != "" {
				q.Set("cluster", statsCluster)
			}
			var st controlplane.CapacityStats
			if err := client.do(cmd.Context(), http.MethodGet, controlplane.PathAdminCapacityStats, q, nil, &st); err != nil {
				return err
			}
			if *asJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			printCapacityStats(cmd.OutOrStdout(), st)
			return nil
		},
	}
	stats.Flags().StringVar(&statsCluster, "cluster", "", "only this cluster")
	cmd.AddCommand(stats)
	cmd.AddCommand(&cobra.Command{
		Use:   "revoke LEASE",
		Short: "Revoke a lease (<cluster>#<generation>): its work is stopped on the engine now, and its slot freed when its term ends",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := capacity.ParseLeaseID(args[0]); err != nil {
				return err
			}
			var resp controlplane.RevokeResponse
			err := client.do(cmd.Context(), http.MethodPost, controlplane.PathAdminLeaseRevoke, nil, controlplane.RevokeRequest{Lease: args[0]}, &resp)
			if err != nil {
				return err
			}
			if *asJSON {
				return printJSON(cmd.OutOrStdout(), resp)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked %s (holder %s): its work is being stopped on the engine; its slot is freed at its expiry (%s)\n", resp.Lease.ID, resp.Lease.Holder, resp.Lease.ExpiresAt.Format(time.RFC3339))
			return nil
		},
	})
	return cmd
}

func printLeaseTable(out io.Writer, ls []capacity.Lease) {
	if len(ls) == 0 {
		fmt.Fprintln(out, "no leases held")
		return
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LEASE\tCLUSTER\tHOLDER\tEXPIRES\tTTL\tREVOKED")
	for _, l := range ls {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", l.ID, l.Cluster, l.Holder, l.ExpiresAt.UTC().Format(time.RFC3339Nano),
			l.TTL(), yesNo(l.Revoked))
	}
	_ = tw.Flush()
}

func printCapacityStats(out io.Writer, st controlplane.CapacityStats) {
	if len(st.Clusters) == 0 {
		fmt.Fprintln(out, "no cluster has leases or acquires yet")
		return
	}
	orDash := func(v *float64, format string) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf(format, *v)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tHELD/CAP\tREVOKED\tWAITING\tWAIT p99\tGRANTED\tDENIED\tFENCED\tFREED AFTER GRACE\tFAIRNESS")
	for _, c := range st.Clusters {
		n, held := c.Now, fmt.Sprint(c.Now.Held)
		if c.Cap > 0 {
			held += fmt.Sprintf("/%d", c.Cap)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%s\n", c.Cluster, held, n.Revoked, n.Waiting,
			orDash(n.WaitP99Millis, "%.0f ms"), n.Granted, n.Denied, n.Fenced, n.FreedAfterGrace, orDash(n.Fairness, "%.2f"))
	}
	_ = tw.Flush()
	fmt.Fprintln(out, "\nper worker, over the last samples (granted, denied) and now (held):")
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tWORKER\tWEIGHT\tHELD\tGRANTED\tDENIED")
	for _, c := range st.Clusters {
		for _, w := range c.Workers {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\n", c.Cluster, w.Worker, w.Weight, w.Held, w.Granted, w.Denied)
		}
	}
	_ = tw.Flush()
}
