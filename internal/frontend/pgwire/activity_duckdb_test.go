package pgwire_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestOwnSessionInPgStatActivityOnDuckDB: pg_stat_activity and pg_backend_pid() on the embedded
// DuckDB are the client's own session, as PostgreSQL shows it (psql users, monitoring queries
// and GUI tools' session views read them; DuckDB has neither and answered its catalog error):
// the row's pid is the BackendKeyData pid the client holds (what pg_cancel_backend takes), its
// user, application_name, database, state and statement the session's; the columns are
// PostgreSQL 15's; a join to pg_database by datid finds the database; the proxy shows no other
// session's row.
func TestOwnSessionInPgStatActivityOnDuckDB(t *testing.T) {
	pg := connect(t, pgtest.NewDatabase(t)+"&application_name=qf-activity")
	duck := connect(t, memoryDuckProxy(t, "activity").URL()+"&application_name=qf-activity")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, sql := range []string{
		`SELECT pid = pg_backend_pid() AS mine, usename = current_user AS me, application_name, state, query,
			backend_type, client_addr IS NOT NULL AS addr, datname = current_database() AS db, xact_start IS NULL AS nx,
			backend_start IS NOT NULL AND backend_start <= query_start AS started
			FROM pg_stat_activity WHERE pid = pg_backend_pid()`,
		`SELECT count(*), min(d.datname) = current_database() FROM pg_catalog.pg_stat_activity a
			JOIN pg_catalog.pg_database d ON d.oid = a.datid WHERE a.pid = pg_catalog.pg_backend_pid()`,
		`SELECT pg_stat_activity.state FROM pg_stat_activity WHERE pg_stat_activity.pid = pg_backend_pid()`,
	} {
		if want, got := rowsText(pg, sql), rowsText(duck, sql); want != got {
			t.Errorf("%s\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", sql, want, got)
		}
	}
	for _, c := range []*pgx.Conn{pg, duck} {
		var pid uint32
		if err := c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil || pid != c.PgConn().PID() {
			t.Errorf("pg_backend_pid() = %d (%v); the client's BackendKeyData pid is %d", pid, err, c.PgConn().PID())
		}
	}
	columns := func(c *pgx.Conn) []string {
		rows, err := c.Query(ctx, "SELECT * FROM pg_stat_activity WHERE pid = pg_backend_pid()")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var names []string
		for _, f := range rows.FieldDescriptions() {
			names = append(names, f.Name)
		}
		return names
	}
	if want, got := columns(pg), columns(duck); !slices.Equal(want, got) {
		t.Errorf("pg_stat_activity's columns:\n  PostgreSQL:          %v\n  QueryFlux on DuckDB: %v", want, got)
	}
	var n int
	if err := duck.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity").Scan(&n); err != nil || n != 1 {
		t.Errorf("pg_stat_activity through the proxy has %d rows (%v); want the session's own only", n, err)
	}
}
