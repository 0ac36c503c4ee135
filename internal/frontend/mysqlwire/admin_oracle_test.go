package mysqlwire

import (
	"context"
	"net"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// statisticsLine is MariaDB's COM_STATISTICS text (sql_parse.cc), as mariadb-admin status prints it.
var statisticsLine = regexp.MustCompile(`^Uptime: \d+  Threads: \d+  Questions: \d+  Slow queries: \d+  Opens: \d+  ` +
	`Open tables: \d+  Queries per second avg: \d+\.\d{3}\n$`)

// TestMariadbAdminThroughDuckDB: the real mariadb-admin's status, version, extended-status
// and processlist, and the mariadb CLI's status command, work through the proxy on the
// embedded DuckDB as against MariaDB: COM_STATISTICS answers MariaDB's line (it was 1047,
// "command 9 is not supported"), SHOW GLOBAL STATUS its rows (it was 1235 on DuckDB).
func TestMariadbAdminThroughDuckDB(t *testing.T) {
	admin, err := exec.LookPath("mariadb-admin")
	if err != nil {
		t.Skip("mariadb-admin not installed")
	}
	cli, _ := exec.LookPath("mariadb")
	host, port, _ := net.SplitHostPort(duckServer(t))
	sides := []struct{ name, port, user string }{{"MariaDB", "3306", "root"}, {"DuckDB", port, testUser}}
	run := func(side int, bin string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s := sides[side]
		all := append([]string{"-h", host, "-P", s.port, "--protocol=tcp", "--skip-ssl", "-u", s.user}, args...)
		out, err := exec.CommandContext(ctx, bin, all...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v on %s: %v\n%s", bin, args, s.name, err, out)
		}
		return string(out)
	}
	for side := range sides {
		name := sides[side].name
		if out := run(side, admin, "status"); !statisticsLine.MatchString(out) {
			t.Errorf("mariadb-admin status on %s: %q, not MariaDB's line", name, out)
		}
		out := run(side, admin, "version")
		if !strings.Contains(out, "\nUptime:\t\t\t") || !regexp.MustCompile(`\nThreads: \d+  Questions: \d+  `).MatchString(out) {
			t.Errorf("mariadb-admin version on %s: no Uptime or Threads line:\n%s", name, out)
		}
		out = run(side, admin, "extended-status")
		for _, v := range []string{"Uptime", "Threads_connected", "Questions", "Queries", "Connections"} {
			if !regexp.MustCompile(`\n\| ` + v + ` +\| \d+ +\|\n`).MatchString(out) {
				t.Errorf("mariadb-admin extended-status on %s: no %s row:\n%s", name, v, out)
			}
		}
		if out = run(side, admin, "processlist"); !strings.Contains(out, "| Id ") {
			t.Errorf("mariadb-admin processlist on %s:\n%s", name, out)
		}
		if cli != "" {
			if out = run(side, cli, "-e", "status"); !regexp.MustCompile(`\nUptime:\t+\S.*\n\nThreads: \d+  Questions: \d+  `).MatchString(out) {
				t.Errorf("the mariadb CLI's status on %s: no Uptime or Threads line:\n%s", name, out)
			}
		}
	}
}

// TestShowStatusCountsOnDuckDB: SHOW [GLOBAL|SESSION] STATUS answers the worker's own counts:
// Threads_connected the sessions logged in, Questions the statements sent (the session's own
// in SESSION scope, every session's in GLOBAL), Connections the logins; LIKE and WHERE filter
// them as on MariaDB, whose columns they have.
func TestShowStatusCountsOnDuckDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	conns := oneConnEach(t, maria, duck)
	other := oneConnEach(t, maria, duck)[1]
	ctx := context.Background()
	value := func(c querier, q string) int64 {
		t.Helper()
		rows, err := c.QueryContext(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		if cols, _ := rows.Columns(); !slices.Equal(cols, []string{"Variable_name", "Value"}) {
			t.Fatalf("%s: columns %v", q, cols)
		}
		if !rows.Next() {
			t.Fatalf("%s: no row", q)
		}
		var name, v string
		if err := rows.Scan(&name, &v); err != nil {
			t.Fatal(err)
		}
		if rows.Next() {
			t.Fatalf("%s: more than one row", q)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("%s: %s = %q", q, name, v)
		}
		return n
	}
	if _, err := other.ExecContext(ctx, "SELECT 1"); err != nil { // its session is registered once it has answered
		t.Fatal(err)
	}
	if n := value(conns[1], "SHOW GLOBAL STATUS LIKE 'threads_connected'"); n != 2 {
		t.Errorf("Threads_connected with two sessions: %d", n)
	}
	if n := value(conns[1], "SHOW /*!50002 GLOBAL */ STATUS WHERE Variable_name = 'Connections'"); n < 2 {
		t.Errorf("Connections after two logins: %d", n)
	}
	for i, c := range conns {
		before := value(c, "SHOW STATUS LIKE 'Questions'")
		global := value(c, "SHOW GLOBAL STATUS LIKE 'Questions'")
		if _, err := other.ExecContext(ctx, "SELECT 1"); err != nil && i == 1 {
			t.Fatal(err)
		}
		if _, err := c.ExecContext(ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
		if n := value(c, "SHOW SESSION STATUS LIKE 'Questions'"); n != before+3 {
			t.Errorf("side %d: session Questions %d after %d and two statements", i, n, before)
		}
		if n := value(c, "SHOW GLOBAL STATUS WHERE variable_name IN ('Questions')"); i == 1 && n != global+4 {
			t.Errorf("global Questions %d after %d and three statements here, one on another session (and the SHOW itself)", n, global)
		}
	}
	if u := value(conns[1], "SHOW STATUS LIKE 'Upti_e'"); u < 0 || u > int64(time.Since(processStart)/time.Second)+1 {
		t.Errorf("Uptime %d", u)
	}
}

// TestAdminShowsOnDuckDBAsMariaDB: SHOW ENGINES (InnoDB, the default: XA NO, the proxy refuses
// XA), SHOW CREATE DATABASE (1049 for one not there) and, DuckDB having no triggers, routines or
// events, SHOW TRIGGERS, SHOW {PROCEDURE|FUNCTION} STATUS and SHOW EVENTS empty with MariaDB's
// columns, as MariaDB answers them on a new database (all were 1235 on DuckDB).
func TestAdminShowsOnDuckDBAsMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	conns := oneConnEach(t, maria, duck)
	innoDB := regexp.MustCompile(`Engine="InnoDB" [^|]*\| `)
	engines := innoDB.FindString(dumpRows(t, conns[0], "SHOW ENGINES"))
	if got, want := dumpRows(t, conns[1], "show storage engines;"), strings.Replace(engines, `XA="YES"`, `XA="NO"`, 1); got != want {
		t.Errorf("SHOW ENGINES:\n MariaDB %s\n DuckDB  %s", want, got)
	}
	var names [2]string
	for i, c := range conns {
		if err := c.QueryRowContext(context.Background(), "SELECT DATABASE()").Scan(&names[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{"SHOW CREATE DATABASE `%s`", "show create schema if not exists %s"} {
		var got [2]string
		for i, c := range conns {
			got[i] = strings.ReplaceAll(dumpRows(t, c, strings.ReplaceAll(q, "%s", names[i])), names[i], "db")
		}
		if got[0] != got[1] {
			t.Errorf("%s:\n MariaDB %s\n DuckDB  %s", q, got[0], got[1])
		}
	}
	compareSteps(t, conns[0], conns[1], []string{
		"exec SHOW CREATE DATABASE myadmin_no_such_db",
		"SHOW TRIGGERS", "SHOW TRIGGERS LIKE 't%'", "SHOW EVENTS",
		"SHOW PROCEDURE STATUS WHERE Db = DATABASE()", "SHOW FUNCTION STATUS WHERE Db = DATABASE() AND Name LIKE 'f%'",
		"exec SHOW EVENTS WHERE no_such_column = 1",
	})
	for _, q := range []string{"SHOW TRIGGERS", "SHOW EVENTS", "SHOW PROCEDURE STATUS WHERE Db = DATABASE()", "SHOW FUNCTION STATUS LIKE 'x'"} {
		var cols [2][]string
		for i, c := range conns {
			rows, err := c.QueryContext(context.Background(), q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			cols[i], _ = rows.Columns()
			if rows.Next() {
				t.Errorf("%s: a row on side %d", q, i)
			}
			rows.Close()
		}
		if !slices.Equal(cols[0], cols[1]) {
			t.Errorf("%s's columns:\n MariaDB %v\n DuckDB  %v", q, cols[0], cols[1])
		}
	}
}
