package mysqlwire

import (
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// TestTLS logs in over TLS with caching_sha2_password (whose full authentication then sends
// the password inside TLS) and runs a query.
func TestTLS(t *testing.T) {
	backend, dbName := mariaBackend(t)
	addr := startServer(t, backend, Options{AuthMethod: gomysql.AUTH_CACHING_SHA2_PASSWORD, TLS: frontendtest.Static(frontendtest.SelfSignedTLS(t))})
	d := openDB(t, addr, "alice", testPassword, dbName, "tls=skip-verify")
	if got := queryStrings(t, d, "SELECT 6*7"); got[0][0] != "42" {
		t.Fatal(got)
	}
	var me *mysql.MySQLError
	if err := openDB(t, addr, "alice", "nope", dbName, "tls=skip-verify").Ping(); err == nil {
		t.Fatal("wrong password accepted over TLS")
	} else if !asMySQLError(err, &me) || me.Number != 1045 {
		t.Fatalf("wrong password: %v", err)
	}
}

func asMySQLError(err error, target **mysql.MySQLError) bool {
	me, ok := err.(*mysql.MySQLError)
	if ok {
		*target = me
	}
	return ok
}
