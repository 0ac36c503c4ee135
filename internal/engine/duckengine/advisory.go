package duckengine

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// PostgreSQL's advisory locks (pg_advisory_lock and its kin), which migration tools take so
// that two deployments do not migrate at once (Rails, golang-migrate, Flyway): DuckDB has none,
// so the engine keeps them, for all of its connections. A lock is held by a client connection
// (its protocol and address, unique while it is open): a session lock until it is unlocked or
// the connection ends (ClientClosed), a transaction lock until the transaction ends. As in
// PostgreSQL a holder may take a lock again (it is counted), shared locks exclude only
// exclusive ones, and one bigint key and two integer keys are different locks. A wait ends
// with the lock, or with the statement (its timeout, the client's cancel); a wait in a
// cycle of waits is answered as PostgreSQL's deadlock check answers it (pgdeadlock.go).
//
// The call is read from a statement that is only it, as the tools send it: SELECT
// pg_advisory_lock(42), with literal or parameter keys ($1, ?), an alias allowed. A call
// inside another statement is refused (0A000) rather than answered by DuckDB.

// advisoryFuncs are the functions: what each takes and answers.
var advisoryFuncs = map[string]advisoryFunc{
	"pg_advisory_lock":                 {wait: true},
	"pg_advisory_lock_shared":          {wait: true, shared: true},
	"pg_try_advisory_lock":             {try: true},
	"pg_try_advisory_lock_shared":      {try: true, shared: true},
	"pg_advisory_xact_lock":            {wait: true, xact: true},
	"pg_advisory_xact_lock_shared":     {wait: true, xact: true, shared: true},
	"pg_try_advisory_xact_lock":        {try: true, xact: true},
	"pg_try_advisory_xact_lock_shared": {try: true, xact: true, shared: true},
	"pg_advisory_unlock":               {unlock: true},
	"pg_advisory_unlock_shared":        {unlock: true, shared: true},
	"pg_advisory_unlock_all":           {unlockAll: true},
}

type advisoryFunc struct {
	wait, try, unlock, unlockAll bool
	shared, xact                 bool
}

// answersBool: the function answers a boolean (whether it got or released the lock); the
// others answer void.
func (f advisoryFunc) answersBool() bool { return f.try || f.unlock }

// advisoryCall is a statement that is one call of an advisory lock function.
type advisoryCall struct {
	name string // the function
	f    advisoryFunc
	col  string // the result column's name
	// args are the keys: a literal's value, or a parameter's number (param > 0).
	args []advisoryArg
}

type advisoryArg struct {
	value int64
	param int
}

