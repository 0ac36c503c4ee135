package mysqlwire

import (
	"bytes"
	"net"
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// A greeting decoded and encoded again is the same greeting, whatever its fields.
func TestGreetingRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := greeting{
			version:      rapid.StringMatching(`[0-9a-z.-]{0,40}`).Draw(t, "version"),
			connectionID: rapid.Uint32().Draw(t, "id"),
			salt:         rapid.SliceOfN(rapid.ByteRange(1, 255), 20, 20).Draw(t, "salt"),
			capabilities: rapid.Uint32().Draw(t, "caps"),
			charset:      rapid.Byte().Draw(t, "charset"),
			status:       rapid.Uint16().Draw(t, "status"),
			authPlugin:   rapid.StringMatching(`[a-z_0-9]{1,30}`).Draw(t, "plugin"),
		}
		got, err := parseGreeting(g.appendTo(nil))
		if err != nil {
			t.Fatal(err)
		}
		if got.version != g.version || got.connectionID != g.connectionID || !bytes.Equal(got.salt, g.salt) ||
			got.capabilities != g.capabilities || got.charset != g.charset || got.status != g.status || got.authPlugin != g.authPlugin {
			t.Fatalf("round trip: %+v, want %+v", got, g)
		}
		if _, err := parseGreeting(g.appendTo(nil)[:rapid.IntRange(0, 20).Draw(t, "cut")]); err == nil {
			t.Fatal("a cut greeting was read")
		}
	})
}

// The greeting a client reads is go-mysql's with autocommit set in its status flags, the
// session's first state, and the salt the login checks passwords against is the greeting's. It
// announces what MariaDB's does and clients look for: found rows (go-sql-driver's affected
// rows) and local files (a client that checks the server's flag before LOAD DATA LOCAL).
func TestGreetingSaysAutocommitFoundRowsAndLocalFiles(t *testing.T) {
	addr := startServer(t, frontendtest.NewBackend(nil), Options{})
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	g, err := parseGreeting(readPacket(t, nc))
	if err != nil {
		t.Fatal(err)
	}
	if g.status&gomysql.SERVER_STATUS_AUTOCOMMIT == 0 || g.version != "8.0.11-queryflux" || g.authPlugin != gomysql.AUTH_NATIVE_PASSWORD || len(g.salt) != 20 {
		t.Fatalf("greeting %+v, want autocommit in its status", g)
	}
	if want := uint32(gomysql.CLIENT_FOUND_ROWS | gomysql.CLIENT_LOCAL_FILES); g.capabilities&want != want {
		t.Fatalf("greeting capabilities %#x, want CLIENT_FOUND_ROWS and CLIENT_LOCAL_FILES", g.capabilities)
	}
}

// A client that answers the greeting with another auth plugin is switched to the server's
// (an AuthSwitchRequest with a new salt), and its password is checked against that new salt.
func TestAuthSwitchChecksTheNewSalt(t *testing.T) {
	addr := startServer(t, frontendtest.NewBackend(nil), Options{})
	for _, password := range []string{testPassword, "wrong"} {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		g, err := parseGreeting(readPacket(t, nc))
		if err != nil {
			t.Fatal(err)
		}
		resp := pluginResponse("alice", gomysql.CalcCachingSha2Password(g.salt, []byte(password)), gomysql.AUTH_CACHING_SHA2_PASSWORD)
		if _, err := nc.Write(framePacket(resp, 1)); err != nil {
			t.Fatal(err)
		}
		sw := readPacket(t, nc)
		if sw[0] != gomysql.EOF_HEADER || !bytes.HasPrefix(sw[1:], []byte(gomysql.AUTH_NATIVE_PASSWORD+"\x00")) {
			t.Fatalf("answer %q, want an AuthSwitchRequest to %s", sw, gomysql.AUTH_NATIVE_PASSWORD)
		}
		salt := authSwitchSalt(sw[1:])
		if len(salt) != 20 || bytes.Equal(salt, g.salt) {
			t.Fatalf("the switch's salt %x, want 20 new bytes", salt)
		}
		if _, err := nc.Write(framePacket(gomysql.CalcNativePassword(salt, []byte(password)), 3)); err != nil {
			t.Fatal(err)
		}
		if p := readPacket(t, nc); (p[0] == gomysql.OK_HEADER) != (password == testPassword) {
			t.Fatalf("password %q: answer %q", password, p)
		}
	}
}
