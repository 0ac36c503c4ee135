package mysqlcharset

import (
	"testing"

	"pgregory.net/rapid"
)

// Every latin1 byte string goes to UTF-8 and back unchanged; ASCII is its own UTF-8.
func TestLatin1RoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := string(rapid.SliceOf(rapid.Byte()).Draw(t, "latin1"))
		u := Latin1ToUTF8(s)
		if back := string(AppendLatin1(nil, u)); back != s {
			t.Fatalf("%q -> %q -> %q", s, u, back)
		}
	})
	if got := Latin1ToUTF8("h\xe9llo \x80\xff"); got != "héllo €ÿ" {
		t.Errorf("got %q", got)
	}
	if got := string(AppendLatin1(nil, "日本 é")); got != "?? \xe9" {
		t.Errorf("got %q", got)
	}
}
