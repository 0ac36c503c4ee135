package duckengine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/testlong"
)

// TestTableColumnKeysAreTheCatalogQuerys: the words tableColumnKeys makes from its three plain
// reads of the catalog are those catalogColumnKeysSQL's one statement reads, for tables of
// any keys, unique constraints, indexes (unique or not, of one or more columns, caseless
// ones), NOT NULL columns and defaults (AUTO_INCREMENT's sequence among them), column names
// DuckDB quotes or not.
func TestTableColumnKeysAreTheCatalogQuerys(t *testing.T) {
	testlong.RapidChecks(t, 25, 100)
	qe, err := Open(engine.Spec{Name: "duck", Kind: Kind, Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	defer qe.Close()
	e := qe.(*Engine)
	ctx := context.Background()
	conn, err := e.conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer release(conn, true)
	if _, err := conn.ExecContext(ctx, "CREATE SEQUENCE "+aiPrefix+"t_seq"); err != nil {
		t.Fatal(err)
	}
	pool := []string{"a", "b", "c", "Col", "x y", "select", "d"}
	rapid.Check(t, func(rt *rapid.T) {
		_, _ = conn.ExecContext(ctx, "DROP TABLE IF EXISTS t")
		names := rapid.SliceOfNDistinct(rapid.SampledFrom(pool), 1, 4, func(s string) string { return s }).Draw(rt, "columns")
		var defs []string
		for _, n := range names {
			d := quoteIdent(n) + " " + rapid.SampledFrom([]string{"INTEGER", "VARCHAR"}).Draw(rt, "type")
			if rapid.Bool().Draw(rt, "not null") {
				d += " NOT NULL"
			}
			switch rapid.IntRange(0, 3).Draw(rt, "default") {
			case 1:
				d += " DEFAULT NULL"
			case 2:
				d += " DEFAULT 7"
			case 3:
				if strings.HasSuffix(d, "INTEGER") || strings.Contains(d, "INTEGER ") {
					d += " DEFAULT nextval('" + aiPrefix + "t_seq')"
				}
			}
			defs = append(defs, d)
		}
		some := func(label string) string {
			cols := rapid.SliceOfNDistinct(rapid.SampledFrom(names), 1, 2, func(s string) string { return s }).Draw(rt, label)
			q := make([]string, len(cols))
			for i, c := range cols {
				q[i] = quoteIdent(c)
			}
			return strings.Join(q, ", ")
		}
		if rapid.Bool().Draw(rt, "primary key") {
			defs = append(defs, "PRIMARY KEY ("+some("key")+")")
		}
		for i := range rapid.IntRange(0, 2).Draw(rt, "unique constraints") {
			defs = append(defs, "UNIQUE ("+some(fmt.Sprint("unique ", i))+")")
		}
		if _, err := conn.ExecContext(ctx, "CREATE TABLE t ("+strings.Join(defs, ", ")+")"); err != nil {
			rt.Skipf("DuckDB refuses the table: %v", err)
		}
		for i := range rapid.IntRange(0, 3).Draw(rt, "indexes") {
			name := fmt.Sprint("i", i)
			if rapid.IntRange(0, 3).Draw(rt, "caseless") == 0 {
				name = fmt.Sprint("t$qf_ci_", i)
			}
			unique := rapid.SampledFrom([]string{"", "UNIQUE "}).Draw(rt, "unique index")
			_, _ = conn.ExecContext(ctx, "CREATE "+unique+"INDEX "+quoteIdent(name)+" ON t ("+some(fmt.Sprint("index ", i))+")")
		}
		rows, err := conn.QueryContext(ctx, catalogColumnKeysSQL("", "t"))
		if err != nil {
			rt.Fatal(err)
		}
		var want []tableColumn
		for rows.Next() {
			var c tableColumn
			if err := rows.Scan(&c.db, &c.table, &c.name, &c.key); err != nil {
				rt.Fatal(err)
			}
			want = append(want, c)
		}
		rows.Close()
		if got := tableColumnKeys(ctx, conn, "", "T"); !slices.Equal(got, want) {
			rt.Fatalf("columns and keys %q; the catalog query says %q", got, want)
		}
	})
}
