package pgwire_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/testlong"
)

// TestChainedOnDeleteActionsAsPostgreSQL: a DELETE whose ON DELETE CASCADE reaches rows that
// are referenced in turn performs the next keys' actions as PostgreSQL 15 does (A <- B <- C
// with CASCADE then CASCADE or SET NULL, three levels, two children of one table), a NO ACTION
// key at the second level refuses it (23503) and nothing is changed; outside a transaction
// and in one (pgx, simple and extended protocol). It was 0A000.
func TestChainedOnDeleteActionsAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "cascadechain").URL())
	tables := []string{"select id from cc_a order by id", "select id, aid from cc_b order by id",
		"select id, bid from cc_c order by id", "select id, bid from cc_n order by id", "select id, cid from cc_d order by id",
		"select id, bid from cc_k order by id"}
	state := func(c *pgx.Conn) string { return tablesText(c, tables...) }
	execBoth(t, pg, duck,
		"create table cc_a (id int primary key)",
		"create table cc_b (id int primary key, aid int references cc_a on delete cascade)",
		"create table cc_c (id int primary key, bid int references cc_b on delete cascade)",
		"create table cc_n (id int primary key, bid int references cc_b on delete set null)",
		"create table cc_d (id int primary key, cid int references cc_c on delete cascade)",
		"create table cc_k (id int primary key, bid int references cc_b)",
		"insert into cc_a values (1), (2), (3), (4), (5)",
		"insert into cc_b values (10, 1), (11, 1), (12, 2), (13, 3), (14, 4), (15, 5)",
		"insert into cc_c values (20, 10), (21, 11), (22, 12), (23, 14), (24, 15)",
		"insert into cc_n values (30, 10), (31, 13), (32, 15)",
		"insert into cc_d values (40, 20), (41, 22), (42, 24)",
		"insert into cc_k values (50, 14)")
	sameSteps(t, pg, duck, state,
		oracleStep{"delete from cc_a where id = 1", nil},            // B, C, D deleted; N set null
		oracleStep{"delete from cc_a where id = $1", []any{3}},      // extended: B deleted, N set null
		oracleStep{"delete from cc_a where id = 4", nil},            // cc_k (no action) references the B row: 23503
		oracleStep{"delete from cc_b where id = 12", nil},           // from the middle: C and D
		oracleStep{"begin", []any{pgx.QueryExecModeSimpleProtocol}}, //
		oracleStep{"insert into cc_c values (25, 15)", nil},         // a row of the transaction's
		oracleStep{"delete from cc_a where id = 5", nil},            // reaches it too
		oracleStep{"commit", nil},                                   //
		oracleStep{"delete from cc_a where id in (2, 4)", nil},      // 4 still refused
		oracleStep{"delete from cc_k", nil},                         //
		oracleStep{"delete from cc_a a where a.id in (2, 4)", nil},  // now
	)
}

// TestRandomActionTreesAsPostgreSQL: over random trees of tables (each referencing its parent
// with ON DELETE CASCADE, SET NULL or NO ACTION) and random rows, a DELETE of the root's rows,
// outside a transaction or in one, leaves every table as on PostgreSQL 15, or is refused with
// the same SQLSTATE and changes nothing.
func TestRandomActionTreesAsPostgreSQL(t *testing.T) {
	testlong.RapidChecks(t, 25, 100)
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "actiontrees").URL())
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		n++
		prefix := fmt.Sprintf("at%d_", n)
		size := rapid.IntRange(2, 5).Draw(rt, "tables")
		parents := []int{-1}
		var ddl, rows, queries []string
		ids := [][]int{}
		for i := 0; i < size; i++ {
			if i == 0 {
				ddl = append(ddl, fmt.Sprintf("create table %s0 (id int primary key)", prefix))
			} else {
				p := rapid.IntRange(0, i-1).Draw(rt, "parent")
				parents = append(parents, p)
				action := rapid.SampledFrom([]string{"on delete cascade", "on delete set null", ""}).Draw(rt, "action")
				ddl = append(ddl, fmt.Sprintf("create table %s%d (id int primary key, pid int references %s%d %s)", prefix, i, prefix, p, action))
			}
			count := rapid.IntRange(1, 4).Draw(rt, "rows")
			var mine []int
			var values []string
			for r := 0; r < count; r++ {
				id := i*10 + r
				mine = append(mine, id)
				if i == 0 {
					values = append(values, fmt.Sprintf("(%d)", id))
					continue
				}
				ref := "null"
				if up := ids[parents[i]]; rapid.IntRange(0, 4).Draw(rt, "null") > 0 {
					ref = fmt.Sprint(rapid.SampledFrom(up).Draw(rt, "ref"))
				}
				values = append(values, fmt.Sprintf("(%d, %s)", id, ref))
			}
			ids = append(ids, mine)
			rows = append(rows, fmt.Sprintf("insert into %s%d values %s", prefix, i, strings.Join(values, ", ")))
			queries = append(queries, fmt.Sprintf("select * from %s%d order by id", prefix, i))
		}
		defer func() { tagOrState(pg, "rollback"); tagOrState(duck, "rollback") }() // a failed case's transaction
		for _, sql := range append(ddl, rows...) {
			for _, c := range []*pgx.Conn{pg, duck} {
				if got := tagOrState(c, sql); strings.HasPrefix(got, "error") {
					rt.Fatalf("%s: %s", sql, got)
				}
			}
		}
		victims := rapid.SliceOfNDistinct(rapid.SampledFrom(ids[0]), 1, len(ids[0]), rapid.ID[int]).Draw(rt, "deleted")
		inList := strings.ReplaceAll(strings.Trim(fmt.Sprint(victims), "[]"), " ", ", ")
		del := fmt.Sprintf("delete from %s0 where id in (%s)", prefix, inList)
		steps := []oracleStep{{del, nil}}
		if rapid.Bool().Draw(rt, "in a transaction") {
			steps = []oracleStep{{"begin", nil}, {del, nil}, {"commit", nil}}
		}
		state := func(c *pgx.Conn) string { return tablesText(c, queries...) }
		for _, s := range steps {
			if want, got := tagOrState(pg, s.sql), tagOrState(duck, s.sql); want != got {
				rt.Fatalf("%s\n%s\n%s\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", strings.Join(ddl, ";\n"), strings.Join(rows, ";\n"), s.sql, want, got)
			}
		}
		if want, got := state(pg), state(duck); want != got {
			rt.Fatalf("%s\n%s\nafter %s\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", strings.Join(ddl, ";\n"), strings.Join(rows, ";\n"), del, want, got)
		}
	})
}
