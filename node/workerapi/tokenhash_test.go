package workerapi

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"pgregory.net/rapid"
)

// TokenHash and AppendTokenHash are the hex SHA-256 of the token whatever its length (the
// stack buffer holds 64 bytes: longer tokens must hash whole), and AppendTokenHash keeps what
// dst held.
func TestTokenHashIsHexSHA256(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 200).Draw(t, "len") // past the 64 bytes of the stack's buffer too
		token := string(rapid.SliceOfN(rapid.Byte(), n, n).Draw(t, "token"))
		prefix := rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(t, "prefix")
		sum := sha256.Sum256([]byte(token))
		want := hex.EncodeToString(sum[:])
		if got := TokenHash(token); got != want {
			t.Fatalf("TokenHash(%q) = %s, want %s", token, got, want)
		}
		if got := AppendTokenHash(append([]byte(nil), prefix...), token); string(got) != string(prefix)+want {
			t.Fatalf("AppendTokenHash(%x, %q) = %q, want %q", prefix, token, got, string(prefix)+want)
		}
	})
}

// A control plane's token (47 bytes) hashes into the caller's buffer without an allocation.
func TestAppendTokenHashAllocatesNothing(t *testing.T) {
	token := "qfw_" + string(make([]byte, 43))
	if n := testing.AllocsPerRun(100, func() {
		var buf [64]byte
		tokenSink = AppendTokenHash(buf[:0], token)[0]
	}); n != 0 {
		t.Fatalf("%v allocations per hash, want 0", n)
	}
}

var tokenSink byte
