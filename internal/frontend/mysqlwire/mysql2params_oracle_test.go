package mysqlwire

import (
	"path/filepath"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
)

// TestMySQL2PreparedNullsAndBigIntsAsMariaDB: mysql2's prepared statements (execute) with NULL
// parameters and BIGINTs at their limits (signed and unsigned, as strings and as numbers),
// DECIMAL(30,10), a DATETIME(3), by default and with supportBigNumbers and bigNumberStrings,
// read back as MariaDB answers them: on the relay and the Arrow path.
func TestMySQL2PreparedNullsAndBigIntsAsMariaDB(t *testing.T) {
	path, err := filepath.Abs("testdata/mysql2_params.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, noPassthrough := range []bool{false, true} {
		f := coreServer(t, coreSetup{noPassthrough: noPassthrough})
		cfg, err := gomysql.ParseDSN(f.dsn)
		if err != nil {
			t.Fatal(err)
		}
		for _, options := range []string{"{}", `{"supportBigNumbers": true, "bigNumberStrings": true}`} {
			env := []string{"STATEMENTS=" + path, "MYSQL2_OPTIONS=" + options}
			want := runMySQL2Script(t, "mysql2_statements.js", cfg.Addr, cfg.User, cfg.Passwd, f.dbName, env...)
			got := runMySQL2Script(t, "mysql2_statements.js", f.addr, testUser, "", f.dbName, env...)
			if len(want) < 15 {
				t.Fatalf("%d probes ran on MariaDB", len(want))
			}
			for probe, w := range want {
				if got[probe] != w {
					t.Errorf("passthrough %v, %s, %s:\n proxy   %s\n MariaDB %s", !noPassthrough, options, probe, got[probe], w)
				}
			}
		}
	}
}
