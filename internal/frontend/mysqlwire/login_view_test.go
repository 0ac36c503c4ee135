package mysqlwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// TestLoginViewKeepsOnlyTheSaltItRead: the salt passwords are checked against is the greeting's,
// then the latest auth switch's; a greeting or a switch it cannot read leaves no salt (every
// password then fails: nobody is let in against a salt the client was never sent), and the
// packets that are neither pass unchanged.
func TestLoginViewKeepsOnlyTheSaltItRead(t *testing.T) {
	salt := []byte("abcdefgh0123456789AB")
	g := greeting{version: "8.0.11-queryflux", connectionID: 7, salt: salt, capabilities: gomysql.CLIENT_PROTOCOL_41 | gomysql.CLIENT_LONG_PASSWORD,
		charset: 45, authPlugin: gomysql.AUTH_NATIVE_PASSWORD}
	greetingPacket := framePacket(g.appendTo(nil), 0)

	for _, metadata := range []bool{false, true} {
		v := &loginView{metadata: metadata}
		if short := []byte{1, 0, 0}; !bytes.Equal(v.serverPacket(short), short) || v.greeted {
			t.Fatalf("a packet shorter than its header: taken as the greeting (greeted %v)", v.greeted)
		}
		out := v.serverPacket(greetingPacket)
		if !bytes.Equal(v.salt, salt) {
			t.Fatalf("salt %q after the greeting, want %q", v.salt, salt)
		}
		if out[3] != 0 || int(out[0])|int(out[1])<<8|int(out[2])<<16 != len(out)-4 {
			t.Fatalf("the greeting sent: header % x for a payload of %d bytes", out[:4], len(out)-4)
		}
		sent, err := parseGreeting(out[4:])
		if err != nil {
			t.Fatal(err)
		}
		want := uint32(gomysql.CLIENT_FOUND_ROWS | gomysql.CLIENT_LOCAL_FILES | gomysql.CLIENT_MULTI_STATEMENTS)
		if sent.capabilities&want != want || sent.status&gomysql.SERVER_STATUS_AUTOCOMMIT == 0 || !bytes.Equal(sent.salt, salt) {
			t.Fatalf("the greeting sent: %+v", sent)
		}
		wantSent := g
		wantSent.status |= gomysql.SERVER_STATUS_AUTOCOMMIT
		wantSent.capabilities |= want
		if metadata {
			wantSent.capabilities &^= gomysql.CLIENT_LONG_PASSWORD
			wantSent.extended = mariadbExtendedMetadata
		}
		if !bytes.Equal(out[4:], wantSent.appendTo(nil)) {
			t.Fatalf("metadata %v: the greeting sent\n% x\nwant\n% x", metadata, out[4:], wantSent.appendTo(nil))
		}
		if long := sent.capabilities&gomysql.CLIENT_LONG_PASSWORD != 0; long == metadata {
			t.Fatalf("metadata %v: CLIENT_LONG_PASSWORD (MySQL's, not MariaDB's) %v", metadata, long)
		}
		ok := framePacket([]byte{gomysql.OK_HEADER, 0, 0, 2, 0, 0, 0}, 2)
		if !bytes.Equal(v.serverPacket(ok), ok) || !bytes.Equal(v.salt, salt) {
			t.Fatalf("an OK after the greeting changed it or the salt (%q)", v.salt)
		}
		if empty := framePacket(nil, 2); !bytes.Equal(v.serverPacket(empty), empty) || !bytes.Equal(v.salt, salt) {
			t.Fatalf("an empty packet after the greeting changed the salt (%q)", v.salt)
		}
		newSalt := []byte("ZYXWVUTSRQponmlkjihg")
		sw := append(append([]byte{gomysql.EOF_HEADER}, gomysql.AUTH_NATIVE_PASSWORD+"\x00"...), append(newSalt, 0)...)
		if out := v.serverPacket(framePacket(sw, 2)); !bytes.Equal(out[4:], sw) || !bytes.Equal(v.salt, newSalt) {
			t.Fatalf("after an auth switch the salt is %q, want the switch's %q", v.salt, newSalt)
		}
		if v.serverPacket(framePacket([]byte{gomysql.EOF_HEADER, 'x', 'y'}, 4)); v.salt != nil {
			t.Fatalf("an auth switch without its plugin's NUL left the salt %q, want none", v.salt)
		}
	}

	v := &loginView{}
	bad := framePacket(append([]byte{9}, g.appendTo(nil)[1:]...), 0) // protocol 9
	if out := v.serverPacket(bad); !bytes.Equal(out, bad) || !v.greeted || v.salt != nil {
		t.Fatalf("a greeting of protocol 9: sent changed %v, greeted %v, salt %q; want it sent as is and no salt", !bytes.Equal(out, bad), v.greeted, v.salt)
	}
	v.serverPacket(greetingPacket)
	if v.salt != nil {
		t.Fatalf("a greeting after the unreadable one gave the salt %q: only the first packet is the greeting", v.salt)
	}
}

