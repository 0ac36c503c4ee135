package pgwire

import "testing"

// beginsTransaction runs on every relayed statement; it must keep the first-word rule.
func TestBeginsTransaction(t *testing.T) {
	for sql, want := range map[string]bool{
		"BEGIN": true, "begin;": true, "  \n\tStart transaction": true, "BEGIN ISOLATION LEVEL SERIALIZABLE": true,
		"begin;;": true, "": false, "   ": false, "select 1": false, "beginx": false, "commit": false,
		"begin;commit": false, "/* c */ begin": false, "starting": false,
	} {
		if got := beginsTransaction(sql); got != want {
			t.Errorf("beginsTransaction(%q) = %v, want %v", sql, got, want)
		}
	}
}
