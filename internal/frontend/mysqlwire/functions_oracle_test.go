package mysqlwire

import (
	"database/sql"
	"math"
	"strconv"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/mytest"
)

// TestMySQLExpressionsLikeMariaDB: expressions a MySQL application selects answer through the
// proxy on the embedded DuckDB what MariaDB answers (go-sql-driver/mysql, text protocol): the
// value's text, or the same number where MariaDB writes a DECIMAL's scale (7/2 is 3.5000 there,
// 3.5 here; 42.8571 against 42.857142...), NULL where MariaDB's is.
func TestMySQLExpressionsLikeMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	for _, expr := range []string{
		"7/2", "-7/2", "100 * 3 / 7", "7/0", "7 DIV 2", "7.5 / 2", "7 /-2",
		"concat('a', null)", "concat('a', 1, 'b')", "concat(concat('x', 'y'), 'z')", "concat_ws(',', 'a', null, 'b')",
		"length('é')", "octet_length('é')", "char_length('é')", "length(12345)",
		"mid('hello', 2, 2)", "locate('l', 'hello')", "locate('l', 'hello', 4)", "locate('z', 'hello')",
		"find_in_set('b', 'a,b,c')", "find_in_set('z', 'a,b,c')", "sha2('abc', 256)",
		"rand() < 1", "current_timestamp() is not null", "current_date() = curdate()",
		"null <=> null", "1 <=> null", "1 <=> 1", "1 + 1 <=> 2 and 1 = 1",
	} {
		var m, d sql.NullString
		if err := maria.QueryRow("select " + expr).Scan(&m); err != nil {
			t.Fatalf("MariaDB: %s: %v", expr, err)
		}
		if err := duck.QueryRow("select " + expr).Scan(&d); err != nil {
			t.Errorf("DuckDB: %s: %v", expr, err)
			continue
		}
		if m != d && !sameNumber(m, d) {
			t.Errorf("%s: MariaDB %v, DuckDB %v", expr, m, d)
		}
	}
}

// sameNumber reports whether a and b are both numbers that agree to MariaDB's four decimals of
// a division (div_precision_increment).
func sameNumber(a, b sql.NullString) bool {
	x, errA := strconv.ParseFloat(a.String, 64)
	y, errB := strconv.ParseFloat(b.String, 64)
	return a.Valid && b.Valid && errA == nil && errB == nil && math.Abs(x-y) < 1e-4
}

// mariaAndDuck opens a new MariaDB database and the proxy on an embedded in-memory DuckDB, as
// the oracle tests compare them.
func mariaAndDuck(t *testing.T) (maria, duck *sql.DB) {
	dsn, _ := mytest.NewDatabase(t)
	maria, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { maria.Close() })
	eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return maria, openDB(t, serveCore(t, "duck", eng, coreSetup{}).addr, testUser, "", "duck", "")
}
