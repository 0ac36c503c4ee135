package mysqlwire

import (
	"fmt"
	"testing"
)

// TestSessionVariablesAsMariaDB: a session variable the client SET on the engine (sql_mode,
// foreign_key_checks, unique_checks, character_set_results) is answered with the engine's value
// afterwards, by SELECT @@x, @@session.x, @@local.x and SHOW VARIABLES LIKE / WHERE, as MariaDB
// answers it; a SET mixing assignments the proxy carries (autocommit, the isolation level)
// with ones the engine keeps is taken as MariaDB takes it, autocommit off then carried by the
// session (an UPDATE rolled back, one after autocommit=1 committed); SHOW VARIABLES shows booleans as ON and OFF. On the relay and
// the Arrow path. Before, @@sql_mode was ” after any SET of it, and the mixed SET was 1235.
func TestSessionVariablesAsMariaDB(t *testing.T) {
	stmts := []string{
		"SHOW VARIABLES WHERE Variable_name IN ('autocommit', 'sql_auto_is_null', 'tx_read_only', 'lower_case_table_names')",
		"SET sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_DATE'",
		"SELECT @@sql_mode", "SELECT @@session.sql_mode, @@SESSION.foreign_key_checks, @@local.sql_mode",
		"SHOW VARIABLES LIKE 'sql_mode'", "SHOW SESSION VARIABLES LIKE 'SQL_MODE'",
		"SET foreign_key_checks = 0", "SELECT @@foreign_key_checks", "SHOW VARIABLES LIKE 'foreign_key_checks'",
		"SET autocommit=0, sql_mode = 'TRADITIONAL'", "SELECT @@autocommit, @@sql_mode",
		"SHOW VARIABLES WHERE Variable_name IN ('autocommit', 'sql_mode', 'foreign_key_checks')",
		"UPDATE sv SET v = v + 1", "ROLLBACK", "SELECT v FROM sv",
		"SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_ENGINE_SUBSTITUTION'), unique_checks = 0, autocommit = 1",
		"SELECT @@sql_mode, @@unique_checks, @@autocommit", "SHOW VARIABLES LIKE 'unique_checks'",
		"SET tx_isolation = 'READ-COMMITTED', sql_mode = ''", "SELECT @@tx_isolation, @@sql_mode",
		"SET character_set_results = latin1", "SHOW VARIABLES LIKE 'character_set_results'",
		"SELECT @@character_set_results",
		"SET autocommit=0, unique_checks = 1", "SET autocommit=1", "UPDATE sv SET v = v + 10", "SELECT @@in_transaction",
	}
	for _, noPassthrough := range []bool{false, true} {
		f := coreServer(t, coreSetup{noPassthrough: noPassthrough})
		if _, err := f.direct.Exec("CREATE TABLE sv (v INT) ENGINE=InnoDB"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.direct.Exec("INSERT INTO sv VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		want := sessionAnswers(t, f.direct, stmts)
		committed := func() string {
			var v int
			if err := f.direct.QueryRow("SELECT v FROM sv").Scan(&v); err != nil {
				t.Fatal(err)
			}
			_, err := f.direct.Exec("UPDATE sv SET v = 1")
			return fmt.Sprintf("committed: %d, %v", v, err)
		}
		want = append(want, committed())
		got := append(sessionAnswers(t, openDB(t, f.addr, testUser, "", f.dbName, ""), stmts), committed())
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("passthrough %v, step %d:\n proxy   %s\n MariaDB %s", !noPassthrough, i, got[i], want[i])
			}
		}
	}
}
