package duckengine

// SetStmtLogMax sets how many statements a MySQL client's transaction keeps to undo a refused
// one (mysqlstmtundo.go) and returns a func that sets it back.
func SetStmtLogMax(n int) (restore func()) {
	was := stmtLogMax
	stmtLogMax = n
	return func() { stmtLogMax = was }
}
