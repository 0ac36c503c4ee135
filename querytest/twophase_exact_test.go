package querytest

import (
	"context"
	"database/sql"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestPreparedTransactionsAndTwoPhaseTextThroughRealClients: pgx and psql read
// pg_prepared_xacts through the proxy as an empty view (the engine plans it with a false
// filter: its gids, owners and databases are not a client's), and pg_prepared_xact() is
// refused 42501; on MariaDB through Go's MySQL driver, a string that only holds XA RECOVER is
// a value (SET @q = 'XA RECOVER' then SELECT @q), while a stored procedure whose body runs XA
// RECOVER, which MariaDB would store and run, is refused with 1235 and not created.
func TestPreparedTransactionsAndTwoPhaseTextThroughRealClients(t *testing.T) {
	pgAddr, myAddr := startPostgresAndMariaDaemons(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("pgx", func(t *testing.T) {
		c, err := pgx.Connect(ctx, "postgres://queryflux@"+pgAddr+"/main?sslmode=disable")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		var plan []string
		rows, err := c.Query(ctx, "explain select gid, owner, database from pg_prepared_xacts where database = current_database()")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		if err := rows.Err(); err != nil || !strings.Contains(strings.Join(plan, "\n"), "One-Time Filter: false") {
			t.Fatalf("the engine's plan of pg_prepared_xacts through the proxy (%v):\n%s\nwant it filtered to nothing", err, strings.Join(plan, "\n"))
		}
		var n int
		if err := c.QueryRow(ctx, "select count(*) from pg_catalog.pg_prepared_xacts").Scan(&n); err != nil || n != 0 {
			t.Fatalf("count of pg_prepared_xacts: %d %v", n, err)
		}
		_, err = c.Exec(ctx, "select * from pg_prepared_xact()")
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" || !strings.Contains(pe.Message, "pg_prepared_xact") {
			t.Fatalf("pg_prepared_xact(): %v, want 42501 naming it", err)
		}
	})
	t.Run("psql", func(t *testing.T) {
		h, p := hostPort(t, pgAddr)
		out, _ := exec.Command("psql", "-X", "-h", h, "-p", p, "-U", "queryflux", "main", "-At",
			"-c", "explain select * from pg_prepared_xacts", "-c", "table pg_prepared_xacts", "-c", "select 41+1").CombinedOutput()
		if s := string(out); !strings.Contains(s, "One-Time Filter: false") || strings.Contains(s, "ERROR") || !strings.HasSuffix(s, "\n42\n") {
			t.Fatalf("psql:\n%s\nwant pg_prepared_xacts planned as empty, TABLE pg_prepared_xacts empty, then 42", s)
		}
	})
	t.Run("go-sql-driver", func(t *testing.T) {
		db, err := sql.Open("mysql", "queryflux@tcp("+myAddr+")/")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "SET @q = 'XA RECOVER'"); err != nil {
			t.Fatalf("SET @q = 'XA RECOVER': %v", err)
		}
		var q string
		if err := conn.QueryRowContext(ctx, "select @q").Scan(&q); err != nil || q != "XA RECOVER" {
			t.Fatalf("select @q: %q %v", q, err)
		}
		for _, sql := range []string{"create procedure qf_rt_p() begin xa recover; end", "begin not atomic xa recover; end",
			"create procedure qf_rt_p2() xa recover"} {
			_, err := conn.ExecContext(ctx, sql)
			var me *gomysql.MySQLError
			if !errors.As(err, &me) || me.Number != 1235 || !strings.Contains(me.Message, "XA RECOVER") {
				t.Errorf("%q: %v, want 1235 naming XA RECOVER", sql, err)
			}
		}
		var n int
		if err := conn.QueryRowContext(ctx, "select count(*) from information_schema.routines where routine_name in ('qf_rt_p', 'qf_rt_p2')").Scan(&n); err != nil || n != 0 {
			t.Fatalf("procedures qf_rt_p on the engine: %d %v", n, err)
		}
	})
}
