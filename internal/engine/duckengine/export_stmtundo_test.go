package duckengine

import "testing"

// SetStmtLogMax sets how many statements a MySQL client's transaction keeps to undo a refused
// one (mysqlstmtundo.go) and returns a func that sets it back.
func SetStmtLogMax(n int) (restore func()) {
	was := stmtLogMax
	stmtLogMax = n
	return func() { stmtLogMax = was }
}

// TestRollsBackToSavepoint: the statements whose refusal the undo leaves failed.
func TestRollsBackToSavepoint(t *testing.T) {
	for sql, want := range map[string]bool{
		"rollback to s1": true, "ROLLBACK WORK TO SAVEPOINT s1": true, "/* c */ rollback to savepoint `s`": true,
		"rollback": false, "rollback work": false, "rollback and chain": false, "release savepoint s1": false,
	} {
		if got := rollsBackToSavepoint(sql); got != want {
			t.Errorf("%q: %v, want %v", sql, got, want)
		}
	}
}
