// Package history is the fleet's query history: the Record of one finished query, the wire
// batch a worker sends upstream (QueryRecordBatchV1), the worker-side Uplink that buffers,
// redacts and sends records, the control plane's Ingest handler for POST /worker/history, the
// Admin handler for GET /admin/queries, and the Store interface with its in-memory
// implementation (Postgres lives in pghistory).
//
// It is on the roles' history path and obeys the determinism contract: time, tasks and
// randomness come from the env.Env it is given; its only I/O is through the send func and the
// Store it is handed.
package history

import (
	"fmt"
	"time"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// Status is how a query ended.
type Status string

const (
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
	StatusRejected  Status = "rejected" // never ran: queue full, access denied, no route, ...
)

// Valid reports whether s is one of the four statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusSucceeded, StatusFailed, StatusCancelled, StatusRejected:
		return true
	}
	return false
}

// Limits on one record, so a hostile or broken worker cannot blow up the store.
const (
	QueryIDLengthMax = 128
	NameLengthMax    = 256     // worker, user, protocol, group, cluster
	SQLLengthMax     = 1 << 20 // SQL text, as sent after redaction
	ErrorLengthMax   = 16 << 10
	TraceStepsMax    = 64
	TraceStepLenMax  = 1024
)

// TimeFloor is the earliest startedAt a record may carry: no query ran before it, and a record
// dated earlier (year 1, say) is junk that only fills the oldest end of every listing.
var TimeFloor = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)

// ClockSkewMax is how far past the control plane's clock a record's times may lie (Ingest with
// a clock). A record dated in the future would stay on top of every newest-first listing and
// outlive every retention prune.
const ClockSkewMax = time.Hour

// Record is one finished query as the history keeps it. SQL holds what the worker's redaction
// policy let through (raw, parameterized, or nothing); SQLDigest is always set by the uplink.
type Record struct {
	QueryID      string    `json:"queryId"` // the proxy's query id; unique across the fleet
	Worker       string    `json:"worker"`  // stamped by the control plane from the session
	User         string    `json:"user"`
	Protocol     string    `json:"protocol"`
	Group        string    `json:"group"`
	Cluster      string    `json:"cluster"`
	SQL          string    `json:"sql,omitempty"`
	SQLDigest    string    `json:"sqlDigest,omitempty"`
	Status       Status    `json:"status"`
	ErrorCode    string    `json:"errorCode,omitempty"` // SQLSTATE
	Error        string    `json:"error,omitempty"`
	QueueMs      int64     `json:"queueMs"`
	ExecMs       int64     `json:"execMs"`
	Rows         int64     `json:"rows"`
	Bytes        int64     `json:"bytes"`
	CacheHit     bool      `json:"cacheHit"`
	RoutingTrace []string  `json:"routingTrace,omitempty"`
	StartedAt    time.Time `json:"startedAt"`
	EndedAt      time.Time `json:"endedAt"`
	// Shape is the raw SQL's sqltok.Shape as the frontend found it (query.Request.Shape), for
	// the redaction memo; never sent, and cleared once the record is redacted.
	Shape sqltok.ShapedText `json:"-"`
}

// Validate checks a record as it arrives on the wire; the error names the field.
func (r *Record) Validate() error {
	switch {
	case r.QueryID == "":
		return fieldError("queryId", "required")
	case len(r.QueryID) > QueryIDLengthMax:
		return fieldError("queryId", "longer than %d bytes", QueryIDLengthMax)
	case !r.Status.Valid():
		return fieldError("status", "%q is not succeeded, failed, cancelled or rejected", r.Status)
	case r.StartedAt.IsZero():
		return fieldError("startedAt", "required")
	case r.StartedAt.Before(TimeFloor):
		return fieldError("startedAt", "before %s", TimeFloor.Format(time.RFC3339))
	case r.EndedAt.Before(r.StartedAt):
		return fieldError("endedAt", "before startedAt")
	case r.QueueMs < 0 || r.ExecMs < 0 || r.Rows < 0 || r.Bytes < 0:
		return fieldError(negativeField(r), "must not be negative")
	case len(r.SQL) > SQLLengthMax:
		return fieldError("sql", "longer than %d bytes", SQLLengthMax)
	case len(r.Error) > ErrorLengthMax:
		return fieldError("error", "longer than %d bytes", ErrorLengthMax)
	case len(r.RoutingTrace) > TraceStepsMax:
		return fieldError("routingTrace", "more than %d steps", TraceStepsMax)
	}
	names := [...]struct{ field, value string }{
		{"worker", r.Worker}, {"user", r.User}, {"protocol", r.Protocol}, {"group", r.Group},
		{"cluster", r.Cluster}, {"sqlDigest", r.SQLDigest}, {"errorCode", r.ErrorCode},
	}
	for _, n := range names {
		if len(n.value) > NameLengthMax {
			return fieldError(n.field, "longer than %d bytes", NameLengthMax)
		}
	}
	for i, s := range r.RoutingTrace {
		if len(s) > TraceStepLenMax {
			return fieldError(fmt.Sprintf("routingTrace[%d]", i), "longer than %d bytes", TraceStepLenMax)
		}
	}
	return nil
}

func negativeField(r *Record) string {
	switch {
	case r.QueueMs < 0:
		return "queueMs"
	case r.ExecMs < 0:
		return "execMs"
	case r.Rows < 0:
		return "rows"
	}
	return "bytes"
}

// Canonical returns r as every store keeps it: times in UTC at microsecond precision (what
// PostgreSQL's timestamptz holds), so the memory and Postgres stores answer alike.
func (r Record) Canonical() Record {
	r.canonicalize()
	return r
}

// canonicalize makes r its Canonical form in place.
func (r *Record) canonicalize() {
	r.StartedAt, r.EndedAt = utcMicros(r.StartedAt), utcMicros(r.EndedAt)
	if len(r.RoutingTrace) == 0 {
		r.RoutingTrace = nil
	}
}

// utcMicros is t.UTC().Truncate(time.Microsecond) without Truncate's division: a second is a
// whole number of microseconds, so the nanoseconds past the last one are t.Nanosecond()'s.
// Made from its seconds and nanoseconds (no monotonic reading, as Truncate drops it) rather
// than by Add, which costs twice as much: the store does it twice a record.
func utcMicros(t time.Time) time.Time {
	ns := t.Nanosecond()
	return time.Unix(t.Unix(), int64(ns-ns%1000)).UTC()
}
