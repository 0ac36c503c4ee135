package duckengine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's SELECT of one table reads that table's column keys from DuckDB's catalog
// (mysqlkeys.go): ~45 times the statement itself on a three-row table (BenchmarkSelectOneTable).
// The engine keeps what it read, per table, and forgets all of it whenever a statement that may
// change the catalog runs: the database is embedded, so every statement reaches DuckDB through
// this engine's connections, and each connection (watchedConn) sorts the texts it is given. A
// generation counts those statements, once before one starts and once after it ends; a table's
// keys are used only while the generation is the one they were read under, so keys read while
// such a statement ran (before or after its change, committed or not) are never used after it.
// The end of a transaction that ran one counts too (COMMIT, ROLLBACK, the connection closed):
// its DDL, which another connection read around, becomes visible or goes away then.
//
// The texts are sorted where DuckDB gets them, not where a client's statement arrives: a
// client's INSERT, UPDATE or DELETE may be run as DDL (a referencing table hidden or created
// again, pgrefhide.go and pgrefatomic.go; a temporary table of a multi-table write), and a
// write that runs as a write leaves every table's keys as they were, so an INSERT-then-SELECT
// client reads the catalog once, not once a statement.
//
// Only statements on a pooled connection use the cache (Engine.Execute): a pooled connection is
// in the database's default state (a statement that leaves state behind retires its
// connection), so a table name means one table for every one of them. A pinned session may have
// its own (USE, SET search_path, DDL of its open transaction) and reads the catalog each time.

// columnKeysCacheMax bounds the tables remembered; past it the cache starts again.
const columnKeysCacheMax = 1024

type columnKeysCache struct {
	gen    atomic.Uint64
	mu     sync.Mutex
	tables map[tableName]kept[[]tableColumn]
	ai     map[tableName]kept[tableAI]
	// pgTypes: a table's declared varchar and char columns (pgtypmod.go); db is "db\x00schema"
	pgTypes map[tableName]kept[[]pgTypedColumn]
	reads   atomic.Uint64 // catalog reads made for lack of a kept answer (tests read it)
	// seen, when set, is given each text a connection runs or prepares (tests count them).
	seen atomic.Pointer[func(sqlText string)]
}

type tableName struct{ db, table string } // as a SELECT names it, table in lower case

// kept is one table's answer read under generation gen; never changed once kept.
type kept[V any] struct {
	gen uint64
	v   V
}

// tableAI is one table's AUTO_INCREMENT column (ok false: it has none): a MySQL client's every
// INSERT asks (autoinc.go).
type tableAI struct {
	col aiColumn
	ok  bool
}

// changing counts a statement that may change the catalog: once before it runs, once after.
func (c *columnKeysCache) changing() { c.gen.Add(1) }

// keptRead is t's answer in m read under the current generation, or else read's, kept in m
// when read succeeds under the generation loaded before it began.
func keptRead[V any](c *columnKeysCache, m *map[tableName]kept[V], t tableName, read func() (V, bool)) V {
	gen := c.gen.Load()
	c.mu.Lock()
	k, hit := (*m)[t]
	c.mu.Unlock()
	if hit && k.gen == gen {
		return k.v
	}
	c.reads.Add(1)
	v, ok := read()
	if ok {
		c.mu.Lock()
		if *m == nil || len(*m) >= columnKeysCacheMax {
			*m = make(map[tableName]kept[V])
		}
		(*m)[t] = kept[V]{gen: gen, v: v}
		c.mu.Unlock()
	}
	return v
}

// cachedAI is lookupAI, kept for the statements of pooled connections as column keys are.
func cachedAI(ctx context.Context, conn *sql.Conn, db, table string) (aiColumn, bool) {
	c := columnKeysCacheOf(ctx)
	if c == nil {
		return lookupAI(ctx, conn, db, table)
	}
	t := tableName{db: db, table: strings.ToLower(table)}
	a := keptRead(c, &c.ai, t, func() (tableAI, bool) {
		col, ok, err := readAI(ctx, conn, db, table)
		return tableAI{col: col, ok: ok}, err == nil
	})
	return a.col, a.ok
}

// keepsCatalog reports whether DuckDB running sqlText leaves the catalog as it was: one
// SELECT, INSERT, UPDATE, DELETE (WITH, VALUES, FROM-first and TABLE forms), SHOW, DESCRIBE,
// SUMMARIZE, SET VARIABLE or BEGIN. EXPLAIN is not one (EXPLAIN ANALYZE runs its statement), nor
// a text holding a ';' before its end, whatever it starts with (DuckDB runs every statement of
// it).
func keepsCatalog(sqlText string) bool {
	if !oneStatement(sqlText) {
		return false
	}
	first, second := firstWords(sqlText)
	switch first {
	case "select", "insert", "update", "delete", "with", "values", "from", "table", "show",
		"describe", "desc", "summarize", "begin", "start":
		return true
	case "set", "reset":
		return second == "variable"
	}
	return false
}

// endsTransaction reports whether sqlText is one statement that ends the connection's
// transaction: COMMIT, END, ROLLBACK or ABORT (not ROLLBACK TO a savepoint).
func endsTransaction(sqlText string) bool {
	if !oneStatement(sqlText) {
		return false
	}
	first, second := firstWords(sqlText)
	switch first {
	case "commit", "end", "abort":
		return true
	case "rollback":
		return second != "to"
	}
	return false
}

