package duckengine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// SET LOCAL name = value lasts the transaction, as in PostgreSQL: DuckDB has no SET LOCAL, so
// the session sets the setting on its connection, keeps the value it had, and sets that back
// when the transaction ends (DuckDB's settings are not undone by a ROLLBACK). statement_timeout,
// which DuckDB lacks, times the transaction's next statements. Outside a transaction SET
// LOCAL does nothing (PostgreSQL only warns). A setting DuckDB does not have is refused
// (0A000), never taken and ignored.

// localSetting is a setting SET LOCAL changed, and its value before.
type localSetting struct{ name, before string }

// setLocalStatement is SET LOCAL's setting (lower case, "timezone" for TIME ZONE), its value
// as written and the statement that sets it on DuckDB, from the client's statement q.
func setLocalStatement(q *query.Request) (name, value, duckSQL string) {
	toks := q.Analysis().Tokens
	var sig []int
	for i, t := range toks {
		if t.Significant() {
			sig = append(sig, i)
		}
	}
	if len(sig) < 3 {
		return "", "", ""
	}
	rest := func(from int) string {
		var b strings.Builder
		for _, t := range toks[from:] {
			if t.Kind == sqltok.Punct && t.Text == ";" {
				break
			}
			b.WriteString(t.Text)
		}
		return strings.TrimSpace(b.String())
	}
	name = strings.ToLower(toks[sig[2]].Text)
	if name == "time" && len(sig) > 4 && strings.EqualFold(toks[sig[3]].Text, "zone") {
		return "timezone", rest(sig[4]), "SET TimeZone = " + rest(sig[4])
	}
	if len(sig) > 4 && (toks[sig[3]].Text == "=" || strings.EqualFold(toks[sig[3]].Text, "to")) {
		value = rest(sig[4])
	}
	if name == "search_path" && value != "" {
		return name, value, "SET search_path = " + quoteString(duckSearchPath(value))
	}
	return name, value, "SET " + rest(sig[2])
}

// setLocal answers SET LOCAL in the session.
func (s *session) setLocal(ctx context.Context, st statement) (query.Rows, error) {
	switch {
	case s.status == 'E':
		return nil, errAborted
	case s.status == 'I':
		return engine.TagRows("SET"), nil
	}
	name, value, duckSQL := setLocalStatement(st.q)
	if local := s.localTimer(name); local != nil { // DuckDB has none of them: the session applies them
		value = strings.Trim(value, "'")
		d, err := parseTimeout(value)
		if err != nil {
			s.fail()
			return nil, &query.Error{Code: sqlstate.InvalidParameterValue, Message: fmt.Sprintf("invalid value for parameter \"%s\": %q", name, value)}
		}
		*local = &d
		return engine.TagRows("SET"), nil
	}
	if s.e.locked && !slices.Contains(settableNames, name) {
		s.fail()
		return nil, s.e.errLocked("SET LOCAL " + name)
	}
	before, err := s.setting(ctx, name)
	if err != nil {
		s.fail()
		return nil, &query.Error{Code: sqlstate.FeatureNotSupported, Message: fmt.Sprintf("SET LOCAL %s is not supported on DuckDB, which has no such setting", name)}
	}
	if err := s.exec(ctx, duckSQL); err != nil {
		s.fail()
		return nil, err
	}
	if !slices.ContainsFunc(s.locals, func(l localSetting) bool { return l.name == name }) {
		s.locals = append(s.locals, localSetting{name, before})
	}
	return engine.TagRows("SET"), nil
}

// localTimer is where the session keeps the transaction's SET LOCAL of timeout name: the
// statements' (options.go), the write lock's wait (pgwritelock.go), the deadlock check
// (pgdeadlock.go); nil for any other setting.
func (s *session) localTimer(name string) **time.Duration {
	switch name {
	case "statement_timeout":
		return &s.localTimeout
	case "lock_timeout":
		return &s.localLockTimeout
	case "deadlock_timeout":
		return &s.localDeadlockTimeout
	}
	return nil
}

// setting is the value of DuckDB's setting name on the session's connection.
func (s *session) setting(ctx context.Context, name string) (string, error) {
	var v string
	err := s.conn.QueryRowContext(ctx, "SELECT CAST(current_setting(?) AS VARCHAR)", name).Scan(&v)
	return v, err
}

// endTx sets back what SET LOCAL changed, at the transaction's end, and lets go of its
// advisory transaction locks; a connection whose setting could not be set back is not given
// to another client.
func (s *session) endTx() {
	if s.holder != "" {
		s.e.advisory.releaseAll(s.holder, false, true)
		s.holder = ""
	}
	s.localTimeout, s.localLockTimeout, s.localDeadlockTimeout = nil, nil, nil
	for i := len(s.locals) - 1; i >= 0; i-- {
		l := s.locals[i]
		if _, err := s.conn.ExecContext(context.Background(), "SET "+quoteIdent(l.name)+" = "+quoteString(l.before)); err != nil {
			s.clean = false
		}
	}
	s.locals = s.locals[:0]
}

// timed is ctx with the transaction's SET LOCAL statement_timeout, when it has one.
func (s *session) timed(ctx context.Context, q *query.Request) (context.Context, context.CancelFunc, func(error) error, error) {
	if s.localTimeout == nil {
		return withTimeout(ctx, q)
	}
	return timeoutCtx(ctx, *s.localTimeout)
}

// withLocalTimeouts is q as SHOW and current_setting read it (sessionSetting): its startup
// options followed by the transaction's SET LOCAL timeouts, which override them as a later
// option does an earlier one; q itself when the transaction set none. The options it gives
// are the values the session applies anyway (timed, lockTimeoutOf, deadlockTimeoutOf).
func (s *session) withLocalTimeouts(q *query.Request) *query.Request {
	if q.Protocol != query.ProtocolPostgres || s.localTimeout == nil && s.localLockTimeout == nil && s.localDeadlockTimeout == nil {
		return q
	}
	opts := q.Headers[optionsHeader]
	for _, l := range []struct {
		name string
		d    *time.Duration
	}{{"statement_timeout", s.localTimeout}, {"lock_timeout", s.localLockTimeout}, {"deadlock_timeout", s.localDeadlockTimeout}} {
		if l.d != nil {
			opts += " -c " + l.name + "=" + strconv.FormatInt(l.d.Milliseconds(), 10)
		}
	}
	headers := make(map[string]string, len(q.Headers)+1)
	maps.Copy(headers, q.Headers)
	headers[optionsHeader] = strings.TrimSpace(opts)
	c := *q
	c.Headers = headers
	return &c
}
