package mysqlwire

import (
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/mytest"
)

// TestLatin1ClientOnDuckDBAndPostgreSQLAsMariaDB: a latin1 client (go-sql-driver
// charset=latin1) writes and reads é, € (0x80) and ÿ through the embedded DuckDB and a
// PostgreSQL engine, by text and prepared statements, in and out of a transaction, in WHERE,
// LIKE, CONCAT and UPPER, and reads back its own bytes, as from MariaDB (a utf8mb4 table); a
// utf8mb4 client then reads the same text in UTF-8. Before, the client's latin1 bytes reached
// the engine unconverted (not UTF-8: DuckDB refused them, PostgreSQL too) and UTF-8 came back.
func TestLatin1ClientOnDuckDBAndPostgreSQLAsMariaDB(t *testing.T) {
	latin1 := []argStatement{
		{"INSERT INTO l1 VALUES (1, 'h\xe9llo \x80\xff')", nil},
		{"INSERT INTO l1 VALUES (?, ?)", []any{2, "\xe9t\xe9"}},
		{"SELECT v FROM l1 ORDER BY id", nil},
		{"SELECT id FROM l1 WHERE v = ?", []any{"\xe9t\xe9"}},
		{"SELECT id, CONCAT(v, '\xe0') FROM l1 WHERE v LIKE 'h\xe9%'", nil},
		{"SELECT UPPER(v) FROM l1 WHERE id = ?", []any{2}},
		{"START TRANSACTION", nil},
		{"INSERT INTO l1 VALUES (?, ?)", []any{3, "\xe7a"}},
		{"UPDATE l1 SET v = 'na\xefve' WHERE id = 1", nil},
		{"SELECT v FROM l1 WHERE v = 'na\xefve'", nil},
		{"COMMIT", nil},
		{"SELECT id, v FROM l1 ORDER BY id", nil},
	}
	utf8 := []argStatement{{"SELECT id, v FROM l1 ORDER BY id", nil}}
	run := func(addr, user, password, db string) []string {
		l := openDB(t, addr, user, password, db, "charset=latin1")
		u := openDB(t, addr, user, password, db, "charset=utf8mb4")
		return append(argAnswers(t, l, latin1), argAnswers(t, u, utf8)...)
	}
	const create = "CREATE TABLE l1 (id INT PRIMARY KEY, v VARCHAR(20))"
	dsn, name := mytest.NewDatabase(t)
	maria, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openDB(t, maria.Addr, maria.User, maria.Passwd, name, "").Exec(create + " CHARACTER SET utf8mb4"); err != nil {
		t.Fatal(err)
	}
	want := run(maria.Addr, maria.User, maria.Passwd, name)

	duck, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { duck.Close() })
	onDuck := serveCore(t, "duck", duck, coreSetup{})
	if _, err := openDB(t, onDuck.addr, testUser, "", "", "").Exec(create); err != nil {
		t.Fatal(err)
	}
	onPG := pgCluster(t, "CREATE TABLE l1 (id int PRIMARY KEY, v varchar(20))")
	for _, c := range []struct {
		name string
		got  []string
	}{{"DuckDB", run(onDuck.addr, testUser, "", "")}, {"PostgreSQL", run(onPG.addr, testUser, "", "")}} {
		for i := range want {
			if i >= len(c.got) || c.got[i] != want[i] {
				t.Errorf("%s, step %d:\n proxy   %q\n MariaDB %q", c.name, i, c.got[i], want[i])
			}
		}
	}
}
