package pgengine

import (
	"errors"
	"hash/maphash"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/sqlstate"
)

// A statement without arguments runs unprepared (argsFreeMode, pgx's exec mode): PostgreSQL
// parses and plans it every time, which for a short statement is most of its server time (a
// SELECT 1 took 50-75 us of the backend's CPU so, 32-45 us prepared, at load 16-32: RESULTS.md,
// "(#22, 2026-12-07, session 44, trino)"). Literal-only SQL that varies at every run (the SQL of
// simple-protocol clients) would gain nothing from a prepared statement each and fill pgx's
// statement cache, so only a statement seen before runs from that cache ("hot"), and only on a
// pooled connection outside a client's transaction: there a prepared statement that PostgreSQL
// refuses to run as prepared (its result's columns changed since, by DDL on a table it reads; or
// a client's DEALLOCATE ALL or DISCARD ALL dropped it) fails before it ran, at its Bind, and runs
// again unprepared (primed). Within a transaction that failure would abort the transaction.

// hotSeenBits sizes the table of statements remembered as seen: 1<<hotSeenBits slots.
const hotSeenBits = 13

// hotStatements remembers the statements without arguments run on the pool lately: a table of
// slots, each holding the hash of the last statement whose hash chose it (its top bits), so a
// statement is remembered until one of the others that run lands in its slot. Every statement
// on the pool asks it, from as many goroutines as run statements: one atomic load, and a store
// only for a statement not seen, so a statement run again and again writes nothing that other
// CPUs must fetch back. It was a map under a mutex: two lock operations a statement, and every
// statement on the pool serialized on one lock. A collision of the whole hash only prepares a
// statement seen once.
type hotStatements struct {
	seed  maphash.Seed
	slots [1 << hotSeenBits]atomic.Uint64 // 0: empty
}

func newHotStatements() *hotStatements {
	return &hotStatements{seed: maphash.MakeSeed()}
}

// again reports whether sql was seen before, and remembers it seen.
func (h *hotStatements) again(sql string) bool {
	k := maphash.String(h.seed, sql) | 1 // never an empty slot's 0
	slot := &h.slots[k>>(64-hotSeenBits)]
	if slot.Load() == k {
		return true
	}
	slot.Store(k)
	return false
}

// primed reads the first row of a hot statement's rows before they are handed on (pgx has
// read up to it already: a prepared statement's rows are described by its cache, and the
// server's first answer to it is a row, the end, or a refusal). It reports a statement refused
// as prepared (stalePrepared) stale, its rows closed: the caller runs it again unprepared.
//
// The rows' field descriptions are copied first: pgx keeps them in its connection's buffer, and
// a Next that reaches the end gives the connection back to the pool, where the next statement
// run on it (the MySQL frontend's column-keys lookup, say) overwrites them.
func primed(rows pgx.Rows) (pgx.Rows, bool) {
	fields := slices.Clone(rows.FieldDescriptions())
	if rows.Next() {
		return &primedRows{Rows: rows, fields: fields, pending: true}, false
	}
	if !stalePrepared(rows.Err()) {
		return &primedRows{Rows: rows, fields: fields}, false // its end or its error, which Next and Err tell again
	}
	rows.Close()
	return nil, true
}

// stalePrepared reports whether err is PostgreSQL's refusal to run a prepared statement as it
// was prepared: its result's row type changed, or the statement is gone. Both come at the
// Bind, before anything ran.
func stalePrepared(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code {
	case sqlstate.InvalidSQLStatementName:
		return true
	case sqlstate.FeatureNotSupported:
		return strings.Contains(pe.Message, "cached plan must not change result type")
	}
	return false
}

// primedRows are rows whose first Next was called, and found a row, before they were handed on.
type primedRows struct {
	pgx.Rows
	fields  []pgconn.FieldDescription // the rows' own: pgx's are its connection's, reused
	pending bool                      // that row was not read yet
}

func (r *primedRows) FieldDescriptions() []pgconn.FieldDescription { return r.fields }

func (r *primedRows) Next() bool {
	if r.pending {
		r.pending = false
		return true
	}
	return r.Rows.Next()
}
