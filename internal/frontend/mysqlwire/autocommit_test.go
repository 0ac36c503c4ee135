package mysqlwire

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net"
	"os/exec"
	"testing"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/query"
)

// acCount counts acct's rows as another client sees them (straight on MariaDB).
func acCount(t *testing.T, direct *sql.DB) (n int) {
	t.Helper()
	if err := direct.QueryRow("SELECT COUNT(*) FROM acct").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func acExec(t *testing.T, conn *sql.Conn, q string) {
	t.Helper()
	if _, err := conn.ExecContext(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func acInt(t *testing.T, conn *sql.Conn, q string) (n int) {
	t.Helper()
	if err := conn.QueryRowContext(context.Background(), q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// TestAutocommitOffThroughCore: a go-sql-driver client connecting with autocommit=0 (the
// driver sends SET autocommit=0 at connect) gets MySQL's implicit transactions through a
// real core with passthrough on: its statements see each other's uncommitted writes, another
// client does not, ROLLBACK undoes them, COMMIT, DDL and SET autocommit=1 commit them.
func TestAutocommitOffThroughCore(t *testing.T) {
	f := coreServer(t, coreSetup{})
	if _, err := f.direct.Exec("CREATE TABLE acct (id INT PRIMARY KEY) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	d := openDB(t, f.addr, "alice", testPassword, f.dbName, "autocommit=0")
	ctx := context.Background()
	conn, err := d.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if n := acInt(t, conn, "SELECT @@autocommit"); n != 0 {
		t.Fatalf("@@autocommit = %d after connecting with autocommit=0", n)
	}
	acExec(t, conn, "INSERT INTO acct VALUES (1)")
	if n := acInt(t, conn, "SELECT COUNT(*) FROM acct"); n != 1 {
		t.Fatalf("the transaction's own second statement sees %d rows, want 1", n)
	}
	if n := acCount(t, f.direct); n != 0 {
		t.Fatalf("another client sees %d uncommitted rows", n)
	}
	acExec(t, conn, "ROLLBACK")
	if n := acCount(t, f.direct); n != 0 {
		t.Fatalf("after ROLLBACK: %d rows", n)
	}
	acExec(t, conn, "INSERT INTO acct VALUES (2)")
	acExec(t, conn, "COMMIT")
	if n := acCount(t, f.direct); n != 1 {
		t.Fatalf("after COMMIT: %d rows, want 1", n)
	}
	acExec(t, conn, "INSERT INTO acct VALUES (3)")
	acExec(t, conn, "CREATE TABLE other (id INT)") // commits implicitly
	if n := acCount(t, f.direct); n != 2 {
		t.Fatalf("after DDL: %d rows, want 2", n)
	}
	acExec(t, conn, "INSERT INTO acct VALUES (4)")
	if n := acCount(t, f.direct); n != 2 {
		t.Fatalf("the transaction after DDL committed early: %d rows", n)
	}
	acExec(t, conn, "SET autocommit = 1") // commits the open transaction
	if n := acCount(t, f.direct); n != 3 {
		t.Fatalf("after SET autocommit=1: %d rows, want 3", n)
	}
	if n := acInt(t, conn, "SELECT @@autocommit"); n != 1 {
		t.Fatalf("@@autocommit = %d after SET autocommit=1", n)
	}
	acExec(t, conn, "INSERT INTO acct VALUES (5)")
	if n := acCount(t, f.direct); n != 4 {
		t.Fatalf("autocommit back on: %d rows, want 4", n)
	}
}

// TestAutocommitStatusFlags: the OK and EOF packets' SERVER_STATUS flags follow the session
// (go-mysql's client keeps them): autocommit on after the handshake, off after SET
// autocommit=0, in transaction from the first statement that writes a table to ROLLBACK. A prepared SET
// autocommit=0 is carried too.
func TestAutocommitStatusFlags(t *testing.T) {
	eng, directDSN, dbName := frontendtest.MariaDB(t)
	frontendtest.Exec(t, eng, "CREATE TABLE acct (id INT PRIMARY KEY) ENGINE=InnoDB")
	addr := startServer(t, frontendtest.NewBackend(eng), Options{})
	direct, err := sql.Open("mysql", directDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	c, err := client.Connect(addr, testUser, "", dbName)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	flags := func(step string, autocommit, inTx bool) {
		t.Helper()
		if c.IsAutoCommit() != autocommit || c.IsInTransaction() != inTx {
			t.Fatalf("%s: autocommit %v, in transaction %v; want %v, %v", step, c.IsAutoCommit(), c.IsInTransaction(), autocommit, inTx)
		}
	}
	flags("handshake", true, false)
	st, err := c.Prepare("SET autocommit = 0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Execute(); err != nil {
		t.Fatal(err)
	}
	flags("SET autocommit=0 (prepared)", false, false)
	steps := []struct {
		sql        string
		autocommit bool
		inTx       bool
	}{
		{"SELECT 1", false, false}, // EOF packet; no table read: no transaction, as on MariaDB
		{"INSERT INTO acct VALUES (1)", false, true},
		{"ROLLBACK", false, false},
		{"INSERT INTO acct VALUES (2)", false, true},
		{"SET autocommit = 1", true, false},
		{"SELECT 2", true, false},
	}
	for _, s := range steps {
		if _, err := c.Execute(s.sql); err != nil {
			t.Fatalf("%s: %v", s.sql, err)
		}
		flags(s.sql, s.autocommit, s.inTx)
	}
	ids := acctIDs(t, direct)
	if len(ids) != 1 || ids[0] != 2 {
		t.Fatalf("rows %v, want [2] (1 rolled back, 2 committed by SET autocommit=1)", ids)
	}
}

// unpinnable is a backend that cannot pin an engine connection (no engine.SessionOpener).
type unpinnable struct{ query.Backend }

// TestAutocommitOffRefusedWithoutSessions: a backend that cannot pin a connection refuses
// SET autocommit=0 clearly, and so a client connecting with it.
func TestAutocommitOffRefusedWithoutSessions(t *testing.T) {
	backend, dbName := mariaBackend(t)
	addr := startServer(t, unpinnable{backend}, Options{})
	d := openDB(t, addr, testUser, "", dbName, "")
	conn, err := d.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	requireSetRefused(t, conn, "SET autocommit = 0", "autocommit")
	if n := acInt(t, conn, "SELECT @@autocommit"); n != 1 {
		t.Fatalf("@@autocommit = %d after a refused SET autocommit=0", n)
	}
	err = openDB(t, addr, testUser, "", dbName, "autocommit=0").Ping()
	var me *gomysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1235 {
		t.Fatalf("connecting with autocommit=0: %v, want error 1235", err)
	}
}

// TestHandshakeReportsAutocommit: the server's first packet says autocommit is on. PyMySQL
// reads it there: finding it off, it would not send SET autocommit=0 and would take ROLLBACK
// for undoing statements autocommit had committed.
func TestHandshakeReportsAutocommit(t *testing.T) {
	backend, _ := mariaBackend(t)
	nc, err := net.Dial("tcp", startServer(t, backend, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	head := make([]byte, 4)
	if _, err := io.ReadFull(nc, head); err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 4+packetLen(head))
	copy(p, head)
	if _, err := io.ReadFull(nc, p[4:]); err != nil {
		t.Fatal(err)
	}
	nul := 5
	for p[nul] != 0 {
		nul++
	}
	at := nul + 1 + 4 + 8 + 1 + 2 + 1 // connection id, salt, filler, capabilities, charset
	if status := uint16(p[at]) | uint16(p[at+1])<<8; status&mysql.SERVER_STATUS_AUTOCOMMIT == 0 {
		t.Fatalf("handshake status %#x lacks SERVER_STATUS_AUTOCOMMIT", status)
	}
}

// TestPyMySQLDefaultAutocommitOff: PyMySQL, connecting with its default autocommit=False, gets
// a transaction its rollback() undoes and its commit() keeps (skipped without python3-pymysql).
func TestPyMySQLDefaultAutocommitOff(t *testing.T) {
	python := ""
	for _, p := range []string{"python3", "/usr/bin/python3"} { // pyenv's, Debian's python3-pymysql
		if exec.Command(p, "-c", "import pymysql").Run() == nil {
			python = p
			break
		}
	}
	if python == "" {
		t.Skip("python3 with pymysql not installed")
	}
	f := coreServer(t, coreSetup{})
	if _, err := f.direct.Exec("CREATE TABLE acct (id INT PRIMARY KEY) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(f.addr)
	script := `
import pymysql
c = pymysql.connect(host="` + host + `", port=` + port + `, user="alice", password="` + testPassword + `", database="` + f.dbName + `")
cur = c.cursor()
cur.execute("SELECT @@autocommit")
assert cur.fetchone()[0] == 0, "autocommit on"
cur.execute("INSERT INTO acct VALUES (1)")
c.rollback()
cur.execute("INSERT INTO acct VALUES (2)")
c.commit()
cur.execute("INSERT INTO acct VALUES (3)")
c.close()
`
	if out, err := exec.Command(python, "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	ids := acctIDs(t, f.direct)
	if len(ids) != 1 || ids[0] != 2 {
		t.Fatalf("rows %v, want [2] (1 rolled back, 3 never committed)", ids)
	}
}

// acctIDs reads the ids in table acct, directly from the engine.
func acctIDs(t *testing.T, db *sql.DB) []int {
	t.Helper()
	rows, err := db.Query("SELECT id FROM acct")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}
