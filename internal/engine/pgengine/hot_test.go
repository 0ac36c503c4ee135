package pgengine_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/engine/enginetest"
	"github.com/queryflux/queryflux/internal/query"
)

// TestARepeatedStatementRunsPrepared: a statement without arguments run a second time on the
// pool runs as a prepared statement of the connection (PostgreSQL then neither parses nor
// plans it again); one run once does not.
func TestARepeatedStatementRunsPrepared(t *testing.T) {
	e, _ := openConns(t, 1)
	prepared := func() []string {
		t.Helper()
		_, rows, err := enginetest.TextRows(e, &query.Request{SQL: "select statement from pg_prepared_statements order by 1"})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rows {
			out = append(out, r[0])
		}
		return out
	}
	for range 3 {
		if _, rows, err := enginetest.TextRows(e, &query.Request{SQL: "select 41 + 1"}); err != nil || len(rows) != 1 || rows[0][0] != "42" {
			t.Fatalf("select 41 + 1: %v, %v", rows, err)
		}
	}
	if _, _, err := enginetest.TextRows(e, &query.Request{SQL: "select 'once'"}); err != nil {
		t.Fatal(err)
	}
	got := prepared()
	if !slices.Contains(got, "select 41 + 1") {
		t.Errorf("prepared statements %q: the repeated statement is not among them", got)
	}
	if slices.Contains(got, "select 'once'") {
		t.Errorf("prepared statements %q: a statement run once is among them", got)
	}
}

// TestRepeatedStatementsFollowTheirTablesAndDroppedStatements: statements run again and again
// while their table's columns change (by the engine's own statements or directly on
// PostgreSQL), and while a client drops the connection's prepared statements (DEALLOCATE ALL,
// DISCARD ALL), answer as their table is at that moment, never with PostgreSQL's "cached plan
// must not change result type" nor "prepared statement does not exist".
func TestRepeatedStatementsFollowTheirTablesAndDroppedStatements(t *testing.T) {
	ctx := context.Background()
	e, dsn := openConns(t, 1) // one connection: each statement meets what the last left on it
	direct, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close(ctx)
	rapid.Check(t, func(rt *rapid.T) {
		run := func(sql string) ([]string, [][]string) {
			names, rows, err := enginetest.TextRows(e, &query.Request{SQL: sql})
			if err != nil {
				rt.Fatalf("%s: %v", sql, err)
			}
			return names, rows
		}
		run("drop table if exists hot_t")
		run("create table hot_t (a int)")
		cols, count, next := []string{"a"}, 0, 0
		for range rapid.IntRange(5, 25).Draw(rt, "steps") {
			switch op := rapid.SampledFrom([]string{"select", "count", "insert", "add", "drop", "deallocate", "discard"}).Draw(rt, "op"); op {
			case "select":
				names, rows := run("select * from hot_t")
				if !slices.Equal(names, cols) || len(rows) != count {
					rt.Fatalf("select * from hot_t: columns %q and %d rows, want %q and %d", names, len(rows), cols, count)
				}
			case "count":
				if _, rows := run("select count(*) from hot_t"); rows[0][0] != strconv.Itoa(count) {
					rt.Fatalf("count(*) %s, want %d", rows[0][0], count)
				}
			case "insert":
				run("insert into hot_t (a) values (1)")
				count++
			case "add", "drop":
				var ddl string
				if op == "add" {
					next++
					ddl = fmt.Sprintf("alter table hot_t add column c%d text", next)
					cols = append(cols, fmt.Sprintf("c%d", next))
				} else if len(cols) > 1 {
					ddl = "alter table hot_t drop column " + cols[len(cols)-1]
					cols = cols[:len(cols)-1]
				} else {
					continue
				}
				if rapid.Bool().Draw(rt, "directly on PostgreSQL") {
					if _, err := direct.Exec(ctx, ddl); err != nil {
						rt.Fatalf("%s: %v", ddl, err)
					}
				} else {
					run(ddl)
				}
			case "deallocate", "discard":
				run(strings.ToUpper(op) + " ALL")
			}
		}
	})
}

// TestAnEmptyRepeatedResultKeepsItsColumns: a repeated statement whose result is empty, from a
// MySQL client (whose columns' keys are then read from the catalog on a free connection),
// answers with its own columns every time. Reading the empty result to its end gave the
// connection back to the pool, the catalog's statement ran on it, and the result's columns
// became the catalog statement's ("column attrelid: binary format for type oid not supported").
func TestAnEmptyRepeatedResultKeepsItsColumns(t *testing.T) {
	e, _ := openConns(t, 1) // one connection: the catalog's statement runs where the result ran
	if _, _, err := enginetest.TextRows(e, &query.Request{SQL: "create table hot_empty (id int primary key, v text)"}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		q := &query.Request{SQL: "select id, v from hot_empty where id < 0", Protocol: query.ProtocolMySQL}
		names, rows, err := enginetest.TextRows(e, q)
		if err != nil || !slices.Equal(names, []string{"id", "v"}) || len(rows) != 0 {
			t.Fatalf("run %d: columns %q, %d rows, %v; want [id v], none", i+1, names, len(rows), err)
		}
	}
}