// readAdvisory reads q as a call of an advisory lock function. ok is false when q names none;
// err refuses a call this does not read (inside another statement, keys not literals or
// parameters).
func readAdvisory(q *query.Request) (call advisoryCall, ok bool, err error) {
	if q.Protocol != query.ProtocolPostgres || !containsFold(q.SQL, "advisory") {
		return call, false, nil
	}
	var toks []sqltok.Token
	named := ""
	for _, t := range q.Analysis().Tokens {
		if t.Significant() {
			toks = append(toks, t)
			if _, is := advisoryFuncs[strings.ToLower(t.Text)]; is && t.Kind == sqltok.Word && named == "" {
				named = strings.ToLower(t.Text)
			}
		}
	}
	if named == "" {
		return call, false, nil
	}
	refuse := &query.Error{Code: sqlstate.FeatureNotSupported, Message: named + " on DuckDB is a statement of its own: " +
		"SELECT " + named + "(key) with keys as literals or parameters"}
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	word := func(i int) string {
		if i < len(toks) {
			return strings.ToLower(toks[i].Text)
		}
		return ""
	}
	if word(0) != "select" || word(1) != named || word(2) != "(" {
		return call, true, refuse
	}
	call = advisoryCall{name: named, f: advisoryFuncs[named], col: named}
	i := 3
	for word(i) != ")" {
		if len(call.args) > 0 {
			if word(i) != "," {
				return call, true, refuse
			}
			i++
		}
		sign := int64(1)
		if word(i) == "-" {
			sign, i = -1, i+1
		}
		if i >= len(toks) {
			return call, true, refuse
		}
		var a advisoryArg
		switch t := toks[i]; {
		case t.Kind == sqltok.Number:
			v, err := strconv.ParseInt(t.Text, 10, 64)
			if err != nil {
				return call, true, refuse
			}
			a.value = sign * v
		case t.Kind == sqltok.Param && sign == 1 && strings.HasPrefix(t.Text, "$"):
			if a.param, err = strconv.Atoi(t.Text[1:]); err != nil || a.param < 1 {
				return call, true, refuse
			}
		default:
			return call, true, refuse
		}
		i++
		if word(i) == "::" {
			switch word(i + 1) {
			case "bigint", "int8", "int", "int4", "integer", "smallint", "int2":
				i += 2
			default:
				return call, true, refuse
			}
		}
		call.args = append(call.args, a)
	}
	i++
	if word(i) == "as" {
		i++
	}
	if i < len(toks) && (toks[i].Kind == sqltok.Word || toks[i].Kind == sqltok.QuotedIdent) && i == len(toks)-1 {
		call.col = strings.ToLower(toks[i].Text)
		if toks[i].Kind == sqltok.QuotedIdent {
			call.col = strings.ReplaceAll(toks[i].Text[1:len(toks[i].Text)-1], `""`, `"`)
		}
		i++
	}
	if i != len(toks) || call.f.unlockAll != (len(call.args) == 0) || len(call.args) > 2 {
		return call, true, refuse
	}
	return call, true, nil
}

// keyOID is the type of the call's keys: bigint for one, integer for two.
func (c advisoryCall) keyOID() uint32 {
	if len(c.args) == 2 {
		return pgtype.Int4OID
	}
	return pgtype.Int8OID
}

// description is the call's parameters and its one column, as PostgreSQL describes them.
func (c advisoryCall) description() *engine.Description {
	d := &engine.Description{Schema: c.schema()}
	n := 0
	for _, a := range c.args {
		n = max(n, a.param)
	}
	for i := 1; i <= n; i++ {
		d.Params = append(d.Params, engine.PGField(fmt.Sprintf("$%d", i), c.keyOID(), -1))
	}
	return d
}

func (c advisoryCall) schema() *arrow.Schema {
	oid := uint32(voidOID)
	if c.f.answersBool() {
		oid = pgtype.BoolOID
	}
	return arrow.NewSchema([]arrow.Field{engine.PGField(c.col, oid, -1)}, nil)
}

// key is the lock the call names, its keys read from q's arguments.
func (c advisoryCall) key(q *query.Request) (advisoryKey, error) {
	var k advisoryKey
	vals := make([]int64, len(c.args))
	for i, a := range c.args {
		vals[i] = a.value
		if a.param == 0 {
			continue
		}
		if a.param > len(q.Args) {
			return k, &query.Error{Code: sqlstate.ProtocolViolation, Message: fmt.Sprintf("there is no parameter $%d", a.param)}
		}
		v, err := intArg(q.Args[a.param-1])
		if err != nil {
			return k, &query.Error{Code: sqlstate.InvalidTextRepresentation, Message: fmt.Sprintf("invalid input syntax for type bigint: %v", q.Args[a.param-1])}
		}
		vals[i] = v
	}
	switch len(vals) {
	case 1:
		k.a = vals[0]
	case 2:
		for _, v := range vals {
			if v < -1<<31 || v >= 1<<31 {
				return k, &query.Error{Code: sqlstate.NumericValueOutOfRange, Message: "integer out of range"}
			}
		}
		k.a, k.b, k.pair = vals[0], vals[1], true
	}
	return k, nil
}

// intArg is a parameter's value as an integer: a driver's number, or its text.
func intArg(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case int32:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int:
		return int64(x), nil
	case string:
		return strconv.ParseInt(strings.TrimSpace(x), 10, 64)
	case []byte:
		return strconv.ParseInt(strings.TrimSpace(string(x)), 10, 64)
	}
	return 0, fmt.Errorf("not an integer: %T", v)
}

