package pgwire

import "testing"

// beginsTransaction runs on every relayed statement: its first keyword, after blanks and
// comments (a driver's /* tag */ BEGIN pins a connection as BEGIN does).
func TestBeginsTransaction(t *testing.T) {
	for sql, want := range map[string]bool{
		"BEGIN": true, "begin;": true, "  \n\tStart transaction": true, "BEGIN ISOLATION LEVEL SERIALIZABLE": true,
		"begin;;": true, "": false, "   ": false, "select 1": false, "beginx": false, "commit": false,
		"begin;commit": true, "/* c */ begin": true, "-- c\nSTART TRANSACTION": true, "starting": false,
		"'begin'": false, "/* begin */ select": false,
	} {
		if got := beginsTransaction(sql); got != want {
			t.Errorf("beginsTransaction(%q) = %v, want %v", sql, got, want)
		}
	}
}
