package mysqlwire

import (
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/node/proxy"
)

// TestClientCannotReachTheEngineHostsFiles: the cluster's engine user here holds FILE, so it
// reads and writes the database host's files (the direct connection shows it). Through the
// proxy, by text and prepared, LOAD_FILE, SELECT ... INTO OUTFILE / DUMPFILE and LOAD DATA
// INFILE are refused with 1227.
func TestClientCannotReachTheEngineHostsFiles(t *testing.T) {
	eng, dsn, name := frontendtest.MariaDB(t)
	direct, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	var n sql.NullInt64
	if err := direct.QueryRow("SELECT LENGTH(LOAD_FILE('/etc/hostname'))").Scan(&n); err != nil || !n.Valid {
		t.Skipf("the engine user cannot read the host's files (the test needs one that can): %v", err)
	}
	frontendtest.Exec(t, eng, "CREATE TABLE hostlines (l TEXT)")
	addr, _ := relayCore(t, eng, proxy.Limits{}, Options{Users: StaticUsers{"bob": testPassword}})
	bob := openDB(t, addr, "bob", testPassword, name, "")
	out := fmt.Sprintf("/tmp/qf-redteam-%d", time.Now().UnixNano())
	for _, attack := range []string{
		"SELECT LOAD_FILE('/etc/hostname')",
		"SELECT 1 INTO OUTFILE '" + out + "'",
		"SELECT 1 INTO DUMPFILE '" + out + "'",
		"LOAD DATA INFILE '/etc/hostname' INTO TABLE hostlines",
		"EXECUTE IMMEDIATE 'SELECT LOAD_FILE(''/etc/hostname'')'",
		"PREPARE s FROM 0x" + hex.EncodeToString([]byte("SELECT LOAD_FILE('/etc/hostname')")), // MariaDB prepares the text hex spells
	} {
		var me *gomysql.MySQLError
		if _, err := bob.Exec(attack); !errors.As(err, &me) || me.Number != 1227 {
			t.Errorf("%q: %v, want refused with 1227", attack, err)
		}
		if st, err := bob.Prepare(attack); err == nil {
			_, err = st.Exec()
			st.Close()
			if !errors.As(err, &me) || me.Number != 1227 {
				t.Errorf("prepared %q: %v, want refused with 1227", attack, err)
			}
		}
	}
}
