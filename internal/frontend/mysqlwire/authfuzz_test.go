package mysqlwire

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/query"
)

// fuzzGate is a login policy in miniature: "trusted" needs no password from loopback,
// "refused" is refused, "tlsonly" must encrypt.
type fuzzGate struct{}

func (fuzzGate) Admit(l query.Login) (bool, error) {
	switch {
	case l.User == "refused", l.User == "tlsonly" && !l.TLS:
		return false, &query.Error{Code: query.CodeAuthRefused, Message: "refused"}
	case l.User == "trusted":
		return true, nil
	}
	return false, nil
}

// fuzzUsers: alice has a cleartext password, empty an empty one, hashonly only a hash.
type fuzzUsers struct{}

func (fuzzUsers) Passwords(user string) ([]string, bool, error) {
	switch user {
	case "alice", "tlsonly":
		return []string{"pw"}, true, nil
	case "empty":
		return []string{""}, true, nil
	case "hashonly":
		return nil, true, nil
	}
	return nil, false, nil
}

func (fuzzUsers) CheckNativeScramble(user string, salt, scramble []byte) bool {
	return user == "hashonly" && bytes.Equal(scramble, mysql.CalcNativePassword(salt, []byte("pw")))
}

func (fuzzUsers) CheckCleartext(user, password string) bool {
	return user == "hashonly" && password == "pw"
}

// loginPacket is a protocol-41 handshake response of user with auth data under plugin;
// caps adds capability flags (CLIENT_SSL makes it an SSL request when cut at 32 bytes).
func loginPacket(user string, auth []byte, plugin string, caps uint32) []byte {
	caps |= mysql.CLIENT_PROTOCOL_41 | mysql.CLIENT_SECURE_CONNECTION | mysql.CLIENT_PLUGIN_AUTH |
		mysql.CLIENT_LONG_PASSWORD | mysql.CLIENT_TRANSACTIONS
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, caps)
	binary.Write(&b, binary.LittleEndian, uint32(1<<24))
	b.WriteByte(45)
	b.Write(make([]byte, 23))
	b.WriteString(user)
	b.WriteByte(0)
	b.WriteByte(byte(len(auth)))
	b.Write(auth)
	b.WriteString(plugin)
	b.WriteByte(0)
	return b.Bytes()
}

// authServers are the fuzz target's two servers, listening on loopback:
// mysql_native_password without TLS, and caching_sha2_password offering TLS.
func authServers(t testing.TB) [2]*listening {
	var out [2]*listening
	for i, opts := range []Options{
		{Gate: fuzzGate{}, Users: fuzzUsers{}},
		{Gate: fuzzGate{}, Users: fuzzUsers{}, AuthMethod: mysql.AUTH_CACHING_SHA2_PASSWORD, TLS: frontendtest.Static(frontendtest.SelfSignedTLS(t))},
	} {
		opts.Logger = slog.New(slog.DiscardHandler)
		addr := startServer(t, frontendtest.NewBackend(withDatabaseTest(frontendtest.AllTypesEngine())), opts)
		out[i] = &listening{serverOf(t, addr), addr}
	}
	return out
}

// listening is a server and the loopback address it serves.
type listening struct {
	*Server
	addr string
}

// login runs one connection on s: the client sends first as its handshake response, then
// rest, and hangs up; it returns what the server wrote.
func login(t testing.TB, s *listening, first, rest []byte) []byte {
	return converse(t, s.addr, append(packet(1, first), rest...))
}