// oneStatement reports whether sqlText holds no ';' before its end (one in a literal counts).
func oneStatement(sqlText string) bool {
	return strings.IndexByte(strings.TrimRight(sqlText, "; \t\r\n"), ';') < 0
}

// firstWords are sqlText's first two tokens in lower case ("" for a token that is no word).
func firstWords(sqlText string) (first, second string) {
	s := sqltok.NewScanner(sqlText, sqltok.Postgres)
	t, ok := s.NextSignificant()
	if !ok || t.Kind != sqltok.Word {
		return "", ""
	}
	first = strings.ToLower(t.Text)
	if t, ok = s.NextSignificant(); ok && t.Kind == sqltok.Word {
		second = strings.ToLower(t.Text)
	}
	return first, second
}

// watchedConnector hands out watchedConns counting into keys.
type watchedConnector struct {
	*duckdb.Connector
	keys *columnKeysCache
}

func (c watchedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &watchedConn{Conn: dc.(*duckdb.Conn), keys: c.keys}, nil
}

// watchedConn is a DuckDB connection that counts, in keys' generation, each text it runs that
// may change the catalog, and the end of a transaction that ran one. database/sql uses one
// connection from one goroutine at a time.
type watchedConn struct {
	*duckdb.Conn
	keys *columnKeysCache
	// changed: a text that may change the catalog ran since the last end of a transaction.
	changed bool
	kept    keptPrepared // keptprepared.go
}

// around runs f, counted when sqlText may change the catalog or ends a transaction that did.
func (c *watchedConn) around(sqlText string, f func()) {
	// Anything but a SELECT run in between may change what the kept statement binds to without
	// DuckDB binding it again (a SET VARIABLE: getvariable is read when a statement is bound).
	if !onlySelects(sqlText) {
		c.kept.drop()
	}
	if seen := c.keys.seen.Load(); seen != nil {
		(*seen)(sqlText)
	}
	ends := endsTransaction(sqlText)
	count := ends && c.changed || !ends && !keepsCatalog(sqlText)
	if count {
		c.changed = !ends
		c.keys.changing()
		defer c.keys.changing()
	}
	f()
}

func (c *watchedConn) ExecContext(ctx context.Context, sqlText string, args []driver.NamedValue) (res driver.Result, err error) {
	c.around(sqlText, func() { res, err = c.Conn.ExecContext(ctx, sqlText, args) })
	return res, err
}

// QueryContext counts at the call, not at the rows' close: DuckDB runs a statement that is not
// a query to its end before the first row.
func (c *watchedConn) QueryContext(ctx context.Context, sqlText string, args []driver.NamedValue) (rows driver.Rows, err error) {
	c.around(sqlText, func() { rows, err = c.Conn.QueryContext(ctx, sqlText, args) })
	return rows, err
}

// Prepare counts too: DuckDB runs every statement but the last of a text it prepares.
func (c *watchedConn) Prepare(sqlText string) (st driver.Stmt, err error) {
	c.around(sqlText, func() { st, err = c.Conn.Prepare(sqlText) })
	return st, err
}

func (c *watchedConn) PrepareContext(ctx context.Context, sqlText string) (st driver.Stmt, err error) {
	c.around(sqlText, func() { st, err = c.Conn.PrepareContext(ctx, sqlText) })
	return st, err
}

func (c *watchedConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *watchedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.kept.drop()
	tx, err := c.Conn.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return watchedTx{tx: tx, c: c}, nil
}

// Close counts a transaction left open that ran DDL: DuckDB rolls it back.
func (c *watchedConn) Close() error {
	c.kept.drop() // a statement outliving its connection would be freed after it
	if c.changed {
		c.keys.changing()
		defer c.keys.changing()
	}
	return c.Conn.Close()
}

// driverDuckConn is the DuckDB connection under a driver connection database/sql hands out.
func driverDuckConn(dc any) (*duckdb.Conn, bool) {
	switch c := dc.(type) {
	case *watchedConn:
		return c.Conn, true
	case *duckdb.Conn:
		return c, true
	}
	return nil, false
}

// watchedTx is database/sql's transaction on a watchedConn: its end counts as COMMIT's and
// ROLLBACK's texts do.
type watchedTx struct {
	tx driver.Tx
	c  *watchedConn
}

func (t watchedTx) Commit() (err error) {
	t.c.around("COMMIT", func() { err = t.tx.Commit() })
	return err
}

func (t watchedTx) Rollback() (err error) {
	t.c.around("ROLLBACK", func() { err = t.tx.Rollback() })
	return err
}

type columnKeysCacheKey struct{}

// withColumnKeysCache is ctx telling run that its connection is a pooled one, whose statements
// use c.
func withColumnKeysCache(ctx context.Context, c *columnKeysCache) context.Context {
	return context.WithValue(ctx, columnKeysCacheKey{}, c)
}

func columnKeysCacheOf(ctx context.Context) *columnKeysCache {
	c, _ := ctx.Value(columnKeysCacheKey{}).(*columnKeysCache)
	return c
}
