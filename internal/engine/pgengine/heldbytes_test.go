package pgengine

import (
	"strings"
	"testing"
)

// A pooled engine connection outlives the clients that prepared statements on it: its
// statement names are bounded in bytes as well as in number, and a statement past the bytes
// runs unnamed (no name given) while forgotten ones make room again.
func TestEngineStatementsBoundedInBytes(t *testing.T) {
	w := &wireConn{c: &rawConn{stmts: map[string]string{}}}
	big := func(i int) string { return strings.Repeat("x", 1<<20) + string(rune('a'+i)) }
	for i := range 3 {
		if name, prepared := w.Statement(big(i), true); name == "" || prepared {
			t.Fatalf("statement %d of 1 MiB: %q, %v", i, name, prepared)
		}
	}
	if name, _ := w.Statement(big(3), true); name != "" {
		t.Fatalf("a fourth statement of 1 MiB (past %d bytes) was named %q", rawStatementBytesMax, name)
	}
	if name, _ := w.Statement("select 1", true); name == "" {
		t.Fatal("a small statement found no room")
	}
	w.Forget(big(0))
	if name, _ := w.Statement(big(3), true); name == "" {
		t.Fatal("no room after a statement was forgotten")
	}
	w.ForgetAll()
	if w.c.stmtBytes != 0 {
		t.Fatalf("after ForgetAll %d bytes are counted", w.c.stmtBytes)
	}
}

// A pooled connection keeps no large write buffer once it was written: a client's 16 MiB
// message would stay with it for the next clients.
func TestWrittenLetsALargeBufferGo(t *testing.T) {
	c := &rawConn{out: make([]byte, 16<<20)}
	c.written()
	if cap(c.out) > rawOutKeptBytes {
		t.Fatalf("a written connection keeps %d bytes", cap(c.out))
	}
	small := make([]byte, 100, 4096)
	c.out = small
	c.written()
	if cap(c.out) != 4096 {
		t.Fatal("a small buffer was not kept for reuse")
	}
}
