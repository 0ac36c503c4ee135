package mysqlwire

import (
	"errors"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
)

// TestLatin1ClientReadsEngineErrorsAsMariaDB: an error whose message quotes the client's text
// (a missing table named t_é, a value 'é' no integer reads) reaches a latin1 client in latin1
// and a utf8mb4 client in UTF-8, from DuckDB and PostgreSQL as from MariaDB (directly and
// through the proxy), which writes its messages in character_set_results. Before, DuckDB's and
// PostgreSQL's messages went to a latin1 client in UTF-8 (é as the two bytes Ã©).
func TestLatin1ClientReadsEngineErrorsAsMariaDB(t *testing.T) {
	stmts := []struct {
		sql  string
		args []any
	}{
		{"SELECT * FROM t_\xe9_missing", nil},
		{"SELECT * FROM t_\xe9_missing WHERE 1 = ?", []any{1}},
	}
	check := func(name, addr, user, password, db string) {
		for _, charset := range []string{"latin1", "utf8mb4"} {
			d := openDB(t, addr, user, password, db, "charset="+charset)
			for _, s := range stmts {
				sql, want, wrong := s.sql, "t_\xe9_missing", "t_\xc3\xa9_missing"
				if charset == "utf8mb4" {
					sql = strings.ReplaceAll(sql, "\xe9", "é")
					want, wrong = wrong, want
				}
				_, err := d.Exec(sql, s.args...)
				var me *gomysql.MySQLError
				if !errors.As(err, &me) {
					t.Errorf("%s, %s: %q: %v, want an error", name, charset, sql, err)
					continue
				}
				if !strings.Contains(me.Message, want) || strings.Contains(me.Message, wrong) {
					t.Errorf("%s, %s client: %q: error %d %q, want the table's name as %q", name, charset, sql, me.Number, me.Message, want)
				}
			}
		}
	}
	maria := coreServer(t, coreSetup{})
	cfg, err := gomysql.ParseDSN(maria.dsn)
	if err != nil {
		t.Fatal(err)
	}
	check("MariaDB", cfg.Addr, cfg.User, cfg.Passwd, maria.dbName)
	check("the proxy on MariaDB", maria.addr, testUser, "", maria.dbName)
	arrow := coreServer(t, coreSetup{noPassthrough: true})
	check("the proxy on MariaDB, no passthrough", arrow.addr, testUser, "", arrow.dbName)
	duck, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { duck.Close() })
	check("the proxy on DuckDB", serveCore(t, "duck", duck, coreSetup{}).addr, testUser, "", "")
	check("the proxy on PostgreSQL", pgCluster(t).addr, testUser, "", "")
}
