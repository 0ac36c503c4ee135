package historycli

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/history/histfile"
)

// exportOptions are the export's own flags; the connection and filter flags are the history
// command's.
type exportOptions struct {
	*options
	out        string
	users      string
	keepNames  bool
	maxRecords int
}

// exportRecordsMax bounds one export's memory (records are sorted by arrival before writing).
const exportRecordsMax = 5_000_000

func newExportCommand(o *options) *cobra.Command {
	e := &exportOptions{options: o}
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the query history as a compact, redacted file that scenario workloads replay",
		Long: `Write the finished queries the history filters select as a CSV file (format: docs/operations.md,
"Exporting history for the planner"): per query its arrival time, worker, cluster group, cluster,
status, queue and execution time. No SQL text; no user names unless --users hash (a keyed hash
whose key is drawn for this export and not written). Workers are renamed w1, w2, ... in order of
first arrival unless --keep-worker-names.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return e.run(cmd.Context(), cmd.OutOrStdout()) },
	}
	f := cmd.Flags()
	f.StringVarP(&e.out, "out", "o", "-", "the file to write (-: standard output)")
	f.StringVar(&e.users, "users", "omit", "omit, or hash (a user_hash column; the key is not kept)")
	f.BoolVar(&e.keepNames, "keep-worker-names", false, "write the workers' own names instead of w1, w2, ...")
	f.IntVar(&e.maxRecords, "max-records", 1_000_000, fmt.Sprintf("refuse to export more records than this (up to %d)", exportRecordsMax))
	return cmd
}

func (e *exportOptions) run(ctx context.Context, stdout io.Writer) error {
	if e.users != "omit" && e.users != "hash" {
		return fmt.Errorf("--users %q: want omit or hash", e.users)
	}
	if e.maxRecords < 1 || e.maxRecords > exportRecordsMax {
		return fmt.Errorf("--max-records %d: want 1..%d", e.maxRecords, exportRecordsMax)
	}
	if err := e.prepare(); err != nil {
		return err
	}
	e.filter.Limit = history.QueryLimitMax
	var recs []history.Record
	for {
		page, err := e.fetch(ctx)
		if err != nil {
			return err
		}
		recs = append(recs, page.Records...)
		if len(recs) > e.maxRecords {
			return fmt.Errorf("more than --max-records %d records match: narrow --since/--until or raise it", e.maxRecords)
		}
		if page.Next == "" {
			break
		}
		e.filter.Before = page.Next
	}
	if len(recs) == 0 {
		return fmt.Errorf("no queries match: nothing to export")
	}
	f, err := e.file(recs)
	if err != nil {
		return err
	}
	return e.write(stdout, f)
}

// file converts records (newest first, as the API pages them) into the export.
func (e *exportOptions) file(recs []history.Record) (*histfile.File, error) {
	var key []byte
	if e.users == "hash" {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
	}
	f := &histfile.File{Origin: recs[len(recs)-1].StartedAt, Users: key != nil}
	names := map[string]string{}
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		worker := r.Worker
		if !e.keepNames {
			if names[worker] == "" {
				names[worker] = fmt.Sprintf("w%d", len(names)+1)
			}
			worker = names[worker]
		}
		en := histfile.Entry{ArrivalMs: r.StartedAt.Sub(f.Origin).Milliseconds(), Worker: worker, Group: r.Group,
			Cluster: r.Cluster, Status: string(r.Status), ErrorCode: r.ErrorCode, QueueMs: r.QueueMs, ExecMs: r.ExecMs}
		if key != nil && r.User != "" {
			m := hmac.New(sha256.New, key)
			m.Write([]byte(r.User))
			en.UserHash = hex.EncodeToString(m.Sum(nil)[:8])
		}
		f.Entries = append(f.Entries, en)
	}
	return f, nil
}

func (e *exportOptions) write(stdout io.Writer, f *histfile.File) error {
	if e.out == "-" {
		return histfile.Write(stdout, f)
	}
	file, err := os.Create(e.out)
	if err != nil {
		return err
	}
	if err := histfile.Write(file, f); err != nil {
		file.Close()
		return fmt.Errorf("writing %s: %w", e.out, err)
	}
	return file.Close()
}
