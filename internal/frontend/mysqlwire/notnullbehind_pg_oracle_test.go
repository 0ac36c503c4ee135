package mysqlwire

import (
	"context"
	"strings"
	"testing"
)

// TestNotNullDroppedBehindTheProxyOnPostgreSQL: a column made nullable directly on PostgreSQL
// (not through the proxy, which would drop its cache) sorts its NULLs as MariaDB sorts them the
// next time a statement sorts by it: outside a transaction (the text protocol's statement run
// once, and again as the hot path's prepared one), and as a transaction's first sort of the table.
func TestNotNullDroppedBehindTheProxyOnPostgreSQL(t *testing.T) {
	ddl := []string{"create table nb (id int primary key, a int, n int not null, m int not null)",
		"create index nb_n on nb (n)"}
	f, pool := pgClusterPool(t, append(ddl, "insert into nb select i, i % 5, i % 13, i % 7 from generate_series(1, 300) i")...)
	pg := openDB(t, f.addr, testUser, "", "public", "")
	maria, _ := newMariaDB(t)
	for _, s := range append(ddl[:1], "create index nb_n on nb (n)", "insert into nb select seq, seq % 5, seq % 13, seq % 7 from seq_1_to_300") {
		if _, err := maria.ExecContext(context.Background(), s); err != nil {
			t.Fatal(s, err)
		}
	}
	conns := oneConnEach(t, maria, pg)
	for _, step := range []string{
		"select id, n from nb order by n, id limit 4",
		"select id, n from nb order by n, id limit 4",
		"select id, n from nb where a < 3 order by n desc, id limit 4",
		"select id, m from nb order by m, id limit 3",
		"select id, n from nb where id < ? order by n, id limit 4 <- 100",
		"maria alter table nb modify n int null",
		"pg alter table nb alter column n drop not null",
		"exec update nb set n = null where id in (1, 2, 3)",
		"select id, n from nb order by n, id limit 4",
		"select id, n from nb order by n, id limit 4",
		"select id, n from nb where id < ? order by n, id limit 4 <- 100",
		"select id, n from nb where a < 3 order by n desc, id desc limit 4",
		"select id from nb order by id limit 3",
		"maria alter table nb modify m int null",
		"pg alter table nb alter column m drop not null",
		"exec update nb set m = null where id = 4",
		"exec begin",
		"select id, m from nb order by m, id limit 3",
		"select id, m from nb where id < 10 order by m desc, id limit 3",
		"exec commit",
		"select id, m from nb order by m, id limit 3",
	} {
		var got [2]string
		side, stmt, _ := strings.Cut(step, " ")
		for i, c := range conns {
			switch {
			case side == "maria" && i == 0:
				got[i] = stepAnswer(t, c, "exec "+stmt)
			case side == "pg" && i == 1:
				if _, err := pool.Exec(context.Background(), stmt); err != nil {
					t.Fatal(stmt, err)
				}
			case strings.Contains(step, " <- ") && side == "select": // a prepared statement's: its columns described ahead
				q, args := stepArgs(step)
				got[i] = dumpRows(t, c, q, args...)
			case side != "maria" && side != "pg":
				got[i] = stepAnswer(t, c, step)
			}
		}
		if side != "maria" && side != "pg" && got[0] != got[1] {
			t.Errorf("%s:\n MariaDB    %s\n PostgreSQL %s", step, got[0], got[1])
		}
	}
	if p := dumpRows(t, conns[1], "explain select id from nb order by id limit 10"); !strings.Contains(p, "using nb_pkey on nb") || strings.Contains(p, "Sort") {
		t.Errorf("ORDER BY id LIMIT 10 with its check: %s, want the primary key's index and no sort", p)
	}
}
