package proxy

import (
	"context"
	"errors"
	"time"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Status is how a query ended.
type Status string

const (
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"    // engine error, no route, queue full, capacity timeout...
	StatusCancelled Status = "cancelled" // the client went away (ctx ended or rows closed early)
)

// Record is one finished query, handed to Options.OnFinish exactly once per query (history).
type Record struct {
	QueryID   string
	User      string
	Protocol  string
	Database  string
	Group     string // "" when routing found no group
	Cluster   string // "" when no cluster was picked (rejected, cache hit)
	SQL       string
	Shape     sqltok.ShapedText // the request's (query.Request.Shape), for the history's redaction
	Status    Status
	ErrorCode string // SQLSTATE when the error was a *query.Error
	Error     string
	QueueMs   int64 // waiting for a capacity slot
	ExecMs    int64 // from slot (or cache hit) to the end of the stream
	Rows      int64
	Bytes     int64 // Arrow buffer bytes streamed
	CacheHit  bool
	Trace     []TraceStep
	Start     time.Time
	End       time.Time
}

// errClosedEarly marks a stream the client closed before draining it.
var errClosedEarly = errors.New("result closed before it was drained")

// statusOf classifies how a query ended.
func statusOf(err error) Status {
	switch {
	case err == nil:
		return StatusSucceeded
	case errors.Is(err, errClosedEarly), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return StatusCancelled
	default:
		return StatusFailed
	}
}

func fillError(r *Record, err error) {
	if err == nil {
		return
	}
	r.Error = err.Error()
	var qe *query.Error
	if errors.As(err, &qe) {
		r.ErrorCode = qe.Code
	}
}

func millis(d time.Duration) int64 { return d.Milliseconds() }