// voidOID is PostgreSQL's type void, which pg_advisory_lock answers (pgtype names it not).
const voidOID = 2278

// advisoryKey is a lock: one bigint key, or a pair of integers.
type advisoryKey struct {
	a, b int64
	pair bool
}

// holding counts one holder's takes of a lock, by scope and mode.
type holding struct {
	session, xact [2]int // [exclusive, shared]
	party         uint32 // the holder's PostgreSQL session (pid), for the deadlock check
}

func (h *holding) empty() bool { return h.session == [2]int{} && h.xact == [2]int{} }

func (h *holding) exclusive() bool { return h.session[0] > 0 || h.xact[0] > 0 }

// advisoryLocks are an engine's locks: each key's holders, by holder.
type advisoryLocks struct {
	mu      sync.Mutex
	locks   map[advisoryKey]map[string]*holding
	changed chan struct{} // closed, and replaced, whenever a lock is let go
	graph   *waitGraph    // the engine's waits (pgdeadlock.go)
}

// free reports whether holder may take k in the mode: no other holder has it exclusively,
// nor (for an exclusive take) at all.
func (l *advisoryLocks) free(k advisoryKey, holder string, shared bool) bool {
	for h, hd := range l.locks[k] {
		if h != holder && (hd.exclusive() || !shared) {
			return false
		}
	}
	return true
}

// take takes k for holder, waiting for it when wait; ok is false when it was not free and
// the call does not wait. A wait of a PostgreSQL session (party, 0: none) is checked for a
// deadlock once, deadlockTimeout after it began (pgdeadlock.go).
func (l *advisoryLocks) take(ctx context.Context, k advisoryKey, holder string, party uint32, deadlockTimeout time.Duration, shared, xact, wait bool) (bool, error) {
	mode := 0
	if shared {
		mode = 1
	}
	dc, stopCheck := deadlockCheck{}, func() {}
	defer func() { stopCheck() }()
	for {
		l.mu.Lock()
		if l.free(k, holder, shared) {
			if l.locks == nil {
				l.locks = map[advisoryKey]map[string]*holding{}
			}
			if l.locks[k] == nil {
				l.locks[k] = map[string]*holding{}
			}
			hd := l.locks[k][holder]
			if hd == nil {
				hd = &holding{party: party}
				l.locks[k][holder] = hd
			}
			if xact {
				hd.xact[mode]++
			} else {
				hd.session[mode]++
			}
			l.mu.Unlock()
			return true, nil
		}
		if !wait {
			l.mu.Unlock()
			return false, nil
		}
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		changed := l.changed
		l.mu.Unlock()
		if dc.timer == nil {
			dc, stopCheck = l.graph.watch(party, deadlockTimeout, func() (string, []uint32) { return l.blockers(k, holder, shared) })
		}
		select {
		case <-changed:
		case <-dc.fired():
			if err := dc.check(); err != nil {
				return false, err
			}
		case <-ctx.Done():
			return false, &query.Error{Code: sqlstate.QueryCanceled, Message: "canceling statement while waiting for an advisory lock"}
		}
	}
}

// blockers is what holder's wait for k waits for, in PostgreSQL's words (the lock's tag:
// database, key, kind), and the sessions holding it in a mode that excludes the wait's.
func (l *advisoryLocks) blockers(k advisoryKey, holder string, shared bool) (what string, parties []uint32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for h, hd := range l.locks[k] { //determinism:ok sorted below
		if h != holder && (hd.exclusive() || !shared) && hd.party != 0 {
			parties = append(parties, hd.party)
		}
	}
	slices.Sort(parties)
	mode, tag := "ExclusiveLock", fmt.Sprintf("[0,%d,%d,1]", uint32(k.a>>32), uint32(k.a))
	if shared {
		mode = "ShareLock"
	}
	if k.pair {
		tag = fmt.Sprintf("[0,%d,%d,2]", uint32(k.a), uint32(k.b))
	}
	return mode + " on advisory lock " + tag, parties
}

