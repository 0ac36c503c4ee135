// Package histfile is the exported query-history file (`queryflux history export`) that
// scenario workloads replay: one CSV line per finished query with its arrival time, worker,
// cluster group, cluster, status, queue and execution times. It holds no SQL text and no user
// names (a user column, when present, carries keyed hashes).
//
// It touches only the readers and writers it is handed.
package histfile

import (
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Magic is the file's first line.
const Magic = "# queryflux history v1"

// Columns are the header line's names, in order; UserColumn may follow them.
var Columns = []string{"arrival_ms", "worker", "group", "cluster", "status", "error_code", "queue_ms", "exec_ms"}

// UserColumn is the optional last column: a keyed hash of the user name.
const UserColumn = "user_hash"

// Entry is one finished query.
type Entry struct {
	ArrivalMs int64  // milliseconds after the file's origin
	Worker    string // the worker that ran it (a stand-in name unless the export kept names)
	Group     string
	Cluster   string // "" when no cluster was picked (rejected, timed out waiting)
	Status    string // succeeded, failed, cancelled, rejected
	ErrorCode string // SQLSTATE of a failure
	QueueMs   int64  // waiting for a capacity slot
	ExecMs    int64  // from the slot to the end of the result
	UserHash  string
}

// File is a whole export.
type File struct {
	Origin  time.Time // the first arrival
	Entries []Entry   // by arrival
	Users   bool      // the user_hash column is present
}

// Span is the time from the origin to the last arrival.
func (f *File) Span() time.Duration {
	if len(f.Entries) == 0 {
		return 0
	}
	return time.Duration(f.Entries[len(f.Entries)-1].ArrivalMs) * time.Millisecond
}

// Write writes f (entries sorted by arrival first).
func Write(w io.Writer, f *File) error {
	slices.SortStableFunc(f.Entries, func(a, b Entry) int { return cmp.Compare(a.ArrivalMs, b.ArrivalMs) })
	if _, err := fmt.Fprintf(w, "%s\n# origin %s\n", Magic, f.Origin.UTC().Format(time.RFC3339Nano)); err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	head := slices.Clone(Columns)
	if f.Users {
		head = append(head, UserColumn)
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, e := range f.Entries {
		row := []string{strconv.FormatInt(e.ArrivalMs, 10), e.Worker, e.Group, e.Cluster, e.Status, e.ErrorCode,
			strconv.FormatInt(e.QueueMs, 10), strconv.FormatInt(e.ExecMs, 10)}
		if f.Users {
			row = append(row, e.UserHash)
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// Statuses a line may carry.
var statuses = []string{"succeeded", "failed", "cancelled", "rejected"}

// Read parses a file; errors name the line and the column that is wrong.
func Read(r io.Reader) (*File, error) {
	cr := csv.NewReader(r)
	cr.Comment = 0
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	f := &File{}
	line := 0
	next := func() ([]string, error) {
		rec, err := cr.Read()
		line, _ = cr.FieldPos(0)
		return rec, err
	}
	rec, err := next()
	if err != nil || len(rec) != 1 || rec[0] != Magic {
		return nil, fmt.Errorf("line 1: not a queryflux history export (want the first line %q)", Magic)
	}
	if rec, err = next(); err != nil || len(rec) != 1 || !strings.HasPrefix(rec[0], "# origin ") {
		return nil, fmt.Errorf("line 2: want \"# origin RFC3339-TIME\"")
	}
	if f.Origin, err = time.Parse(time.RFC3339Nano, strings.TrimPrefix(rec[0], "# origin ")); err != nil {
		return nil, fmt.Errorf("line 2: origin %q is not an RFC 3339 time", strings.TrimPrefix(rec[0], "# origin "))
	}
	if rec, err = next(); err != nil {
		return nil, fmt.Errorf("line 3: want the header %s", strings.Join(Columns, ","))
	}
	want := len(Columns)
	switch {
	case slices.Equal(rec, Columns):
	case len(rec) == want+1 && slices.Equal(rec[:want], Columns) && rec[want] == UserColumn:
		f.Users, want = true, want+1
	default:
		return nil, fmt.Errorf("line %d: header %q, want %s[,%s]", line, strings.Join(rec, ","), strings.Join(Columns, ","), UserColumn)
	}
	for {
		rec, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(rec) != want {
			return nil, fmt.Errorf("line %d: %d columns, want %d", line, len(rec), want)
		}
		e, err := parseEntry(rec, f.Users)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		f.Entries = append(f.Entries, e)
	}
	if len(f.Entries) == 0 {
		return nil, errors.New("no queries in the file")
	}
	slices.SortStableFunc(f.Entries, func(a, b Entry) int { return cmp.Compare(a.ArrivalMs, b.ArrivalMs) })
	return f, nil
}

func parseEntry(rec []string, users bool) (Entry, error) {
	e := Entry{Worker: rec[1], Group: rec[2], Cluster: rec[3], Status: rec[4], ErrorCode: rec[5]}
	for i, p := range []*int64{&e.ArrivalMs, nil, nil, nil, nil, nil, &e.QueueMs, &e.ExecMs} {
		if p == nil {
			continue
		}
		v, err := strconv.ParseInt(rec[i], 10, 64)
		if err != nil || v < 0 {
			return e, fmt.Errorf("%s %q: want an integer >= 0", Columns[i], rec[i])
		}
		*p = v
	}
	switch {
	case e.Worker == "":
		return e, errors.New("worker: empty")
	case !slices.Contains(statuses, e.Status):
		return e, fmt.Errorf("status %q: want one of %s", e.Status, strings.Join(statuses, ", "))
	}
	if users {
		e.UserHash = rec[8]
	}
	return e, nil
}
