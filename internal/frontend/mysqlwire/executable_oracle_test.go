package mysqlwire

import (
	"database/sql"
	"testing"
)

// TestExecutableCommentsLikeMariaDB: MySQL's executable comments (/*! ... */, /*!NNNNN ... */),
// which mysqldump writes around its session settings, run through the proxy on the embedded
// DuckDB as MariaDB runs them, in a query and in a prepared statement: the body when the
// version is the server's or older, nothing when newer (11.0.0 is newer than both servers).
// They were comments to DuckDB: /*!40101 SET NAMES utf8mb4 */ failed as an empty query.
func TestExecutableCommentsLikeMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	for _, db := range []*sql.DB{maria, duck} {
		if _, err := db.Exec("/*!40101 SET NAMES utf8mb4 */"); err != nil {
			t.Fatalf("/*!40101 SET NAMES utf8mb4 */: %v", err)
		}
	}
	for _, q := range []string{
		"select /*!32302 10 + */ 1", "select /*! 10 + */ 1", "select /*!110000 10 + */ 1", "select 1 /*!40001 + 2 */ /* + 3 */",
		"select concat('/*!32302 10 + */' /*!40100 , 'x' */)", "select 1 -- /*!40100 + 1 */",
	} {
		var m, d sql.NullString
		if err := maria.QueryRow(q).Scan(&m); err != nil {
			t.Fatalf("MariaDB: %s: %v", q, err)
		}
		if err := duck.QueryRow(q).Scan(&d); err != nil {
			t.Errorf("DuckDB: %s: %v", q, err)
			continue
		}
		if m != d {
			t.Errorf("%s: MariaDB %v, DuckDB %v", q, m, d)
		}
	}
	var m, d int
	const prepared = "select /*!32302 10 + */ ? /*!110000 + 5 */"
	if err := maria.QueryRow(prepared, 1).Scan(&m); err != nil {
		t.Fatalf("MariaDB: %s: %v", prepared, err)
	}
	if err := duck.QueryRow(prepared, 1).Scan(&d); err != nil || d != m {
		t.Errorf("%s: MariaDB %d, DuckDB %d (%v)", prepared, m, d, err)
	}
}