// release lets go of one session take of k by holder; false when it held none (PostgreSQL
// warns, and answers false).
func (l *advisoryLocks) release(k advisoryKey, holder string, shared bool) bool {
	mode := 0
	if shared {
		mode = 1
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	hd := l.locks[k][holder]
	if hd == nil || hd.session[mode] == 0 {
		return false
	}
	hd.session[mode]--
	l.drop(k, holder, hd)
	return true
}

// releaseAll lets go of holder's locks: its transaction's (xact), its session's, or both.
func (l *advisoryLocks) releaseAll(holder string, session, xact bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, holders := range l.locks {
		if hd := holders[holder]; hd != nil {
			if session {
				hd.session = [2]int{}
			}
			if xact {
				hd.xact = [2]int{}
			}
			l.drop(k, holder, hd)
		}
	}
}

// drop forgets holder's holding of k once empty, and wakes the waiters. l.mu is held.
func (l *advisoryLocks) drop(k advisoryKey, holder string, hd *holding) {
	if !hd.empty() {
		return
	}
	delete(l.locks[k], holder)
	if len(l.locks[k]) == 0 {
		delete(l.locks, k)
	}
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

// advisoryHolder is the holder a client's statement q takes locks for; "" when its frontend
// says not which connection it came from.
func advisoryHolder(q *query.Request) string {
	if q.ClientAddr == "" {
		return ""
	}
	return q.Protocol + " " + q.ClientAddr
}

// runAdvisory runs call for the client of q; inTx: in the client's transaction, whose end
// lets go of its transaction locks (else a transaction lock is let go as the statement ends).
func (l *advisoryLocks) run(ctx context.Context, call advisoryCall, q *query.Request, inTx bool, deadlockTimeout time.Duration) (query.Rows, error) {
	holder := advisoryHolder(q)
	if holder == "" {
		return nil, &query.Error{Code: sqlstate.FeatureNotSupported, Message: call.name + " on DuckDB needs the client's connection, which this frontend does not name"}
	}
	k, err := call.key(q)
	if err != nil {
		return nil, err
	}
	var answer any // void: PostgreSQL's text of it is empty
	switch f := call.f; {
	case f.unlockAll:
		l.releaseAll(holder, true, false)
		answer = ""
	case f.unlock:
		answer = l.release(k, holder, f.shared)
	default:
		got, err := l.take(ctx, k, holder, q.SessionID, deadlockTimeout, f.shared, f.xact, f.wait)
		if err != nil {
			return nil, err
		}
		if f.xact && !inTx && got {
			l.releaseXact(k, holder, f.shared) // the statement was its transaction
		}
		answer = got
		if f.wait {
			answer = ""
		}
	}
	return oneValue(call.schema(), answer), nil
}

// releaseXact lets go of one transaction take of k by holder.
func (l *advisoryLocks) releaseXact(k advisoryKey, holder string, shared bool) {
	mode := 0
	if shared {
		mode = 1
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if hd := l.locks[k][holder]; hd != nil && hd.xact[mode] > 0 {
		hd.xact[mode]--
		l.drop(k, holder, hd)
	}
}

// oneValue is a result of one row, one column.
func oneValue(schema *arrow.Schema, v any) query.Rows {
	done := false
	return engine.NewStream(schema, func(_ context.Context, b *engine.BatchBuilder) (bool, error) {
		if done {
			return false, nil
		}
		done = true
		if err := b.Append(0, v); err != nil {
			return false, err
		}
		b.EndRow()
		return false, nil
	}, func() string { return "SELECT 1" }, func() error { return nil })
}

// ClientClosed lets go of the locks of a client whose connection ended (engine.ClientCloser).
func (e *Engine) ClientClosed(protocol, client string) {
	if client != "" {
		e.advisory.releaseAll(protocol+" "+client, true, true)
	}
}
