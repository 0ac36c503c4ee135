package duckengine

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/pgoptions"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// Startup options: a PostgreSQL client may send settings with its connection (libpq's
// PGOPTIONS='-c statement_timeout=2000', JDBC's options=...); the frontend passes them on as the
// request's "options" header. DuckDB has no such settings, so they are applied here or refused:
// statement_timeout bounds each statement, the client-protocol settings the frontend answers
// itself are accepted, so is a search_path of public alone (pgschema.go), and anything else fails the statement with an error naming it rather
// than being ignored.

// optionsHeader is the startup parameter holding the options.
const optionsHeader = "options"

// wireSettings describe the client's wire session, which the frontend owns: accepted as they are.
var wireSettings = map[string]bool{
	"extra_float_digits": true, "application_name": true, "client_encoding": true, "datestyle": true,
	"intervalstyle": true, "client_min_messages": true, "standard_conforming_strings": true, "bytea_output": true,
}

// statementTimeout reads q's startup options: the statement_timeout to apply (0: none), or an
// error naming an option this engine cannot apply.
func statementTimeout(q *query.Request) (time.Duration, error) {
	t, err := startupTimeouts(q)
	return t.statement, err
}

// startupLockTimeout is the lock_timeout of q's startup options (0: none): the write lock's
// wait (pgwritelock.go).
func startupLockTimeout(q *query.Request) (time.Duration, error) {
	t, err := startupTimeouts(q)
	return t.lock, err
}

// startupDeadlockTimeout is the deadlock_timeout of q's startup options (0: the default;
// pgdeadlock.go). Options it cannot read fail the statement through statementTimeout's read.
func startupDeadlockTimeout(q *query.Request) time.Duration {
	t, _ := startupTimeouts(q)
	return t.deadlock
}

// startupTimes are the timeouts a connection's startup options set (0: none, or the default).
type startupTimes struct{ statement, lock, deadlock time.Duration }

// startupTimeouts reads q's startup options: statement_timeout, lock_timeout and
// deadlock_timeout, or an error naming an option this engine cannot apply.
func startupTimeouts(q *query.Request) (t startupTimes, err error) {
	raw := q.Headers[optionsHeader]
	if q.Protocol != query.ProtocolPostgres || raw == "" {
		return t, nil
	}
	opts, err := pgoptions.Parse(raw)
	if err != nil {
		return t, &query.Error{Code: sqlstate.InvalidParameterValue, Message: err.Error()}
	}
	for _, kv := range opts {
		name := strings.ToLower(strings.ReplaceAll(kv[0], "-", "_"))
		switch {
		case name == "statement_timeout" || name == "lock_timeout" || name == "deadlock_timeout":
			d, err := parseTimeout(kv[1])
			if err != nil {
				return startupTimes{}, &query.Error{Code: sqlstate.InvalidParameterValue, Message: fmt.Sprintf("startup option %s %q: %v", name, kv[1], err)}
			}
			switch name {
			case "lock_timeout":
				t.lock = d
			case "deadlock_timeout":
				t.deadlock = d
			default:
				t.statement = d
			}
		case name == "search_path" && duckSearchPath(kv[1]) == "main":
			// public (Django's and Rails' schema setting): where every statement already runs
		case !wireSettings[name]:
			return startupTimes{}, &query.Error{Code: sqlstate.FeatureNotSupported, Message: fmt.Sprintf(
				"startup option %s is not supported on DuckDB (only statement_timeout, lock_timeout and deadlock_timeout are applied): remove it from the connection's options", kv[0])}
		}
	}
	return t, nil
}

// parseTimeout reads a statement_timeout as PostgreSQL does: milliseconds, or a number with a
// unit (us, ms, s, min, h, d).
func parseTimeout(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	i := strings.IndexFunc(v, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(v)
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(v[:i]), 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("not a duration")
	}
	units := map[string]time.Duration{"": time.Millisecond, "us": time.Microsecond, "ms": time.Millisecond,
		"s": time.Second, "min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	unit, ok := units[strings.TrimSpace(v[i:])]
	if !ok {
		return 0, fmt.Errorf("unknown unit %q (us, ms, s, min, h, d)", strings.TrimSpace(v[i:]))
	}
	return time.Duration(n * float64(unit)), nil
}

// errStatementTimeout is what a statement stopped by statement_timeout fails with, as in PostgreSQL.
var errStatementTimeout = &query.Error{Code: sqlstate.QueryCanceled, Message: "canceling statement due to statement timeout"}

// withTimeout bounds ctx by q's statement_timeout; cancel must be called once the statement is
// over, and explain turns its error into the timeout's when the deadline stopped it.
func withTimeout(ctx context.Context, q *query.Request) (_ context.Context, cancel context.CancelFunc, explain func(error) error, err error) {
	timeout, err := statementTimeout(q)
	if err != nil {
		return ctx, func() {}, nil, err
	}
	return timeoutCtx(ctx, timeout)
}

// timeoutCtx is ctx ending after timeout (none when 0), and explain, which names a statement
// that ran out of it.
func timeoutCtx(ctx context.Context, timeout time.Duration) (_ context.Context, cancel context.CancelFunc, explain func(error) error, err error) {
	if timeout <= 0 {
		return ctx, func() {}, func(err error) error { return err }, nil
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	explain = func(err error) error {
		if err != nil && ctx.Err() == nil && tctx.Err() == context.DeadlineExceeded {
			return errStatementTimeout
		}
		return err
	}
	return tctx, cancel, explain, nil
}

// showTimeout answers SHOW statement_timeout with the client's own (DuckDB has no such
// setting): q rewritten into a SELECT of the value as PostgreSQL prints it.
func showTimeout(q *query.Request) *query.Request {
	w := leadWords(q, 3)
	if len(w) < 2 || w[0] != "show" || w[1] != "statement_timeout" || (len(w) == 3 && w[2] != ";") {
		return q
	}
	timeout, err := statementTimeout(q)
	if err != nil {
		return q // the statement fails with the options' error
	}
	c := *q
	c.SQL = "SELECT '" + pgDuration(timeout) + "' AS statement_timeout"
	return &c
}

// pgDuration prints d as PostgreSQL prints a time setting: 0, 1234ms, 2s, 1min, 1h.
func pgDuration(d time.Duration) string {
	ms := d.Milliseconds()
	switch {
	case ms == 0:
		return "0"
	case ms%3600000 == 0:
		return strconv.FormatInt(ms/3600000, 10) + "h"
	case ms%60000 == 0:
		return strconv.FormatInt(ms/60000, 10) + "min"
	case ms%1000 == 0:
		return strconv.FormatInt(ms/1000, 10) + "s"
	}
	return strconv.FormatInt(ms, 10) + "ms"
}
