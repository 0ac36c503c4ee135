package mysqlwire

import (
	"database/sql"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/query"
)

// loginAnswer is what go-sql-driver's connect to db, then SELECT DATABASE(), gives: the
// database, or the login's error.
func loginAnswer(t *testing.T, addr, user, password, db string) string {
	t.Helper()
	d := openDB(t, addr, user, password, db, "")
	var got sql.NullString
	if err := d.QueryRow("select database()").Scan(&got); err != nil {
		return errText(err)
	}
	return "in " + got.String
}

// cliLogin is what the mariadb CLI prints connecting to db (-D) and running SELECT 1.
func cliLogin(t *testing.T, cli, addr, user, password, db string) string {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	args := []string{"-h", host, "-P", port, "-u", user, "-D", db, "--skip-ssl", "-N", "-e", "select 1"}
	if password != "" {
		args = append(args, "-p"+password)
	}
	out, _ := exec.Command(cli, args...).CombinedOutput()
	return strings.TrimSpace(string(out))
}

// TestLoginDatabaseAsMariaDB: a login naming a database that does not exist (the handshake's
// database) fails as MariaDB's does, 1049 "Unknown database", for go-sql-driver, mysqlclient
// (python_usedb.py's connect probes, TestChangeDatabaseAsMariaDB) and the mariadb CLI, on every
// engine; a login to one that exists is in it.
func TestLoginDatabaseAsMariaDB(t *testing.T) {
	maria := coreServer(t, coreSetup{})
	cfg, err := gomysql.ParseDSN(maria.dsn)
	if err != nil {
		t.Fatal(err)
	}
	const missing = "qf_no_such_db"
	want := loginAnswer(t, cfg.Addr, cfg.User, cfg.Passwd, missing)
	if !strings.HasPrefix(want, "error 1049 42000 Unknown database") {
		t.Fatalf("MariaDB: %s", want)
	}
	cli, _ := exec.LookPath("mariadb")
	var wantCLI string
	if cli != "" {
		wantCLI = cliLogin(t, cli, cfg.Addr, cfg.User, cfg.Passwd, missing)
	}
	duck, arrow, pg := unrelayedTargets(t, nil, nil)
	for name, tg := range map[string]struct{ addr, db string }{ //determinism:ok each target is compared alone
		"relayed": {maria.addr, maria.dbName}, "Arrow": {arrow.addr, arrow.dbName}, "DuckDB": {duck.addr, "duck"},
		"PostgreSQL": {pg.addr, "public"},
	} {
		if got := loginAnswer(t, tg.addr, testUser, "", missing); got != want {
			t.Errorf("%s: go-sql-driver's login to %s:\n proxy   %s\n MariaDB %s", name, missing, got, want)
		}
		if got := loginAnswer(t, tg.addr, testUser, "", tg.db); got != "in "+tg.db {
			t.Errorf("%s: go-sql-driver's login to %s: %s", name, tg.db, got)
		}
		if cli != "" {
			if got := cliLogin(t, cli, tg.addr, testUser, "", missing); got != wantCLI {
				t.Errorf("%s: mariadb -D %s:\n proxy   %s\n MariaDB %s", name, missing, got, wantCLI)
			}
		}
	}
}

// TestHiddenDatabaseIsUnknown: a database the access rules' catalogs refuse the user is answered
// as one that does not exist (1049), at login and by USE, whether it exists or
// not; the allowed one is used as before.
func TestHiddenDatabaseIsUnknown(t *testing.T) {
	_, other := mytest.NewDatabase(t) // exists, and the rules hide it
	// The access rules' answer (policy.Compiled's, which imports this package): a statement in
	// another database than the allowed one is refused, naming the catalog.
	var allowed string
	maria := coreServer(t, coreSetup{check: func(req *query.Request, group string) error {
		if req.Database != allowed {
			return &query.Error{Code: query.CodeAccessDenied, Catalog: req.Database,
				Message: fmt.Sprintf("access denied: user %q may not query group %q (catalog %q)", req.User, group, req.Database)}
		}
		return nil
	}})
	allowed = maria.dbName
	for _, db := range []string{other, "qf_no_such_db"} {
		want := fmt.Sprintf("error 1049 42000 Unknown database '%s'", db)
		if got := loginAnswer(t, maria.addr, testUser, "", db); got != want {
			t.Errorf("login to %s: %s, want %s", db, got, want)
		}
		d := openDB(t, maria.addr, testUser, "", allowed, "")
		d.SetMaxOpenConns(1)
		for _, use := range []string{"use " + db, "use `" + db + "`"} {
			_, err := d.Exec(use)
			if got := errText(err); got != want {
				t.Errorf("%s: %s, want %s", use, got, want)
			}
		}
		var in string
		if err := d.QueryRow("select database()").Scan(&in); err != nil || in != allowed {
			t.Errorf("after use %s: in %q, %v", db, in, err)
		}
	}
	if got := loginAnswer(t, maria.addr, testUser, "", allowed); got != "in "+allowed {
		t.Errorf("login to %s: %s", allowed, got)
	}
}

// errText is err as loginAnswer writes it, "ok" for none.
func errText(err error) string {
	if err == nil {
		return "ok"
	}
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		return fmt.Sprintf("error %d %s %s", me.Number, me.SQLState, me.Message)
	}
	return "error " + err.Error()
}