// TestWireReaderReadsToTheEndExactly: a field may end the packet, and a read of none is not a
// read past the end; one byte more is.
func TestWireReaderReadsToTheEndExactly(t *testing.T) {
	r := wireReader{p: []byte("abc")}
	if b := r.bytes(0); len(b) != 0 || r.failed {
		t.Fatalf("bytes(0): %q failed %v", b, r.failed)
	}
	if b := r.bytes(3); string(b) != "abc" || r.failed || len(r.p) != 0 {
		t.Fatalf("bytes(3) of 3: %q failed %v", b, r.failed)
	}
	if b := r.bytes(1); len(b) != 1 || !r.failed {
		t.Fatalf("bytes(1) past the end: %q failed %v", b, r.failed)
	}
	r = wireReader{p: []byte("ab")}
	if b := r.bytes(-1); len(b) != 0 || !r.failed {
		t.Fatalf("bytes(-1): %q failed %v", b, r.failed)
	}
	r = wireReader{p: []byte("ab")}
	if s := r.nulString(); s != "" || !r.failed {
		t.Fatalf("a string without its NUL: %q failed %v", s, r.failed)
	}
}

// TestParseChangeUserReadsEachLayout: COM_CHANGE_USER's fields with and without
// CLIENT_SECURE_CONNECTION, with and without the charset and plugin that follow the database;
// one cut short is malformed (the login is not judged on a half-read user or password).
func TestParseChangeUserReadsEachLayout(t *testing.T) {
	auth := []byte{1, 2, 0, 3}
	secure := append(append([]byte("bob\x00"), byte(len(auth))), auth...)
	secure = append(secure, "shop\x00"...)
	for _, c := range []struct {
		name   string
		p      []byte
		secure bool
		want   changeUserRequest
	}{
		{"secure, database only", secure, true, changeUserRequest{user: "bob", db: "shop", auth: auth}},
		{"secure, charset and plugin", append(append([]byte{}, secure...), "\x2d\x00mysql_native_password\x00"...), true,
			changeUserRequest{user: "bob", db: "shop", auth: auth, plugin: "mysql_native_password"}},
		{"secure, charset only", append(append([]byte{}, secure...), 0x2d, 0), true, changeUserRequest{user: "bob", db: "shop", auth: auth}},
		{"secure, a plugin without its NUL", append(append([]byte{}, secure...), "\x2d\x00mysql"...), true, changeUserRequest{user: "bob", db: "shop", auth: auth}},
		{"secure, no database", append(append([]byte("bob\x00"), 0), 0), true, changeUserRequest{user: "bob", auth: []byte{}}},
		{"not secure", []byte("bob\x00pw\x00shop\x00"), false, changeUserRequest{user: "bob", db: "shop", auth: []byte("pw")}},
	} {
		got, err := parseChangeUser(c.p, c.secure)
		if err != nil || got.user != c.want.user || got.db != c.want.db || got.plugin != c.want.plugin || !bytes.Equal(got.auth, c.want.auth) {
			t.Errorf("%s: %+v %v, want %+v", c.name, got, err, c.want)
		}
	}
	for _, c := range []struct {
		name   string
		p      []byte
		secure bool
	}{
		{"no NUL after the user", []byte("bob"), true},
		{"an auth length past the end", []byte("bob\x00\x09ab"), true},
		{"no database", append([]byte("bob\x00\x04"), auth...), true},
		{"not secure, no NUL after the password", []byte("bob\x00pw"), false},
		{"not secure, no database", []byte("bob\x00pw\x00"), false},
	} {
		if _, err := parseChangeUser(c.p, c.secure); !errors.Is(err, gomysql.ErrMalformPacket) {
			t.Errorf("%s: %v, want malformed", c.name, err)
		}
	}
}

// changeUserDB sends a COM_CHANGE_USER to user, scrambled for mysql_native_password, naming db.
func (r *rawSession) changeUserDB(user, password, db string) []byte {
	r.t.Helper()
	auth := gomysql.CalcNativePassword(r.salt, []byte(password))
	p := append([]byte{gomysql.COM_CHANGE_USER}, user+"\x00"...)
	p = append(append(p, byte(len(auth))), auth...)
	p = append(append(p, db+"\x00"...), 33, 0)
	return r.command(append(p, gomysql.AUTH_NATIVE_PASSWORD+"\x00"...))
}

// TestChangeUserToAMissingDatabaseKeepsTheOldSession: a COM_CHANGE_USER whose password is right
// but whose database does not exist is refused 1049 and the connection stays the old user's,
// in the old database, as MariaDB keeps it (not the new user's, which it was refused); one
// naming a database that exists runs the new user's statements there.
func TestChangeUserToAMissingDatabaseKeepsTheOldSession(t *testing.T) {
	backend := frontendtest.NewBackend(withDatabaseTest(frontendtest.AllTypesEngine()))
	addr := startServer(t, backend, Options{Users: StaticUsers{"alice": "pw", "bob": "pw2"}})
	r := rawLogin(t, addr, "alice", "pw")
	if answer := r.changeUserDB("bob", "pw2", "nope"); len(answer) < 3 || answer[0] != gomysql.ERR_HEADER ||
		binary.LittleEndian.Uint16(answer[1:]) != gomysql.ER_BAD_DB_ERROR {
		t.Fatalf("a change to bob in a database that does not exist: %q, want ERR 1049", answer)
	}
	if u, db := r.currentUser(backend), backend.LastRequest(t).Database; u != "alice" || db != "" {
		t.Fatalf("after the refused change: the session runs as %q in %q, want alice's in none", u, db)
	}
	if answer := r.changeUserDB("bob", "pw2", "test"); answer[0] != gomysql.OK_HEADER {
		t.Fatalf("a change to bob in test: %q, want OK", answer)
	}
	if u, db := r.currentUser(backend), backend.LastRequest(t).Database; u != "bob" || db != "test" {
		t.Fatalf("after the change: the session runs as %q in %q, want bob's in test", u, db)
	}
}
