package mysqlwire

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// TestAUserNameHoldingAControlCharacterIsRefused: a MySQL login (either auth method) whose
// user name holds a control character (C0, DEL, C1; a NUL ends the name on the wire) is
// refused 1045 naming the character, before the Gate or any password check, however trusting
// the Gate; a COM_CHANGE_USER to such a name alike.
func TestAUserNameHoldingAControlCharacterIsRefused(t *testing.T) {
	names := frontendtest.ControlCharacterNames
	gate := &frontendtest.RecordingGate{Trust: map[string]bool{"alice": true}}
	users := StaticUsers{"alice": "pw"}
	for _, n := range names {
		gate.Trust[n.Name], users[n.Name] = true, "pw"
	}
	backend := frontendtest.NewBackend(frontendtest.AllTypesEngine())
	for _, method := range []string{gomysql.AUTH_NATIVE_PASSWORD, gomysql.AUTH_CACHING_SHA2_PASSWORD} {
		addr := startServer(t, backend, Options{Gate: gate, Users: users, AuthMethod: method})
		login := func(user string) error {
			cfg := mysql.NewConfig()
			cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = user, "pw", "tcp", addr
			c, err := mysql.NewConnector(cfg)
			if err != nil {
				t.Fatal(err)
			}
			db := sql.OpenDB(c)
			defer db.Close()
			return db.Ping()
		}
		gate.Reset()
		for _, n := range names {
			err := login(n.Name)
			var me *mysql.MySQLError
			if !errors.As(err, &me) || me.Number != 1045 || !strings.Contains(me.Message, "control character ("+n.Char) {
				t.Errorf("%s, %q: %v; want 1045 naming the control character %s", method, n.Name, err, n.Char)
			}
		}
		if admits, verifies, _ := gate.Reset(); len(admits)+len(verifies) != 0 {
			t.Errorf("%s: the Gate was told %+v %+v", method, admits, verifies)
		}
		if err := login("alice"); err != nil {
			t.Errorf("%s, alice: %v", method, err)
		}
		if method != gomysql.AUTH_NATIVE_PASSWORD {
			continue
		}
		// COM_CHANGE_USER is a login too, under either auth method.
		r := rawLogin(t, addr, "alice", "pw")
		for _, plugin := range []string{gomysql.AUTH_NATIVE_PASSWORD, gomysql.AUTH_CACHING_SHA2_PASSWORD} {
			for _, n := range names {
				wantRefused(t, fmt.Sprintf("%s, a change to %q", plugin, n.Name), r.changeUser(n.Name, "pw", plugin), "control character ("+n.Char)
			}
		}
		if admits, verifies, _ := gate.Reset(); len(admits)+len(verifies) != 2 { // alice's two logins
			t.Errorf("changes of user: the Gate was told %+v %+v", admits, verifies)
		}
	}
	if n := len(backend.Requests()); n != 0 {
		t.Errorf("%d requests reached the backend", n)
	}
}
