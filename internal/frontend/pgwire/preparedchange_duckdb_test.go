package pgwire_test

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/testlong"
)

// TestPreparedStatementsFollowChangesOnDuckDBAsPostgreSQL: a statement psycopg 3 or JDBC keeps prepared
// (Bind/Execute again, no new Parse or Describe) answers on DuckDB as on PostgreSQL 15 after
// what it reads changed in between (testdata/clients/prepared_change.py, PreparedChange.java):
// an ALTER of its table (a column added, dropped, retyped), its table dropped and made again
// (inside a transaction too), a view replaced or dropped, a SET, and DDL between a Describe
// and the first Execute. PostgreSQL refuses to run a kept plan whose result columns changed
// (0A000, "cached plan must not change result type"; pgjdbc then prepares it again by
// itself), and a statement prepared again reads the new columns. Before, DuckDB answered the
// new columns to a statement whose old ones the client kept: JDBC read rows of three columns
// by a description of two.
func TestPreparedStatementsFollowChangesOnDuckDBAsPostgreSQL(t *testing.T) {
	script := func(dsn string) string {
		out, err := pgclienttest.Command(t, time.Minute, nil, "/usr/bin/python3", "prepared_change.py", dsn, "t_prepared_change")
		if err != nil {
			t.Fatalf("prepared_change.py: %v\n%s", err, out)
		}
		return out
	}
	classpath := pgclienttest.JDBCClasspath(t, "PreparedChange.java")
	java := func(url string) string {
		out, err := pgclienttest.Command(t, 2*time.Minute, nil, "java", "-cp", classpath, "PreparedChange", url, "t_prepared_change_j")
		if err != nil {
			t.Fatalf("java PreparedChange: %v\n%s", err, out)
		}
		return out
	}
	pg := pgtest.NewDatabase(t)
	u, err := url.Parse(pg)
	if err != nil {
		t.Fatal(err)
	}
	want := script(pg)
	wantJDBC := java(fmt.Sprintf("jdbc:postgresql://%s%s?user=%s", u.Host, u.Path, u.User.Username()))
	for i, mode := range poolModes {
		if !testlong.Sample(i, 2) { // session mode pins one connection: the kept statement's own
			continue
		}
		t.Run(mode, func(t *testing.T) {
			d := duckProxy(t, mode)
			if got := script(d.Keywords()); got != want {
				t.Errorf("psycopg 3's prepared statements differ.\nPostgreSQL:\n%s\nDuckDB:\n%s", want, got)
			}
			if got := java(d.JDBC()); got != wantJDBC {
				t.Errorf("JDBC's prepared statements differ.\nPostgreSQL:\n%s\nDuckDB:\n%s", wantJDBC, got)
			}
		})
	}
}
