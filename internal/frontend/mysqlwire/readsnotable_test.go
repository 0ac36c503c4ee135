package mysqlwire

import "testing"

// TestReadsNoTable: the statements MariaDB runs with autocommit off without starting a
// transaction (SELECT ... INTO @v or a file among them, as MariaDB answers @@in_transaction 0
// after each), and those that start one.
func TestReadsNoTable(t *testing.T) {
	for sql, want := range map[string]bool{
		"SELECT 1":         true,
		"SELECT 1 INTO @v": true,
		"select 1, now() into @a, @`b` from dual":    true,
		"SELECT 1 FROM DUAL INTO @q":                 true,
		"SELECT @x := 5":                             true,
		"SELECT 1 INTO OUTFILE '/tmp/x'":             true,
		"SELECT v FROM t INTO @v":                    false,
		"SELECT 1 INTO v":                            false,
		"SELECT (SELECT MAX(v) FROM t) INTO @v":      false,
		"SELECT 1 FOR UPDATE":                        false,
		"SELECT f(1) INTO @v":                        false,
		"INSERT INTO t VALUES (1)":                   false,
		"SELECT 1 INTO @v FROM t":                    false,
		"SELECT 1 LOCK IN SHARE MODE":                false,
		"SELECT NOW() IS NOT NULL, CONCAT('a', 'b')": true,
	} {
		if got := readsNoTable(sql); got != want {
			t.Errorf("readsNoTable(%q) = %v, want %v", sql, got, want)
		}
	}
}
