package mysqlwire

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/mytest"
)

// stmtRollbackTable is the table the statement-rollback scripts write.
const stmtRollbackTable = "create table sr (id int primary key, v varchar(5) not null)"

// stmtRollbackSteps is a session whose transactions each have failed statements in them (a
// duplicate key, a missing table, a value too long, a NULL, a parse error, a prepared
// statement refused at prepare), with statements after them, and the client's own savepoints
// around them; then what was committed. Steps as compareSteps reads them.
func stmtRollbackSteps() []string {
	steps := []string{
		"exec start transaction",
		"exec insert into sr values (1, 'a')",
		"exec insert into sr values (1, 'dup')",
		"exec insert into sr values (2, 'b')",
		"exec update sr set v = 'c' where id = 2",
		"exec insert into sr_nosuch values (1)",
		"exec insert into sr values (3, 'toolong')",
		"exec insert into sr values (3, null)",
		"exec selec 1",
		"exec insert into sr values (? + 1, ?) <- 0, dup",
		"exec select * from sr_nosuch where id = ? <- 1",
		"exec insert into sr values (4, 'd')",
		"exec delete from sr where id = 1",
		"exec insert into sr values (2, 'again')",
		"exec commit",
		"select id, v from sr order by id",

		// the client's savepoints, and a failure after each kind
		"exec begin",
		"exec insert into sr values (10, 'x')",
		"exec savepoint s1",
		"exec insert into sr values (11, 'y')",
		"exec insert into sr values (11, 'z')",
		"exec rollback to savepoint s1",
		"exec insert into sr values (12, 'w')",
		"exec savepoint s2",
		"exec insert into sr values (12, 'w')",
		"exec insert into sr values (13, 'v')",
		"exec release savepoint s1",
		"exec rollback to savepoint s1",
		"exec release savepoint s2",
		"exec insert into sr values (14, 'u')",
		"exec commit",
		"select id, v from sr where id >= 10 order by id",

		// a transaction rolled back after a failure keeps nothing
		"exec start transaction",
		"exec insert into sr values (20, 'p')",
		"exec insert into sr values (20, 'q')",
		"exec insert into sr values (21, 'r')",
		"exec rollback",
		"select count(*) from sr where id >= 20",

		// autocommit off: the implicit transaction goes on after a failure too
		"exec set autocommit = 0",
		"exec insert into sr values (30, 'p')",
		"exec insert into sr values (30, 'q')",
		"exec insert into sr values (31, 'r')",
		"exec commit",
		"exec insert into sr values (32, 's')",
		"exec insert into sr values (31, 's')",
		"exec rollback",
		"exec set autocommit = 1",
		"select id, v from sr where id >= 30 order by id",
	}
	// a long transaction, failures all along it: the proxy's savepoints outlast its chain
	steps = append(steps, "exec start transaction")
	for i := range 3*stmtSavepointChain + 5 {
		steps = append(steps, fmt.Sprintf("exec insert into sr values (%d, 'n')", 100+i))
		if i == 1 {
			steps = append(steps, "exec savepoint early") // outlives the proxy's chains
		}
		if i%7 == 3 {
			steps = append(steps, fmt.Sprintf("exec insert into sr values (%d, 'dup')", 100+i))
		}
	}
	steps = append(steps, "exec savepoint late", fmt.Sprintf("exec insert into sr values (%d, 'n')", 99), "exec insert into sr values (99, 'n')",
		"exec rollback to late", "exec insert into sr values (98, 'n')", "exec release savepoint early", "exec commit",
		"select count(*), min(id), max(id) from sr where id >= 98")
	return steps
}

