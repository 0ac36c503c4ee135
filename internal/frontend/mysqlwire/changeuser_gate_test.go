package mysqlwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/logbuf"
	"github.com/queryflux/queryflux/internal/query"
)

// rawSession is a client connection logged in by hand (mysql_native_password), which sends
// COM_CHANGE_USER packets as a client library would, and malformed ones no library sends.
type rawSession struct {
	t    *testing.T
	nc   net.Conn
	salt []byte // the greeting's: a COM_CHANGE_USER's auth response is scrambled with it
}

func rawLogin(t *testing.T, addr, user, password string) *rawSession {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	g, err := parseGreeting(readPacket(t, nc))
	if err != nil {
		t.Fatal(err)
	}
	resp := pluginResponse(user, gomysql.CalcNativePassword(g.salt, []byte(password)), gomysql.AUTH_NATIVE_PASSWORD)
	if _, err := nc.Write(framePacket(resp, 1)); err != nil {
		t.Fatal(err)
	}
	if p := readPacket(t, nc); p[0] != gomysql.OK_HEADER {
		t.Fatalf("login as %s: %q", user, p)
	}
	return &rawSession{t: t, nc: nc, salt: g.salt}
}

// pluginResponse is a HandshakeResponse41 of a client of the auth plugins logging in as user
// with the auth response scramble for plugin.
func pluginResponse(user string, scramble []byte, plugin string) []byte {
	caps := uint32(gomysql.CLIENT_PROTOCOL_41 | gomysql.CLIENT_SECURE_CONNECTION | gomysql.CLIENT_PLUGIN_AUTH | gomysql.CLIENT_LONG_PASSWORD | gomysql.CLIENT_TRANSACTIONS)
	resp := binary.LittleEndian.AppendUint32(nil, caps)
	resp = binary.LittleEndian.AppendUint32(resp, 1<<24)
	resp = append(append(resp, 33), make([]byte, 23)...)
	resp = append(resp, user+"\x00"...)
	resp = append(append(resp, byte(len(scramble))), scramble...)
	return append(resp, plugin+"\x00"...)
}

// command sends one command packet and returns the first packet of the answer.
func (r *rawSession) command(payload []byte) []byte {
	r.t.Helper()
	if _, err := r.nc.Write(framePacket(payload, 0)); err != nil {
		r.t.Fatal(err)
	}
	return readPacket(r.t, r.nc)
}

// changeUser sends a COM_CHANGE_USER to user with password scrambled for plugin: the server's
// own (mysql_native_password) is answered at once; another is switched, and the switch's salt
// must be the login's (as MariaDB and libmariadb have it).
func (r *rawSession) changeUser(user, password, plugin string) []byte {
	r.t.Helper()
	auth := gomysql.CalcNativePassword(r.salt, []byte(password))
	p := append([]byte{gomysql.COM_CHANGE_USER}, user+"\x00"...)
	p = append(append(p, byte(len(auth))), auth...)
	p = append(p, 0)     // no database
	p = append(p, 33, 0) // charset
	p = append(p, plugin+"\x00"...)
	answer := r.command(p)
	if plugin == gomysql.AUTH_NATIVE_PASSWORD {
		return answer
	}
	if answer[0] != gomysql.EOF_HEADER || !bytes.Equal(authSwitchSalt(answer[1:]), r.salt) {
		r.t.Fatalf("a change to %s under %s: %q, want an AuthSwitchRequest with the login's salt", user, plugin, answer)
	}
	if _, err := r.nc.Write(framePacket(auth, 2)); err != nil {
		r.t.Fatal(err)
	}
	return readPacket(r.t, r.nc)
}

// currentUser is the user the session runs its statements as: the one backend saw run its
// SELECT CURRENT_USER(), which the session answers with that user's name.
func (r *rawSession) currentUser(backend *frontendtest.Backend) string {
	r.t.Helper()
	p := r.command(append([]byte{gomysql.COM_QUERY}, "SELECT CURRENT_USER()"...))
	if p[0] == gomysql.ERR_HEADER {
		r.t.Fatalf("SELECT CURRENT_USER(): %q", p)
	}
	for eofs := 0; eofs < 2; { // column definitions, EOF, the row, EOF
		if p = readPacket(r.t, r.nc); p[0] == gomysql.EOF_HEADER && len(p) < 9 {
			eofs++
		}
	}
	q := backend.LastRequest(r.t)
	if !strings.Contains(q.SQL, "'"+q.User+"@") {
		r.t.Fatalf("the session ran %q as %s", q.SQL, q.User)
	}
	return q.User
}

