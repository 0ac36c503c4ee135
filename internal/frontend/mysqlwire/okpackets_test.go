package mysqlwire

import (
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/mytest"
)

// TestMySQL2OKPacketsAsMariaDB: what mysql2 reads of the OK packets of INSERT, UPDATE,
// DELETE, REPLACE, an upsert and CALL (affectedRows, insertId, info and the changedRows read
// there, warningStatus, serverStatus), and of stacked statements' and stored procedures'
// result sets, by text and prepared statement, in and out of a transaction, is what it reads
// from MariaDB itself: on the relay and with settings.passthrough: false.
func TestMySQL2OKPacketsAsMariaDB(t *testing.T) {
	dsn, name := mytest.NewDatabase(t)
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	direct := runMySQL2Script(t, "mysql2_okpackets.js", cfg.Addr, cfg.User, cfg.Passwd, name)
	for _, passthrough := range []bool{true, false} {
		f := coreServer(t, coreSetup{noPassthrough: !passthrough})
		proxied := runMySQL2Script(t, "mysql2_okpackets.js", f.addr, testUser, "", f.dbName)
		for probe, want := range direct {
			if got := proxied[probe]; got != want {
				t.Errorf("passthrough %v, %s:\n proxy  %s\n direct %s", passthrough, probe, got, want)
			}
		}
	}
}
