package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/queryflux/queryflux/internal/defaultconfig"
	"github.com/queryflux/queryflux/node/workerapi"
	"github.com/spf13/cobra"
)

// adminClient calls the control plane's admin API for the CLI.
type adminClient struct {
	baseURL string
	token   string
}

func (c *adminClient) get(ctx context.Context, path string, into any) error {
	return c.do(ctx, http.MethodGet, path, nil, nil, into)
}

// do sends body (JSON; nil for none) to path with the query q, and decodes the JSON answer
// into into.
func (c *adminClient) do(ctx context.Context, method, path string, q url.Values, body, into any) error {
	if c.token == "" {
		return fmt.Errorf("no admin token: pass --admin-token or set QUERYFLUX_ADMIN_TOKEN")
	}
	u, err := url.Parse(c.baseURL)
	if err != nil {
		return fmt.Errorf("--admin-url: %w", err)
	}
	u = u.JoinPath(path)
	u.RawQuery = q.Encode()
	var payload io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		payload = bytes.NewReader(data)
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), payload)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	workerapi.SetBearer(req, c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &workerapi.StatusError{Status: resp.StatusCode, Body: workerapi.ReadError(resp)}
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(into)
}

// adminCommand is a command group calling the control plane's admin API, with its flags.
func adminCommand(use, short string) (*cobra.Command, *adminClient, *bool) {
	client := &adminClient{}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		PersistentPreRun: func(cmd *cobra.Command, args []string) {
			if client.token == "" {
				client.token = defaultconfig.AdminToken(client.baseURL)
			}
		},
	}
	cmd.PersistentFlags().StringVar(&client.baseURL, "admin-url", envOr("QUERYFLUX_ADMIN_URL", defaultconfig.AdminURL()), "the admin API (or QUERYFLUX_ADMIN_URL; default: the embedded default's, moved by QUERYFLUX_PORT_OFFSET)")
	cmd.PersistentFlags().StringVar(&client.token, "admin-token", "", "admin bearer token (default: QUERYFLUX_ADMIN_TOKEN, else the token file the embedded default wrote)")
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print the API's JSON instead of a table")
	return cmd, client, &asJSON
}

func newWorkersCommand() *cobra.Command {
	cmd, client, asJSON := adminCommand("workers", "Show the control plane's worker fleet")
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "One line per worker",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var list []workerapi.WorkerInfo
			if err := client.get(cmd.Context(), workerapi.PathAdminWorkers, &list); err != nil {
				return err
			}
			if *asJSON {
				return printJSON(cmd.OutOrStdout(), list)
			}
			printWorkerTable(cmd.OutOrStdout(), list, time.Now())
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "show NAME",
		Short: "Everything the control plane knows about one worker",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var wi workerapi.WorkerInfo
			if err := client.get(cmd.Context(), workerapi.PathAdminWorkers+"/"+url.PathEscape(args[0]), &wi); err != nil {
				return err
			}
			if *asJSON {
				return printJSON(cmd.OutOrStdout(), wi)
			}
			printWorkerDetail(cmd.OutOrStdout(), wi, time.Now())
			return nil
		},
	})
	return cmd
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printWorkerTable(out io.Writer, list []workerapi.WorkerInfo, now time.Time) {
	if len(list) == 0 {
		fmt.Fprintln(out, "no workers registered")
		return
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tONLINE\tLAST HEARTBEAT\tREVISION\tCURRENT\tLABELS\tGROUPS\tWARNINGS")
	for _, wi := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", wi.Name, wi.State, yesNo(wi.Online), ago(wi.LastHeartbeat, now),
			dash(wi.Revision), yesNo(wi.Current), labelString(wi.Labels), dash(strings.Join(wi.Groups, ",")), len(wi.Warnings))
	}
	_ = tw.Flush()
}

func printWorkerDetail(out io.Writer, wi workerapi.WorkerInfo, now time.Time) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	row("Name", wi.Name)
	row("State", wi.State)
	row("Online", yesNo(wi.Online))
	row("Version", dash(wi.Version))
	row("Registered", stamp(wi.RegisteredAt, now))
	row("Last heartbeat", stamp(wi.LastHeartbeat, now))
	row("Revision", dash(wi.Revision)+" (current: "+yesNo(wi.Current)+")")
	row("Labels", labelString(wi.Labels))
	row("Groups", dash(strings.Join(wi.Groups, ",")))
	row("Frontends", dash(strings.Join(wi.Frontends, ", ")))
	if hb := wi.Heartbeat; hb != nil {
		row("Self-health", fmt.Sprintf("%s (loop lag %.3fs)", hb.Health.State, hb.Health.LoopLagSeconds))
		row("Config", fmt.Sprintf("source %s, staleness %.1fs, sync failures %d (%d in a row), last sync %s",
			dash(hb.Config.Source), hb.Config.StalenessSecs, hb.Config.SyncFailures, hb.Config.ConsecutiveSyncFailures, stamp(hb.Config.LastSyncAt, now)))
		row("Last seen revision", dash(hb.Revision.LastSeen))
		row("Coordination", dash(strings.TrimSpace(hb.Coordination.Policy+" "+hb.Coordination.Mode)))
		row("History", fmt.Sprintf("sent %d, dropped %d, pending %d", hb.History.Sent, hb.History.Dropped, hb.History.Pending))
	}
	_ = tw.Flush()
	if len(wi.Warnings) == 0 {
		fmt.Fprintln(out, "Warnings: none")
		return
	}
	fmt.Fprintln(out, "Warnings:")
	for _, w := range wi.Warnings {
		fmt.Fprintln(out, "  - "+w)
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func ago(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	if d < 0 {
		d = 0
	}
	if d < time.Second {
		return d.Round(time.Millisecond).String() + " ago"
	}
	return d.Round(time.Second).String() + " ago"
}

func stamp(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format(time.RFC3339) + " (" + ago(t, now) + ")"
}

func labelString(labels map[string]string) string {
	if len(labels) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + labels[k]
	}
	return strings.Join(parts, ",")
}