// wantRefused checks that answer is ERR 1045 saying says.
func wantRefused(t *testing.T, what string, answer []byte, says string) {
	t.Helper()
	if len(answer) < 3 || answer[0] != gomysql.ERR_HEADER || binary.LittleEndian.Uint16(answer[1:]) != gomysql.ER_ACCESS_DENIED_ERROR || !bytes.Contains(answer, []byte(says)) {
		t.Errorf("%s: %q, want ERR 1045 saying %q", what, answer, says)
	}
}

// TestChangeUserIsALoginThePolicyJudges: COM_CHANGE_USER is a login, told to the login policy
// as one, whether the client answers with the server's auth method or is switched to it. A
// user the policy refuses at Admit (banned) or once the password was right (carol) is refused
// with the policy's 1045 and the connection stays its old user's; a wrong password is told to
// the policy's failure count and to Users, a refusal of the policy to neither (it counted it);
// a policy that fails tells the client only "authentication failed", its detail logged with
// no password; a user the policy trusts needs none; the right password changes the user.
func TestChangeUserIsALoginThePolicyJudges(t *testing.T) {
	gate := &frontendtest.RecordingGate{
		Trust: map[string]bool{"trusted": true},
		Refuse: map[string]error{"banned": &query.Error{Code: query.CodeAuthRefused, Message: "banned from here"},
			"broken": errors.New("policy store postgres://qf:s3cretpw@10.9.8.7/policy: connection refused")},
		RefuseVerified: map[string]error{"carol": &query.Error{Code: query.CodeAuthRefused, Message: "carol must use TLS"}},
	}
	users := &observedUsers{StaticUsers: StaticUsers{"alice": "pw", "bob": "pw3", "carol": "pw2", "banned": "pw", "broken": "pw"}}
	var log logbuf.Buffer
	backend := frontendtest.NewBackend(withDatabaseTest(frontendtest.AllTypesEngine()))
	addr := startServer(t, backend, Options{Gate: gate, Users: users, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	for _, plugin := range []string{gomysql.AUTH_NATIVE_PASSWORD, gomysql.AUTH_CACHING_SHA2_PASSWORD} {
		r := rawLogin(t, addr, "alice", "pw")
		gate.Reset()
		told := func(what string, admits, verifies, fails int) {
			t.Helper()
			a, v, f := gate.Reset()
			if len(a) != admits || len(v) != verifies || len(f) != fails {
				t.Errorf("%s, %s: the policy was told %d admits, %d verified, %d failed (%+v %+v %+v); want %d, %d, %d",
					plugin, what, len(a), len(v), len(f), a, v, f, admits, verifies, fails)
			}
			for _, l := range append(append(a, v...), f...) {
				if l.Protocol != query.ProtocolMySQL || !strings.HasPrefix(l.ClientAddr, "127.0.0.1:") || l.Cleartext {
					t.Errorf("%s, %s: the policy was told %+v", plugin, what, l)
				}
			}
		}
		stillAlice := func(what string) {
			t.Helper()
			if u := r.currentUser(backend); u != "alice" {
				t.Fatalf("%s, after %s: the session is %s's, want alice's", plugin, what, u)
			}
		}

		wantRefused(t, plugin+", a change to a user the policy refuses", r.changeUser("banned", "pw", plugin), "banned from here")
		told("banned", 1, 0, 0)
		stillAlice("a change to banned")
		wantRefused(t, plugin+", a change to a user the policy refuses once her password is right", r.changeUser("carol", "pw2", plugin), "carol must use TLS")
		told("carol", 1, 1, 0)
		stillAlice("a change to carol")
		if f := users.TakeFailed(); len(f) != 0 {
			t.Errorf("%s: Users told of failures %v for changes the policy refused", plugin, f)
		}
		answer := r.changeUser("carol", "nope", plugin)
		wantRefused(t, plugin+", carol's wrong password", answer, "Access denied for user 'carol'")
		if bytes.Contains(answer, []byte("TLS")) {
			t.Errorf("%s: a wrong password was told the user's rule: %q", plugin, answer)
		}
		told("carol's wrong password", 1, 0, 1)
		if f := users.TakeFailed(); len(f) != 1 || f[0] != "carol" {
			t.Errorf("%s: Users told of failures %v, want [carol]", plugin, f)
		}
		stillAlice("carol's wrong password")

		answer = r.changeUser("broken", "pw", plugin)
		wantRefused(t, plugin+", the policy failing", answer, "authentication failed")
		if bytes.Contains(answer, []byte("10.9.8.7")) || bytes.Contains(answer, []byte("s3cretpw")) {
			t.Errorf("%s: the client was told the policy's failure: %q", plugin, answer)
		}
		told("broken", 1, 0, 0)
		stillAlice("the policy failing")

		if p := r.changeUser("trusted", "", plugin); p[0] != gomysql.OK_HEADER {
			t.Fatalf("%s, a change to a trusted user: %q", plugin, p)
		}
		told("trusted", 1, 0, 0)
		if u := r.currentUser(backend); u != "trusted" {
			t.Fatalf("%s: after a change to trusted the session is %s's", plugin, u)
		}
		if p := r.changeUser("bob", "pw3", plugin); p[0] != gomysql.OK_HEADER {
			t.Fatalf("%s, a change to bob with his password: %q", plugin, p)
		}
		told("bob", 1, 1, 0)
		if u := r.currentUser(backend); u != "bob" {
			t.Fatalf("%s: after a change to bob the session is %s's", plugin, u)
		}
	}
	if got := log.String(); !strings.Contains(got, "10.9.8.7") || strings.Contains(got, "s3cretpw") {
		t.Errorf("the log: %s; want the policy's failure, without the store's password", got)
	}
	if n := serverOf(t, addr).panics.Load(); n != 0 {
		t.Fatalf("%d panics", n)
	}
}

// TestMalformedChangeUserLogsNobodyIn: a COM_CHANGE_USER that runs past its end (a user with no
// NUL, an auth response longer than the packet, a database with no NUL, nothing at all) is
// refused, nobody is asked about it, and the connection, if the server keeps it, is still its
// old user's.
func TestMalformedChangeUserLogsNobodyIn(t *testing.T) {
	gate := &frontendtest.RecordingGate{Trust: map[string]bool{"trusted": true}}
	backend := frontendtest.NewBackend(withDatabaseTest(frontendtest.AllTypesEngine()))
	addr := startServer(t, backend, Options{Gate: gate, Users: StaticUsers{"alice": "pw"}})
	cases := map[string][]byte{
		"nothing":                       {},
		"a user with no NUL":            []byte("trusted"),
		"an auth response past the end": append([]byte("trusted\x00"), 200, 1, 2, 3),
		"no auth response":              []byte("trusted\x00"),
		"a database with no NUL":        append([]byte("trusted\x00"), 0, 't', 'e', 's', 't'),
	}
	for _, name := range []string{"nothing", "a user with no NUL", "an auth response past the end", "no auth response", "a database with no NUL"} {
		r := rawLogin(t, addr, "alice", "pw")
		gate.Reset()
		answer := r.command(append([]byte{gomysql.COM_CHANGE_USER}, cases[name]...))
		if answer[0] == gomysql.OK_HEADER {
			t.Errorf("%s: answered OK", name)
		}
		if a, v, f := gate.Reset(); len(a)+len(v)+len(f) != 0 {
			t.Errorf("%s: the policy was asked %+v %+v %+v", name, a, v, f)
		}
		if answer[0] == gomysql.ERR_HEADER {
			if u := r.currentUser(backend); u != "alice" {
				t.Errorf("%s: the session is %s's, want alice's", name, u)
			}
		}
	}
	if n := serverOf(t, addr).panics.Load(); n != 0 {
		t.Fatalf("%d panics", n)
	}
}
