package querytest

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestTwoPhaseCommitRefusedToRealClients: a prepared two-phase transaction outlives its client's
// connection on a shared engine user, where any other client of the proxy could finish it (XA
// RECOVER lists every session's), so the proxy refuses two-phase commit, as real clients see it:
// psql and pgx get 0A000 for PREPARE TRANSACTION / COMMIT PREPARED on a PostgreSQL engine, the
// mariadb client and PyMySQL get 1235 for XA on a MariaDB engine, and each connection goes on.
func TestTwoPhaseCommitRefusedToRealClients(t *testing.T) {
	pgAddr, myAddr := startPostgresAndMariaDaemons(t)

	t.Run("pgx", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, "postgres://queryflux@"+pgAddr+"/main?sslmode=disable")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		for _, sql := range []string{"PREPARE TRANSACTION 'qf_2pc'", "COMMIT PREPARED 'qf_2pc'", "ROLLBACK PREPARED 'qf_2pc'"} {
			if _, err := c.Exec(ctx, "begin"); err != nil {
				t.Fatal(err)
			}
			_, err := c.Exec(ctx, sql)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "0A000" || !strings.Contains(pe.Message, strings.Fields(sql)[0]) {
				t.Fatalf("%s: %v, want 0A000 naming it", sql, err)
			}
			if _, err := c.Exec(ctx, "rollback"); err != nil {
				t.Fatalf("rollback after the refused %s: %v", sql, err)
			}
			var n int
			if err := c.QueryRow(ctx, "select 41+1").Scan(&n); err != nil || n != 42 {
				t.Fatalf("the connection after the refused %s: %d %v", sql, n, err)
			}
		}
		var prepared int
		if err := c.QueryRow(ctx, "select count(*) from pg_prepared_xacts where gid = 'qf_2pc'").Scan(&prepared); err != nil || prepared != 0 {
			t.Fatalf("prepared transactions after the refusals: %d %v", prepared, err)
		}
	})
	t.Run("psql", func(t *testing.T) {
		h, p := hostPort(t, pgAddr)
		out, _ := exec.Command("psql", "-X", "-h", h, "-p", p, "-U", "queryflux", "main", "-At",
			"-c", "begin", "-c", "prepare transaction 'qf_psql'", "-c", "rollback", "-c", "select 41+1").CombinedOutput()
		if s := string(out); !strings.Contains(s, "ERROR:") || !strings.Contains(s, "PREPARE TRANSACTION") || !strings.Contains(s, "42") {
			t.Fatalf("psql:\n%s\nwant the refusal naming PREPARE TRANSACTION, then 42", s)
		}
	})
	t.Run("mariadb", func(t *testing.T) {
		h, p := hostPort(t, myAddr)
		cmd := exec.Command("mariadb", "--force", "-h", h, "-P", p, "-u", "queryflux", "-N", "-B")
		cmd.Stdin = strings.NewReader("XA START 'qf_xa';\nselect 41+1;\nXA RECOVER;\nselect 43+1;\n")
		out, _ := cmd.CombinedOutput()
		s := string(out)
		if strings.Count(s, "ERROR 1235 (42000)") != 2 || !strings.Contains(s, "XA START") || !strings.Contains(s, "42") || !strings.Contains(s, "44") {
			t.Fatalf("mariadb:\n%s\nwant XA START and XA RECOVER refused with 1235, the selects answered", s)
		}
	})
	t.Run("PyMySQL", func(t *testing.T) {
		python := frontendtest.PythonWith(t, "pymysql")
		h, p := hostPort(t, myAddr)
		const script = `import sys, pymysql as m
c = m.connect(host=sys.argv[1], port=int(sys.argv[2]), user="queryflux")
cur = c.cursor()
for sql in ["XA BEGIN 'qf_py'", "XA RECOVER", "XA COMMIT 'qf_py'"]:
    try:
        cur.execute(sql)
        print("ran", sql)
    except m.MySQLError as e:
        print("refused", e.args[0])
cur.execute("select 41+1")
print(cur.fetchone()[0])
`
		out, err := exec.Command(python, "-c", script, h, p).CombinedOutput()
		if s := string(out); err != nil || s != "refused 1235\nrefused 1235\nrefused 1235\n42\n" {
			t.Fatalf("PyMySQL: %v\n%s", err, s)
		}
	})
}

// startPostgresAndMariaDaemons starts two standalone daemons on databases of their own: a
// PostgreSQL frontend in front of real PostgreSQL and a MySQL frontend in front of real MariaDB.
// It returns their client addresses.
func startPostgresAndMariaDaemons(t *testing.T) (pgAddr, myAddr string) {
	dbURL := pgtest.NewDatabase(t)
	_, myDB := mytest.NewDatabase(t)
	addrs := daemontest.FreeAddrs(t, 4)
	pgAddr, pgAdmin, myAddr, myAdmin := addrs[0], addrs[1], addrs[2], addrs[3]
	startDaemon(t, nil, []string{pgAddr, pgAdmin}, "--config", pgStandalone(t, pgAdmin, pgAddr, "", dbURL, 4))
	startDaemon(t, nil, []string{myAddr, myAdmin}, "--config", daemontest.WriteFile(t, "my.yaml", mariaStandalone(myAdmin, myAddr, myDB)))
	return pgAddr, myAddr
}
