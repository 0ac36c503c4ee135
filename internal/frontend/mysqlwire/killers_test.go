package mysqlwire

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/node/proxy"
)

// TestClientCannotKillAnotherClientsEngineSession: every client of a MariaDB cluster reaches
// it as the same engine user, and MariaDB lets a user KILL its own threads. Bob reads the
// engine thread of Alice's running statement (SHOW PROCESSLIST reaches the engine) and sends
// KILL in every form that would otherwise reach MariaDB: after a comment, HARD/SOFT, QUERY ID,
// USER, in EXECUTE IMMEDIATE, in an executable comment, prepared (COM_STMT_PREPARE), in a
// stacked batch, in an anonymous block. Each is refused, Alice's statement ends with its row;
// the proxy's own KILL QUERY of a session id, after a comment too, still cancels Bob's own.
func TestClientCannotKillAnotherClientsEngineSession(t *testing.T) {
	eng, dsn, name := frontendtest.MariaDB(t)
	addr, _ := relayCore(t, eng, proxy.Limits{}, Options{Users: StaticUsers{"alice": testPassword, "bob": testPassword}})
	alice := openDB(t, addr, "alice", testPassword, name, "")
	bob := openDB(t, addr, "bob", testPassword, name, "multiStatements=true")
	direct, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	const victim = "SELECT SLEEP(4), 'qf-victim-statement'"
	done := make(chan error, 1)
	go func() {
		var slept int
		var tag string
		err := alice.QueryRow(victim).Scan(&slept, &tag)
		if err == nil && (slept != 0 || tag != "qf-victim-statement") {
			err = fmt.Errorf("row %d %q", slept, tag)
		}
		done <- err
	}()
	var id int64
	var engineUser string
	deadline := time.Now().Add(10 * time.Second)
	for direct.QueryRow(`SELECT id, user FROM information_schema.processlist WHERE info LIKE '%qf-victim-' 'statement%'`).Scan(&id, &engineUser) != nil {
		if time.Now().After(deadline) {
			t.Fatal("alice's statement never reached the engine")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, attack := range []string{
		"/* c */ KILL QUERY %d",
		"# c\nKILL %d",
		"KILL HARD QUERY %d",
		"KILL SOFT CONNECTION %d",
		"KILL QUERY ID %d",
		"EXECUTE IMMEDIATE 'KILL QUERY %d'",
		"EXECUTE IMMEDIATE \"KILL %d\"",
		"/*!KILL QUERY %d*/",
		"/*M!100000 KILL QUERY %d*/",
		"SELECT 1; KILL QUERY %d",
		"BEGIN NOT ATOMIC KILL QUERY %d; END",
		"KILL USER '" + engineUser + "'", // last: it would end every engine session at once
	} {
		stmt := attack
		if strings.Contains(stmt, "%d") {
			stmt = fmt.Sprintf(attack, id)
		}
		var me *gomysql.MySQLError
		if _, err := bob.Exec(stmt); !errors.As(err, &me) {
			t.Errorf("%q: %v, want refused", stmt, err)
		}
	}
	if _, err := bob.Exec("KILL QUERY ?", id); err == nil { // COM_STMT_PREPARE, then EXECUTE
		t.Error("a prepared KILL was not refused")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("alice's statement: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("alice's statement did not end")
	}

	// The proxy's own KILL, by the proxy's connection id and after a comment, still reaches
	// the client's own session.
	own, err := bob.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	var ownID int64
	if err := own.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&ownID); err != nil {
		t.Fatal(err)
	}
	ownDone := make(chan error, 1)
	go func() {
		_, err := own.ExecContext(context.Background(), "SELECT SLEEP(20) AS bobs_own")
		ownDone <- err
	}()
	time.Sleep(300 * time.Millisecond)
	if _, err := bob.Exec(fmt.Sprintf("/* ctrl-c */ KILL QUERY %d", ownID)); err != nil {
		t.Fatalf("KILL QUERY of bob's own connection: %v", err)
	}
	select {
	case err := <-ownDone:
		if err == nil {
			t.Fatal("bob's own statement was not killed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("bob's own statement was not killed")
	}
}