// TestFailedStatementKeepsTheTransactionAsMariaDB: on a PostgreSQL engine, a statement that
// fails inside a transaction is undone alone and the transaction goes on, as on MariaDB: the
// statements after it run, COMMIT commits them, the client's savepoints keep their meaning.
// Before: PostgreSQL aborted the transaction, every later statement answered 1105 (25P02) and
// COMMIT committed nothing. Compared with MariaDB's answers to the same statements on one
// go-sql-driver connection each; the proxy's own statements are counted from the history.
func TestFailedStatementKeepsTheTransactionAsMariaDB(t *testing.T) {
	dsn, _ := mytest.NewDatabase(t)
	maria, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { maria.Close() })
	f := pgCluster(t)
	pg := openDB(t, f.addr, testUser, "", "", "")
	conns := oneConnEach(t, maria, pg)
	ctx := context.Background()
	for _, c := range conns {
		if _, err := c.ExecContext(ctx, stmtRollbackTable); err != nil {
			t.Fatal(err)
		}
	}
	steps := stmtRollbackSteps()
	compareSteps(t, conns[0], conns[1], steps)

	// Round trips of the proxy's own, from the history: one SAVEPOINT per statement in a
	// transaction, a ROLLBACK TO per failure, a RELEASE per chain.
	count := func(prefix string) int {
		n := 0
		for _, name := range []string{stmtSavepointFirst, stmtSavepointNext} {
			n += len(f.hist.Find(prefix + name))
		}
		return n
	}
	inTx, failed := 0, 0
	for _, s := range steps {
		if strings.HasPrefix(s, "exec ") {
			inTx++
		}
		if strings.Contains(s, "'dup'") || strings.Contains(s, "nosuch") {
			failed++
		}
	}
	t.Logf("%d steps: %d SAVEPOINT, %d ROLLBACK TO, %d RELEASE", len(steps), count("SAVEPOINT "), count("ROLLBACK TO SAVEPOINT "), count("RELEASE SAVEPOINT "))
	if n := count("SAVEPOINT "); n == 0 || n > inTx {
		t.Errorf("%d savepoints taken for %d statements", n, inTx)
	}
	if n := count("ROLLBACK TO SAVEPOINT "); n < failed {
		t.Errorf("%d rollbacks to a savepoint for at least %d failed statements", n, failed)
	}
	// the long transaction's chains (3), and one before each of the client's 4 savepoints
	if n := len(f.hist.Find("RELEASE SAVEPOINT " + stmtSavepointFirst)); n < 3+4 {
		t.Errorf("%d chains released, want at least 7: PostgreSQL keeps every savepoint of the transaction open", n)
	}
}

// TestAutocommitStatementsTakeNoSavepoint: outside a transaction a statement on PostgreSQL is
// sent alone, as before (no savepoint, no round trip more), failing or not.
func TestAutocommitStatementsTakeNoSavepoint(t *testing.T) {
	f := pgCluster(t, stmtRollbackTable)
	c := oneConn(t, openDB(t, f.addr, testUser, "", "", ""))
	ctx := context.Background()
	for _, s := range []string{"insert into sr values (1, 'a')", "insert into sr values (1, 'a')", "select * from sr", "select * from sr_nosuch"} {
		_, _ = c.ExecContext(ctx, s)
	}
	for _, name := range []string{stmtSavepointFirst, stmtSavepointNext} {
		if n := len(f.hist.Find("SAVEPOINT " + name)); n != 0 {
			t.Errorf("%d savepoints %s outside a transaction", n, name)
		}
	}
}

// TestMariaDBCLIFailedStatementInTransaction: the mariadb CLI runs one script (--force: on
// after an error) against MariaDB and through the proxy on PostgreSQL; its output, the
// errors' numbers and the rows committed, is MariaDB's.
func TestMariaDBCLIFailedStatementInTransaction(t *testing.T) {
	cli, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skip("mariadb CLI not installed")
	}
	_, name := mytest.NewDatabase(t)
	f := pgCluster(t)
	script := stmtRollbackTable + ";\n" + `start transaction;
insert into sr values (1, 'a');
insert into sr values (1, 'b');
insert into sr values (2, 'toolong');
select * from sr_nosuch;
insert into sr values (2, 'b');
savepoint s1;
insert into sr values (3, 'c');
rollback to savepoint s1;
rollback to savepoint s9;
insert into sr values (4, 'd');
commit;
select id, v from sr order by id;
`
	run := func(args ...string) string {
		cmd := exec.Command(cli, append([]string{"--protocol=tcp", "--skip-ssl", "--force", "-N", "-B"}, args...)...)
		cmd.Stdin = strings.NewReader(script)
		out, _ := cmd.CombinedOutput()
		// the errors' numbers and lines; their words are the engine's
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if i := strings.Index(l, ") at line "); strings.HasPrefix(l, "ERROR ") && i > 0 {
				line, _, _ := strings.Cut(l[i+len(") at line "):], ":")
				l = l[:strings.Index(l, " (")] + " at line " + line
			}
			lines = append(lines, l)
		}
		return strings.Join(lines, "\n")
	}
	host, port, _ := net.SplitHostPort(f.addr)
	want := run("-h", "127.0.0.1", "-P", "3306", "-u", "root", name)
	got := run("-h", host, "-P", port, "-u", testUser)
	if got != want {
		t.Errorf("mariadb CLI through the proxy on PostgreSQL:\n%s\nMariaDB:\n%s", got, want)
	}
}
