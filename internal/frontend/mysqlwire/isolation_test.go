package mysqlwire

import (
	"context"
	"database/sql"
	"testing"
)

func localIsolation(t *testing.T, conn *sql.Conn) string {
	t.Helper()
	var level string
	if err := conn.QueryRowContext(context.Background(), "SELECT @@tx_isolation").Scan(&level); err != nil {
		t.Fatalf("SELECT @@tx_isolation: %v", err)
	}
	return level
}

// engineIsolation is the engine connection's session level, read from the engine's catalog
// (@@tx_isolation in any statement is the frontend's answer: the client session's level).
// (MariaDB's tx_isolation is the session's level, not SET TRANSACTION's, which lasts the next
// transaction only and shows in no variable: the test reads the levels from what
// transactions see.)
func engineIsolation(t *testing.T, conn *sql.Conn) string {
	t.Helper()
	var level string
	const q = "SELECT VARIABLE_VALUE FROM information_schema.SESSION_VARIABLES WHERE VARIABLE_NAME = 'TX_ISOLATION'"
	if err := conn.QueryRowContext(context.Background(), q).Scan(&level); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return level
}

func isoConn(t *testing.T, d *sql.DB) *sql.Conn {
	t.Helper()
	conn, err := d.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func isoCount(t *testing.T, conn *sql.Conn) int { return acInt(t, conn, "SELECT COUNT(*) FROM iso") }

func directExec(t *testing.T, db interface {
	Exec(string, ...any) (sql.Result, error)
}, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestSessionIsolationThroughCore: through a real core and MariaDB, SET SESSION TRANSACTION
// ISOLATION LEVEL READ COMMITTED (Django's connect statement) is carried: the client's
// explicit transaction sees rows committed meanwhile, another client's (REPEATABLE READ,
// MariaDB's default) does not; an implicit transaction (autocommit=0) at READ UNCOMMITTED
// sees another's uncommitted row; back at REPEATABLE READ nothing committed meanwhile shows.
// Statements outside a transaction keep the engine's default; GLOBAL stays refused.
func TestSessionIsolationThroughCore(t *testing.T) {
	f := coreServer(t, coreSetup{})
	directExec(t, f.direct, "CREATE TABLE iso (id INT PRIMARY KEY) ENGINE=InnoDB")
	d := openDB(t, f.addr, "alice", testPassword, f.dbName, "")
	conn, other := isoConn(t, d), isoConn(t, d)
	acExec(t, conn, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
	if got := localIsolation(t, conn); got != "READ-COMMITTED" {
		t.Fatalf("@@tx_isolation answered %q after SET SESSION, want READ-COMMITTED", got)
	}
	acExec(t, conn, "BEGIN")
	acExec(t, other, "START TRANSACTION")
	if isoCount(t, conn) != 0 || isoCount(t, other) != 0 { // both take their first read view
		t.Fatal("iso is not empty")
	}
	directExec(t, f.direct, "INSERT INTO iso VALUES (1)")
	if n := isoCount(t, conn); n != 1 {
		t.Fatalf("the READ COMMITTED transaction sees %d rows committed meanwhile, want 1", n)
	}
	if n := isoCount(t, other); n != 0 {
		t.Fatalf("another client's transaction sees %d rows committed meanwhile, want 0 (REPEATABLE READ)", n)
	}
	acExec(t, conn, "COMMIT")
	acExec(t, other, "COMMIT")
	if got := engineIsolation(t, conn); got != "REPEATABLE-READ" {
		t.Fatalf("a statement outside a transaction runs at %q, want the engine's default", got)
	}

	acExec(t, conn, "SET @@session.tx_isolation = 'READ-UNCOMMITTED'")
	acExec(t, conn, "SET autocommit = 0")
	writer, err := f.direct.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Rollback()
	directExec(t, writer, "INSERT INTO iso VALUES (2)")
	if n := isoCount(t, conn); n != 2 {
		t.Fatalf("the implicit READ UNCOMMITTED transaction sees %d rows, want 2 (one uncommitted)", n)
	}
	writer.Rollback()
	acExec(t, conn, "ROLLBACK")
	acExec(t, conn, "SET autocommit = 1")

	acExec(t, conn, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
	acExec(t, conn, "BEGIN")
	isoCount(t, conn)
	directExec(t, f.direct, "INSERT INTO iso VALUES (3)")
	if n := isoCount(t, conn); n != 1 {
		t.Fatalf("back at REPEATABLE READ the transaction sees %d rows, want 1", n)
	}
	acExec(t, conn, "COMMIT")
	requireSetRefused(t, conn, "SET GLOBAL TRANSACTION ISOLATION LEVEL READ COMMITTED", "GLOBAL transaction")
	requireSetRefused(t, conn, "SET TRANSACTION ISOLATION LEVEL READ COMMITTED", "transaction")
}
