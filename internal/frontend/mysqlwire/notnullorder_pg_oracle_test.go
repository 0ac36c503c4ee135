package mysqlwire

import (
	"context"
	"strings"
	"testing"
)

// TestNotNullSortKeysOnPostgreSQL: a sort key that is a NOT NULL column (a primary key) goes to
// PostgreSQL without NULLS FIRST, so `ORDER BY id LIMIT 10` reads the primary key's index
// (EXPLAIN: an Index Scan, no Sort; with NULLS FIRST a Sort of the table); keys that can be
// NULL still sort as MariaDB sorts them, and a column whose NOT NULL a statement through the
// proxy dropped sorts its NULLs first again.
func TestNotNullSortKeysOnPostgreSQL(t *testing.T) {
	pg := openDB(t, pgCluster(t,
		"create table nk (id int primary key, a int, n int not null)",
		"insert into nk select i, case when i % 7 = 0 then null else i % 50 end, i % 13 from generate_series(1, 3000) i",
		"create index nk_n on nk (n)",
		"analyze nk").addr, testUser, "", "public", "")
	maria, _ := newMariaDB(t)
	for _, s := range []string{"create table nk (id int primary key, a int, n int not null, key (n))",
		"insert into nk select seq, if(seq % 7 = 0, null, seq % 50), seq % 13 from seq_1_to_3000"} {
		if _, err := maria.ExecContext(context.Background(), s); err != nil {
			t.Fatal(s, err)
		}
	}
	conns := oneConnEach(t, maria, pg)
	plan := func(q string) string { return dumpRows(t, conns[1], "explain "+q) }
	if p := plan("select id from nk order by id limit 10"); !strings.Contains(p, "Index") || strings.Contains(p, "Sort") {
		t.Errorf("ORDER BY id LIMIT 10: %s, want the primary key's index and no sort", p)
	}
	if p := plan("select id, n from nk x where n = 3 order by x.n desc, id limit 5"); strings.Contains(p, "Seq Scan") {
		t.Errorf("ORDER BY x.n DESC, id: %s, want an index", p)
	}
	if p := plan("select id from nk order by a limit 10"); !strings.Contains(p, "Sort") {
		t.Errorf("ORDER BY a (nullable) LIMIT 10: %s, want a sort (NULLS FIRST)", p)
	}
	for _, step := range []string{
		"select id, a from nk order by a, id limit 12",
		"select id from nk order by id desc limit 5",
		"select id, n from nk where id < 40 order by n desc, id limit 10",
		"select id, a from nk x order by x.a desc, x.id limit 5",
		"select a as id from nk order by id limit 3",
		"select id, n from nk order by n, id limit 4",
		"exec update nk set n = 99 where id in (1, 2)",
		"maria alter table nk modify n int null",
		"pg alter table nk alter column n drop not null",
		"exec update nk set n = null where id in (1, 2)",
		"select id, n from nk order by n, id limit 4",
		"select id, n from nk order by n desc, id desc limit 4",
	} {
		var got [2]string
		for i, c := range conns {
			s := step
			if side, stmt, ok := strings.Cut(step, " "); ok && (side == "maria" || side == "pg") {
				if (side == "maria") != (i == 0) {
					continue
				}
				s = "exec " + stmt
			}
			got[i] = stepAnswer(t, c, s)
		}
		if !strings.HasPrefix(step, "maria ") && !strings.HasPrefix(step, "pg ") && got[0] != got[1] {
			t.Errorf("%s:\n MariaDB    %s\n PostgreSQL %s", step, got[0], got[1])
		}
	}
}
