package mysqlwire

import (
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

// TestClientCannotKillThroughRunTimeSQL: SQL assembled at run time names nothing a lexical
// check looks for, and MariaDB runs it as the shared engine user, which may KILL every other
// client's engine thread. Each form is first run directly against MariaDB on a victim of its
// own (the engine kills it: ERROR 1317), then sent by Bob through the proxy (go-sql-driver,
// one statement at a time on one connection) against Alice's running statement: each is
// refused, and Alice's row arrives. Dynamic SQL given as one literal still runs.
func TestClientCannotKillThroughRunTimeSQL(t *testing.T) {
	eng, dsn, name := frontendtest.MariaDB(t)
	addr, _ := relayCore(t, eng, proxy.Limits{}, Options{Users: StaticUsers{"alice": testPassword, "bob": testPassword}})
	alice := openDB(t, addr, "alice", testPassword, name, "")
	bob := openDB(t, addr, "bob", testPassword, name, "")
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MultiStatements = true
	direct, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	direct.SetMaxOpenConns(4)

	attacks := []string{
		"SET @q = CONCAT('KI', 'LL QUERY ', %d); PREPARE s FROM @q; EXECUTE s",
		"EXECUTE IMMEDIATE CONCAT('KI', 'LL QUERY ', %d)",
		"EXECUTE IMMEDIATE 'KI' /*!'LL QUERY %d'*/",
		"EXECUTE /*!IMMEDIATE*/ CONCAT('KI', 'LL QUERY ', %d)",
		"EXECUTE /*M!100000 IMMEDIATE */ CONCAT('KI', 'LL QUERY ', %d)", // MariaDB's own form: the frontend leaves it to the engine
		"EXECUTE IMMEDIATE 'KI' 'LL QUERY %d'",
		"PREPARE s FROM 'KI' /* c */ 'LL QUERY %d'; EXECUTE s",
		"PREPARE s FROM INSERT('KXLL QUERY %d', 2, 1, 'I'); EXECUTE s",
		"BEGIN NOT ATOMIC DECLARE q TEXT DEFAULT CONCAT('KI', 'LL QUERY ', %d); EXECUTE IMMEDIATE q; END",
		"SELECT CONCAT('KI', 'LL QUERY ', %d) INTO @q; PREPARE s FROM @q; EXECUTE s",
	}
	// running starts a statement tagged tag on db and returns its engine thread id and a
	// channel with how it ended.
	running := func(db *sql.DB, tag string) (int64, chan error) {
		done := make(chan error, 1)
		go func() {
			var slept int
			var got string
			err := db.QueryRow(fmt.Sprintf("SELECT SLEEP(4), '%s'", tag)).Scan(&slept, &got)
			if err == nil && (slept != 0 || got != tag) {
				err = fmt.Errorf("row %d %q", slept, got)
			}
			done <- err
		}()
		var id int64
		deadline := time.Now().Add(10 * time.Second)
		for direct.QueryRow(`SELECT id FROM information_schema.processlist WHERE info LIKE CONCAT('%SLEEP(4), ''', ?, '''%')`, tag).Scan(&id) != nil {
			if time.Now().After(deadline) {
				t.Fatalf("%s never reached the engine", tag)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return id, done
	}

	// The oracle: on MariaDB itself, the first five forms kill another session of the user.
	victimDB, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { victimDB.Close() })
	for i, attack := range attacks[:5] {
		id, done := running(victimDB, fmt.Sprintf("qf-direct-victim-%d", i))
		if _, err := direct.Exec(fmt.Sprintf(attack, id)); err != nil {
			t.Fatalf("directly on MariaDB, %q: %v", attack, err)
		}
		if err := <-done; err == nil {
			t.Fatalf("directly on MariaDB, %q did not kill its victim: the oracle does not hold", attack)
		}
	}

	id, done := running(alice, "qf-victim-statement")
	for _, attack := range attacks {
		// One statement at a time on one connection (the frontend runs stacked statements
		// one by one too): the one that hands the engine assembled text is refused.
		conn, err := bob.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		refused := false
		for _, stmt := range strings.Split(fmt.Sprintf(attack, id), "; ") {
			if strings.HasPrefix(stmt, "BEGIN NOT ATOMIC") {
				stmt = fmt.Sprintf(attack, id)
			}
			_, err := conn.ExecContext(t.Context(), stmt)
			var me *gomysql.MySQLError
			if errors.As(err, &me) && me.Number == 1227 {
				refused = true
				break
			}
			if strings.HasPrefix(stmt, "BEGIN NOT ATOMIC") {
				break
			}
		}
		conn.Close()
		if !refused {
			t.Errorf("%q: no statement refused with 1227", fmt.Sprintf(attack, id))
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("alice's statement: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("alice's statement did not end")
	}

	// Dynamic SQL given as one literal runs.
	var n int
	if err := bob.QueryRow("EXECUTE IMMEDIATE 'SELECT ? + 1' USING 41").Scan(&n); err != nil || n != 42 {
		t.Fatalf("EXECUTE IMMEDIATE of a literal: %d, %v", n, err)
	}
}
