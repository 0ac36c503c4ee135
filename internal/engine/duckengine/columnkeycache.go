package duckengine

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's SELECT of one table reads that table's column keys from DuckDB's catalog
// (mysqlkeys.go): ~45 times the statement itself on a three-row table (BenchmarkSelectOneTable).
// The engine keeps what it read, per table, and forgets all of it whenever a statement that may
// change the catalog runs: the database is embedded, so every such statement passes through
// this engine. A generation counts those statements, once before one starts and once after it
// ends; a table's keys are used only while the generation is the one they were read under, so
// keys read while such a statement ran (before or after its change, committed or not) are never
// used after it. A COMMIT or ROLLBACK counts too: a transaction's DDL that another connection
// read around is forgotten when it ends.
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
	tables map[tableName]tableKeys
}

type tableName struct{ db, table string } // as a SELECT names it, table in lower case

// tableKeys is one table's columns and their key words, read under generation gen; never
// changed once cached.
type tableKeys struct {
	gen  uint64
	cols []tableColumn
}

// changing counts a statement that may change the catalog: once before it runs, once after.
func (c *columnKeysCache) changing() { c.gen.Add(1) }

// get is the table's keys read under the current generation, if any.
func (c *columnKeysCache) get(t tableName) (tableKeys, bool) {
	gen := c.gen.Load()
	c.mu.Lock()
	k, ok := c.tables[t]
	c.mu.Unlock()
	return k, ok && k.gen == gen
}

// put keeps k, read under generation k.gen (loaded before the read began).
func (c *columnKeysCache) put(t tableName, k tableKeys) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tables == nil || len(c.tables) >= columnKeysCacheMax {
		c.tables = make(map[tableName]tableKeys)
	}
	c.tables[t] = k
}

// changesCatalog reports whether q may change the catalog (or end a transaction that did):
// anything but one SELECT, SHOW, DESCRIBE or EXPLAIN. A text holding a ';' before its end
// counts, whatever it starts with.
func changesCatalog(q *query.Request) bool {
	return strings.IndexByte(strings.TrimRight(q.SQL, "; \t\r\n"), ';') >= 0 ||
		!sqltok.FirstKeywordIs(q.SQL, sqltok.MySQL, "select", "show", "describe", "desc", "explain")
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
