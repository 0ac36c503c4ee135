package duckengine

import "testing"

// SetStmtLogMax sets how many statements a MySQL client's transaction keeps to undo a refused
// one (mysqlstmtundo.go) and returns a func that sets it back.
func SetStmtLogMax(n int) (restore func()) {
	was := stmtLogMax
	stmtLogMax = n
	return func() { stmtLogMax = was }
}

// TestMySQLSavepointStatements: the savepoint statements a MySQL client's session answers
// itself (mysqlsavepoints.go), and the names they give.
func TestMySQLSavepointStatements(t *testing.T) {
	for sql, want := range map[string]string{
		"rollback to s1": "rollback to s1", "ROLLBACK WORK TO SAVEPOINT s1": "rollback to s1", "/* c */ rollback to savepoint `S x`;": "rollback to S x",
		"savepoint A": "savepoint A", "SAVEPOINT `a``b`": "savepoint a`b", "release savepoint s1": "release s1", "rollback to savepoint": "rollback to savepoint",
		"rollback": "", "rollback work": "", "rollback and chain": "", "release s1": "", "savepoint a b": "", "rollback to a, b": "",
		"savepoints": "", "select 'savepoint a'": "",
	} {
		got := ""
		if verb, name, ok := mysqlSavepointStmt(sql); ok {
			got = map[txVerb]string{txSavepoint: "savepoint ", txRelease: "release ", txRollbackTo: "rollback to "}[verb] + name
		}
		if got != want {
			t.Errorf("%q: %q, want %q", sql, got, want)
		}
	}
}

// SeeTexts gives f each text e's connections run or prepare, until the returned func.
func SeeTexts(e *Engine, f func(sqlText string)) (stop func()) {
	e.keys.seen.Store(&f)
	return func() { e.keys.seen.Store(nil) }
}
