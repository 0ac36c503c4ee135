package duckengine

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

// TestHiddenReferencingTablesKeepTheirKeys: an ON DELETE / ON UPDATE action performed with the
// referencing tables hidden (pgrefhide.go) leaves every key as it was: the referenced table
// still refuses to lose a referenced row (its list of referencing tables intact), the
// referencing tables still refuse a row referencing nothing (their own keys intact, a second
// key to another table too), no stand-in or key table is left, the rows are PostgreSQL's; a
// referencing table with an index of its own is hidden too (the same table after, its index
// created again).
func TestHiddenReferencingTablesKeepTheirKeys(t *testing.T) {
	runStates(t, openMemory(t), []struct{ sql, want string }{
		{"create table hp (id int primary key, n text)", ""},
		{"create table hq (id int primary key)", ""},
		{"create table hc (id int primary key, pid int references hp on delete cascade on update cascade, qid int references hq)", ""},
		{"create table hs (id int primary key, pid int references hp (id) on delete set null on update set null)", ""},
		{"create table hk (id int primary key, pid int references hp (id))", ""},
		{"insert into hp values (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')", ""},
		{"insert into hq values (1)", ""},
		{"insert into hc values (10, 1, 1), (11, 1, null), (12, 2, 1), (13, 3, null)", ""},
		{"insert into hs values (20, 1), (21, 2)", ""},
		{"insert into hk values (30, 4)", ""},
		{"delete from hp where id = 1", ""},
		{"select error('cascade: ' || string_agg(id || ':' || pid, ',' order by id)) from hc having string_agg(id || ':' || pid, ',' order by id) <> '12:2,13:3'", ""},
		{"select error('set null: ' || count(pid)) from hs having count(pid) <> 1", ""},
		{"update hp set id = 7 where id = 2", ""},
		{"select error('update cascade') from hc where id = 12 and pid <> 7", ""},
		{"select error('update set null') from hs where id = 21 and pid is not null", ""},
		{"delete from hp where id = 4", "23503"}, // hk's key, no action
		// the keys as they were
		{"delete from hq where id = 1", "23503"},
		{"insert into hc values (14, 99, null)", "23503"},
		{"insert into hc values (14, 3, 5)", "23503"},
		{"insert into hs values (22, 99)", "23503"},
		{"select error('left: ' || string_agg(table_name, ',')) from duckdb_tables() where table_name like 'qf_hidden%' having count(*) > 0", ""},
		{"select error('keys: ' || count(*)) from duckdb_constraints() where constraint_type = 'FOREIGN KEY' having count(*) <> 4", ""},
		// an index of its own: hidden too, not created again (the same table_oid), the index kept
		{"create index hs_pid on hs (pid)", ""},
		{"create table hs_was as select table_oid from duckdb_tables() where table_name = 'hs'", ""},
		{"delete from hp where id = 3", ""},
		{"select error('cascade with an index') from hc where pid = 3", ""},
		{"delete from hp where id = 7", ""},
		{"select error('set null with an index') from hs where pid is not null", ""},
		{"select error('created again') from duckdb_tables() t, hs_was w where t.table_name = 'hs' and t.table_oid <> w.table_oid", ""},
		{"select error('index: ' || count(*)) from duckdb_indexes() where index_name = 'hs_pid' having count(*) <> 1", ""},
		{"insert into hs values (23, 99)", "23503"},
		{"delete from hq where id = 1", ""}, // hc's rows referencing it went with their parents
	})
}

// BenchmarkCascadeDelete: a PostgreSQL client's DELETE of one parent row whose ON DELETE
// CASCADE child table holds 100,000 rows (100 of them the parent's), outside a transaction;
// the child without an index of its own, with one on a text column, with one on its key column
// (Django's and Rails').
func BenchmarkCascadeDelete(b *testing.B) {
	for _, index := range []string{"", "x", "pid"} {
		indexed := index != ""
		name := fmt.Sprintf("index=%v", indexed)
		if index == "pid" {
			name = "index=key"
		}
		b.Run(name, func(b *testing.B) {
			e, err := Open(engine.Spec{Name: "duck", Kind: Kind, Endpoint: ":memory:"})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			exec := func(sql string) {
				rows, err := e.Execute(context.Background(), &query.Request{SQL: sql, Protocol: query.ProtocolPostgres})
				for err == nil {
					_, err = rows.Next(context.Background())
				}
				if rows != nil {
					_ = rows.Close()
				}
				if err != io.EOF {
					b.Fatalf("%s: %v", sql, err)
				}
			}
			exec("create table bp (id int primary key, n text)")
			exec("create table bc (id int primary key, pid int references bp on delete cascade, x text)")
			exec("insert into bp select i, 'n' || i from range(0, 1000) t(i)")
			exec("insert into bc select i, i % 1000, 'x' || i from range(0, 100000) t(i)")
			if indexed {
				exec("create index bc_" + index + " on bc (" + index + ")")
			}
			id := 0
			b.ResetTimer()
			for b.Loop() {
				if id == 1000 {
					b.Fatal("out of parents")
				}
				exec(fmt.Sprintf("delete from bp where id = %d", id))
				id++
			}
		})
	}
}
