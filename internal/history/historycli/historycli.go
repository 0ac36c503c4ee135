// Package historycli is the `queryflux history` command: it reads GET /admin/queries from a
// control plane and prints the records as a table (or JSON).
//
// determinism: outside the simulator (a CLI: real clock, network, environment variables)
package historycli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/queryflux/queryflux/internal/defaultconfig"
	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/node/workerapi"
	"github.com/spf13/cobra"
)

// options are the command's flags.
type options struct {
	adminURL   string
	adminToken string
	filter     history.Filter
	status     string
	since      string
	until      string
	asJSON     bool
	client     *http.Client
	now        func() time.Time
}

// NewCommand returns the `history` command.
func NewCommand() *cobra.Command {
	o := &options{client: http.DefaultClient, now: time.Now}
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Show the fleet's query history, newest first",
		Long: `Show finished queries from the control plane's history (GET /admin/queries), newest first.
Filters combine; --since and --until take an RFC 3339 time or a duration back from now (2h).
When more records match, the last line gives the --before cursor of the next page.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd.Context(), cmd.OutOrStdout()) },
	}
	f := cmd.PersistentFlags()
	f.StringVar(&o.adminURL, "admin-url", envOr("QUERYFLUX_ADMIN_URL", defaultconfig.AdminURL()), "the admin API (or QUERYFLUX_ADMIN_URL; default: the embedded default's, moved by QUERYFLUX_PORT_OFFSET)")
	f.StringVar(&o.adminToken, "admin-token", "", "admin bearer token (default: QUERYFLUX_ADMIN_TOKEN, else the token file the embedded default wrote)")
	f.StringVar(&o.filter.Worker, "worker", "", "only queries run by this worker")
	f.StringVar(&o.filter.User, "user", "", "only queries of this user")
	f.StringVar(&o.filter.Group, "group", "", "only queries routed to this cluster group")
	f.StringVar(&o.filter.Cluster, "cluster", "", "only queries run on this cluster")
	f.StringVar(&o.status, "status", "", "succeeded, failed, cancelled or rejected")
	f.StringVar(&o.since, "since", "", "started at or after (RFC 3339, or a duration ago: 30m)")
	f.StringVar(&o.until, "until", "", "started before (RFC 3339, or a duration ago)")
	f = cmd.Flags()
	f.IntVar(&o.filter.Limit, "limit", 50, fmt.Sprintf("records per page (1..%d)", history.QueryLimitMax))
	f.StringVar(&o.filter.Before, "before", "", "the cursor printed at the end of the previous page")
	f.BoolVar(&o.asJSON, "json", false, "print the API's JSON page instead of a table")
	cmd.AddCommand(newExportCommand(o))
	return cmd
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func (o *options) run(ctx context.Context, out io.Writer) error {
	if err := o.prepare(); err != nil {
		return err
	}
	page, err := o.fetch(ctx)
	if err != nil {
		return err
	}
	if o.asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(page)
	}
	printTable(out, page)
	return nil
}

// prepare finds the admin token and builds the filter from the flags.
func (o *options) prepare() error {
	if o.adminToken == "" {
		o.adminToken = defaultconfig.AdminToken(o.adminURL)
	}
	if o.adminToken == "" {
		return fmt.Errorf("no admin token: pass --admin-token or set QUERYFLUX_ADMIN_TOKEN")
	}
	return o.buildFilter()
}

func (o *options) buildFilter() error {
	o.filter.Status = history.Status(o.status)
	if o.status != "" && !o.filter.Status.Valid() {
		return fmt.Errorf("--status %q: want succeeded, failed, cancelled or rejected", o.status)
	}
	var err error
	if o.filter.Since, err = parseWhen("--since", o.since, o.now()); err != nil {
		return err
	}
	if o.filter.Until, err = parseWhen("--until", o.until, o.now()); err != nil {
		return err
	}
	if o.filter.Limit < 1 || o.filter.Limit > history.QueryLimitMax {
		return fmt.Errorf("--limit %d: want 1..%d", o.filter.Limit, history.QueryLimitMax)
	}
	return nil
}

// parseWhen reads an RFC 3339 time or a duration back from now.
func parseWhen(flag, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%s %q: want an RFC 3339 time (2026-01-02T15:04:05Z) or a duration (2h)", flag, s)
}

func (o *options) fetch(ctx context.Context) (history.Page, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	u := strings.TrimSuffix(o.adminURL, "/") + history.PathAdminQueries + "?" + o.filter.Values().Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return history.Page{}, fmt.Errorf("--admin-url: %w", err)
	}
	workerapi.SetBearer(req, o.adminToken)
	resp, err := o.client.Do(req)
	if err != nil {
		return history.Page{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return history.Page{}, &workerapi.StatusError{Status: resp.StatusCode, Body: workerapi.ReadError(resp)}
	}
	var page history.Page
	if err := json.NewDecoder(io.LimitReader(resp.Body, 256<<20)).Decode(&page); err != nil {
		return history.Page{}, fmt.Errorf("reading the answer: %w", err)
	}
	return page, nil
}

const sqlColumnMax = 80

func printTable(out io.Writer, page history.Page) {
	if len(page.Records) == 0 {
		fmt.Fprintln(out, "no queries match")
		return
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STARTED\tQUERY ID\tWORKER\tUSER\tGROUP\tCLUSTER\tSTATUS\tQUEUE\tEXEC\tROWS\tCACHE\tSQL")
	for _, r := range page.Records {
		sql := r.SQL
		if sql == "" {
			sql = "#" + r.SQLDigest
		}
		if r.Status != history.StatusSucceeded && r.Error != "" {
			sql += "  -- " + r.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%dms\t%dms\t%d\t%s\t%s\n",
			r.StartedAt.UTC().Format("2006-01-02T15:04:05.000Z"), r.QueryID, dash(r.Worker), dash(r.User), dash(r.Group),
			dash(r.Cluster), r.Status, r.QueueMs, r.ExecMs, r.Rows, yesNo(r.CacheHit), oneLine(sql, sqlColumnMax))
	}
	_ = tw.Flush()
	if page.Next != "" {
		fmt.Fprintf(out, "more: --before %s\n", page.Next)
	}
}

// oneLine folds whitespace (tabs would break the table) and cuts to max runes.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