// FuzzMySQLAuth sends arbitrary bytes as the handshake response and what follows it (auth
// switch responses, full authentication, TLS) to both auth methods: logins may fail, the
// server must never panic while a client logs in.
func FuzzMySQLAuth(f *testing.F) {
	scramble := bytes.Repeat([]byte{7}, 20)
	for _, user := range []string{"alice", "empty", "hashonly", "trusted", "refused", "tlsonly", "mallory", ""} {
		for _, auth := range [][]byte{nil, {0}, scramble, []byte("whatever")} {
			for _, plugin := range []string{mysql.AUTH_NATIVE_PASSWORD, mysql.AUTH_CACHING_SHA2_PASSWORD, mysql.AUTH_CLEAR_PASSWORD} {
				f.Add(false, loginPacket(user, auth, plugin, 0), []byte{})
				f.Add(true, loginPacket(user, auth, plugin, 0), packet(3, []byte{2}))
			}
		}
	}
	f.Add(true, loginPacket("alice", nil, "", mysql.CLIENT_SSL)[:32], []byte{0x16, 3, 1, 0, 5, 1, 2, 3, 4, 5})
	f.Add(true, loginPacket("hashonly", scramble, mysql.AUTH_CACHING_SHA2_PASSWORD, 0), packet(3, bytes.Repeat([]byte{1}, 256)))
	servers := authServers(f)
	defer servers[0].Close()
	defer servers[1].Close()
	f.Fuzz(func(t *testing.T, sha2 bool, first, rest []byte) {
		s := servers[0]
		if sha2 {
			s = servers[1]
		}
		before := s.panics.Load() // login returns once the server closed: its panics are counted
		login(t, s, first, rest)
		if n := s.panics.Load() - before; n != 0 {
			t.Fatalf("the login path panicked %d times on %x %x: %v", n, first, rest, s.lastPanic.Load())
		}
	})
}

// TestTrustedUserSendingAPasswordLogsIn: a trusted user whose client always sends a password
// logs in (it once hit an index out of range in the auth path), and an unknown user is
// refused with 1045 whatever it sends, after the steps a known one goes through.
func TestTrustedUserSendingAPasswordLogsIn(t *testing.T) {
	servers := authServers(t)
	defer servers[0].Close()
	defer servers[1].Close()
	for i, s := range servers {
		plugin := []string{mysql.AUTH_NATIVE_PASSWORD, mysql.AUTH_CACHING_SHA2_PASSWORD}[i]
		for _, auth := range [][]byte{nil, bytes.Repeat([]byte{9}, 20), []byte("x")} {
			out := login(t, s, loginPacket("trusted", auth, plugin, 0), nil)
			if !bytes.Contains(out, []byte{7, 0, 0, 2, 0}) { // the OK packet ending the handshake
				t.Fatalf("%s, trusted user with auth %x: %x", plugin, auth, out)
			}
			// An unknown user is answered as a known one is: caching_sha2_password asks both
			// for full authentication (then refuses), everything else is ERR 1045 at once.
			out = login(t, s, loginPacket("mallory", auth, plugin, 0), nil)
			known := login(t, s, loginPacket("alice", auth, plugin, 0), nil)
			fullAuth := []byte{mysql.MORE_DATE_HEADER, mysql.CACHE_SHA2_FULL_AUTH}
			if bytes.Contains(out, fullAuth) != bytes.Contains(known, fullAuth) ||
				!bytes.Contains(out, fullAuth) && !bytes.Contains(out, []byte{0xff, 0x15, 0x04}) { // ERR 1045
				t.Fatalf("%s, unknown user with auth %x: %x; known user: %x", plugin, auth, out, known)
			}
		}
		if n := s.panics.Load(); n != 0 {
			t.Fatalf("%s: %d panics while logging in", plugin, n)
		}
	}
}

func (fuzzGate) Verified(query.Login) error { return nil }

// withDatabaseTest is e, whose SHOW DATABASES lists one database, test (a login may name it).
func withDatabaseTest(e frontendtest.FuncEngine) frontendtest.FuncEngine {
	return func(ctx context.Context, q *query.Request) (query.Rows, error) {
		if !strings.HasPrefix(q.SQL, "SHOW DATABASES") {
			return e(ctx, q)
		}
		schema := arrow.NewSchema([]arrow.Field{{Name: "Database", Type: arrow.BinaryTypes.String}}, nil)
		b := array.NewStringBuilder(memory.DefaultAllocator)
		defer b.Release()
		b.Append("test")
		col := b.NewArray()
		defer col.Release()
		batch := array.NewRecordBatch(schema, []arrow.Array{col}, 1)
		defer batch.Release()
		return frontendtest.NewRecordRows(schema, "", batch), nil
	}
}
