package mysqlwire

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/node/proxy"
)

// batchAnswers runs each batch of stacked statements on one connection of d and writes what
// go-sql-driver reads of it: every result set's rows, then the error that ended it.
func batchAnswers(t *testing.T, d *sql.DB, batches []string) []string {
	t.Helper()
	var out []string
	for _, b := range batches {
		var sb strings.Builder
		rows, err := d.Query(b)
		for err == nil {
			cols, _ := rows.Columns()
			for rows.Next() {
				vals := make([]sql.NullString, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&sb, "%v ", vals)
			}
			sb.WriteString("| ")
			if !rows.NextResultSet() {
				err = rows.Err()
				rows.Close()
				break
			}
		}
		if err != nil {
			fmt.Fprintf(&sb, "error %v", err)
		}
		out = append(out, b+" => "+sb.String())
	}
	return out
}

// TestGoSQLDriverMultiStatementsAsMariaDB: go-sql-driver with multiStatements=true asks for
// CLIENT_MULTI_STATEMENTS only of a server that offers it; through the proxy (the relay, and
// settings.passthrough: false) its batches answer as MariaDB answers them: each result set
// in turn, an error ending the batch.
func TestGoSQLDriverMultiStatementsAsMariaDB(t *testing.T) {
	dsn, name := mytest.NewDatabase(t)
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	batches := []string{
		"create table ms_t (id int primary key, v varchar(10)); insert into ms_t values (1, 'a'), (2, 'b')",
		"select 1 as one; select 'two' as two",
		"update ms_t set v = 'c' where id = 1; select id, v from ms_t order by id",
		"select 1; select * from ms_no_such_table; select 2",
		"select count(*) from ms_t",
		"begin; insert into ms_t values (3, 'x'); select count(*) from ms_t; rollback",
		"select count(*) from ms_t",
		"drop table ms_t",
	}
	direct := batchAnswers(t, openDB(t, cfg.Addr, cfg.User, cfg.Passwd, name, "multiStatements=true"), batches)
	for _, passthrough := range []bool{true, false} {
		f := coreServer(t, coreSetup{noPassthrough: !passthrough})
		proxied := batchAnswers(t, openDB(t, f.addr, testUser, "", f.dbName, "multiStatements=true"), batches)
		for i := range direct {
			want := strings.ReplaceAll(direct[i], name, "db")
			if got := strings.ReplaceAll(proxied[i], f.dbName, "db"); got != want {
				t.Errorf("passthrough %v:\n proxy  %s\n direct %s", passthrough, got, want)
			}
		}
	}
}

// TestABatchIsCheckedStatementByStatement: each statement of a batch is read by the proxy as
// if it came alone. A SET the proxy refuses (SET GLOBAL) or carries (autocommit=0) second in a
// batch is refused or carried, the first statement answered: sent whole to the engine, the
// SET GLOBAL would run there and autocommit=0 would land on a pooled connection, the session
// still saying autocommit on. A statement the core refuses (a host file read by the engine's
// user) is refused in a batch as alone (the core's checks read the whole text either way).
func TestABatchIsCheckedStatementByStatement(t *testing.T) {
	eng, _, name := frontendtest.MariaDB(t)
	addr, _ := relayCore(t, eng, proxy.Limits{}, Options{Users: StaticUsers{"bob": testPassword}})
	bob := openDB(t, addr, "bob", testPassword, name, "multiStatements=true")
	bob.SetMaxOpenConns(1)
	for _, c := range []struct {
		batch string
		errno uint16
	}{
		{"SELECT 1; SET GLOBAL max_connections = @@global.max_connections", 1235},
		{"SELECT 1; SELECT LOAD_FILE('/etc/hostname')", 1227},
		{"SELECT 1; SELECT 2 INTO OUTFILE '/tmp/qf-mylatin-batch'", 1227},
		{"DO 1; EXECUTE IMMEDIATE 'SELECT LOAD_FILE(''/etc/hostname'')'", 1227},
		{"SELECT 1; SET autocommit = 0", 0},
	} {
		rows, err := bob.Query(c.batch)
		if err == nil {
			for rows.Next() {
			}
			if rows.NextResultSet() {
				for rows.Next() {
				}
			}
			err = rows.Err()
			rows.Close()
		}
		var me *gomysql.MySQLError
		if c.errno == 0 && err != nil || c.errno != 0 && (!errors.As(err, &me) || me.Number != c.errno) {
			t.Errorf("%q: %v, want its second statement answered with %d", c.batch, err, c.errno)
		}
	}
	if got := queryStrings(t, bob, "SELECT @@autocommit"); fmt.Sprint(got) != "[[0]]" {
		t.Errorf("after a batch ending in SET autocommit = 0: @@autocommit %v, want [[0]]", got)
	}
}
