package mysqlwire

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	gomysql "github.com/go-sql-driver/mysql"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/testlong"
)

// sessionStatus are the SERVER_STATUS flags that tell of the client's session: drivers read
// them to know whether COMMIT or ROLLBACK has anything to do (Connector/J sends neither
// outside IN_TRANS) and whether autocommit is on (Connector/J's setAutoCommit sends nothing
// when the last status already says so).
const sessionStatus = mysql.SERVER_STATUS_IN_TRANS | mysql.SERVER_STATUS_AUTOCOMMIT | mysql.SERVER_MORE_RESULTS_EXISTS

// flagStatement is one statement of a generated sequence, by text or (prepared) by
// COM_STMT_PREPARE / COM_STMT_EXECUTE.
type flagStatement struct {
	sql      string
	args     []any
	prepared bool
}

// flagStatements: transaction control, autocommit, reads and writes of an InnoDB table,
// statements the proxy answers itself, statements that hold the engine connection (a user
// variable, Connector/J's sql_mode at connect), an implicit commit (DDL), an error.
var flagStatements = []flagStatement{
	{sql: "BEGIN"}, {sql: "START TRANSACTION"}, {sql: "COMMIT"}, {sql: "ROLLBACK"},
	{sql: "SET autocommit=0"}, {sql: "SET autocommit=1"}, {sql: "set autocommit = 0", prepared: true},
	{sql: "UPDATE sf SET v = v + 1 WHERE id = 1"}, {sql: "INSERT INTO sf (v) VALUES (7)"},
	{sql: "UPDATE sf SET v = v + ? WHERE id = ?", args: []any{10, 2}, prepared: true},
	{sql: "SELECT id, v FROM sf ORDER BY id"}, {sql: "SELECT v FROM sf WHERE id = ?", args: []any{1}, prepared: true},
	{sql: "SELECT 1"}, {sql: "SELECT @@autocommit"},
	{sql: "SET @sf = 1"}, {sql: "SELECT @sf"},
	{sql: "set autocommit=1, sql_mode = concat(@@sql_mode,',STRICT_TRANS_TABLES')"},
	{sql: "DROP TABLE IF EXISTS sf_none"}, {sql: "SELECT * FROM sf_missing"},
	{sql: "DO 1"}, {sql: "SELECT NOW() IS NOT NULL, CONCAT('a', 'b')"}, {sql: "SELECT 1 FROM DUAL"},
	{sql: "INSERT INTO sf (id, v) VALUES (1, 0)"}, {sql: "SELECT ?", args: []any{5}, prepared: true},
	{sql: "SELECT (SELECT MAX(v) FROM sf)"}, {sql: "SET autocommit=0, sql_mode = 'STRICT_ALL_TABLES'"},
	{sql: "SELECT 1 INTO @sf"}, {sql: "SELECT NOW() IS NOT NULL, 2 INTO @sn, @sf FROM DUAL"},
	{sql: "SELECT MAX(v) INTO @sf FROM sf"},
}

// flagAnswer is what a client sees of a statement: its rows and the session flags of its OK
// or of its rows' end, or its error's code.
type flagAnswer struct {
	text   string
	status uint16
}

// sameFlags: the proxy's answer is MariaDB's, its flags too. With autocommit off MariaDB starts
// a transaction at the first transactional table a statement reads or writes, not at SELECT 1,
// a user variable or an error before any table: a transaction said and not open makes a driver
// send a COMMIT or ROLLBACK with nothing to do, one open and not said makes Connector/J skip
// its ROLLBACK.
func sameFlags(proxy, maria flagAnswer) bool {
	return proxy == maria
}

func (a flagAnswer) String() string { return fmt.Sprintf("%s status %#04x", a.text, a.status) }

// flagsOf runs seq on a fresh connection to addr and writes down each answer.
func flagsOf(t rapid.TB, addr, user, password, db string, deprecateEOF bool, seq []flagStatement) []flagAnswer {
	c, err := client.Connect(addr, user, password, db, func(c *client.Conn) error {
		if !deprecateEOF {
			c.UnsetCapability(mysql.CLIENT_DEPRECATE_EOF)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("connect %s: %v", addr, err)
	}
	var out []flagAnswer
	for _, s := range seq {
		var r *mysql.Result
		if s.prepared {
			var st *client.Stmt
			if st, err = c.Prepare(s.sql); err == nil {
				r, err = st.Execute(s.args...)
				_ = st.Close()
			}
		} else {
			r, err = c.Execute(s.sql)
		}
		out = append(out, answerOf(s.sql, r, err))
	}
	c.Close()
	return out
}

func answerOf(sql string, r *mysql.Result, err error) flagAnswer {
	if err != nil {
		if me, ok := err.(*mysql.MyError); ok {
			return flagAnswer{text: fmt.Sprintf("%s: error %d", sql, me.Code)}
		}
		return flagAnswer{text: sql + ": error " + err.Error()}
	}
	var rows []string
	if r.Resultset != nil {
		for i := range r.Values {
			var row []string
			for j := range r.Values[i] {
				s, _ := r.GetString(i, j)
				row = append(row, s)
			}
			rows = append(rows, strings.Join(row, "|"))
		}
	}
	return flagAnswer{text: fmt.Sprintf("%s: rows %v", sql, rows), status: r.Status & sessionStatus}
}

// TestStatusFlagsAsMariaDB: over generated sequences of statements, the SERVER_STATUS flags of
// every OK and every result's end (in transaction, autocommit, more results) are MariaDB's own,
// and so is what the sequence leaves committed: on the relay, on the relay with each statement
// on its session's goroutine (no event loop), and on the Arrow path; with and without
// CLIENT_DEPRECATE_EOF. First Connector/J's transaction on a held connection (its SET sql_mode
// at connect holds one): setAutoCommit(false), an UPDATE, rollback(), setAutoCommit(true),
// then the session's user variable still there.
func TestStatusFlagsAsMariaDB(t *testing.T) {
	testlong.RapidChecks(t, 25, 100)
	fronts := []*coreFixture{coreServer(t, coreSetup{}), coreServer(t, coreSetup{noLoop: true}), coreServer(t, coreSetup{noPassthrough: true})}
	names := []string{"relay", "relay without the loop", "arrow"}
	var connectorJ []flagStatement
	for _, q := range []string{"set autocommit=1, sql_mode = concat(@@sql_mode,',STRICT_TRANS_TABLES')", "SET @sf = 1",
		"SET autocommit=0", "UPDATE sf SET v = v + 1 WHERE id = 1", "ROLLBACK", "SELECT id, v FROM sf ORDER BY id",
		"SET autocommit=1", "SELECT @sf", "UPDATE sf SET v = v + 1 WHERE id = 2", "SELECT id, v FROM sf ORDER BY id"} {
		connectorJ = append(connectorJ, flagStatement{sql: q})
	}
	// SELECT ... INTO @v with autocommit off: no transaction until one reads the table.
	var into []flagStatement
	for _, q := range []string{"SET autocommit=0", "SELECT 1 INTO @sf", "SELECT NOW() IS NOT NULL, 2 INTO @sn, @sf FROM DUAL",
		"SELECT @sf", "SELECT MAX(v) INTO @sf FROM sf", "ROLLBACK"} {
		into = append(into, flagStatement{sql: q})
	}
	for i, f := range fronts {
		for _, deprecateEOF := range []bool{false, true} {
			if err := sameFlagsAsMariaDB(t, f, connectorJ, deprecateEOF); err != nil {
				t.Errorf("%s, Connector/J's transaction, CLIENT_DEPRECATE_EOF %v: %v", names[i], deprecateEOF, err)
			}
			if err := sameFlagsAsMariaDB(t, f, into, deprecateEOF); err != nil {
				t.Errorf("%s, SELECT ... INTO @v, CLIENT_DEPRECATE_EOF %v: %v", names[i], deprecateEOF, err)
			}
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		seq := rapid.SliceOfN(rapid.SampledFrom(flagStatements), 1, 10).Draw(rt, "statements")
		if rapid.Bool().Draw(rt, "autocommit off first") { // PyMySQL's and mysqlclient's default
			seq = append([]flagStatement{{sql: "SET autocommit=0"}}, seq...)
		}
		deprecateEOF := rapid.Bool().Draw(rt, "CLIENT_DEPRECATE_EOF")
		i := rapid.IntRange(0, len(fronts)-1).Draw(rt, "front")
		if err := sameFlagsAsMariaDB(rt, fronts[i], seq, deprecateEOF); err != nil {
			rt.Fatalf("%s: %v", names[i], err)
		}
	})
}

// sameFlagsAsMariaDB runs seq on MariaDB and then through the proxy of f, each from the same
// table, and tells the first answer or committed row that differs.
func sameFlagsAsMariaDB(t rapid.TB, f *coreFixture, seq []flagStatement, deprecateEOF bool) error {
	cfg, err := gomysql.ParseDSN(f.dsn)
	if err != nil {
		t.Fatal(err)
	}
	reset := func() {
		for _, q := range []string{"DROP TABLE IF EXISTS sf", "CREATE TABLE sf (id INT AUTO_INCREMENT PRIMARY KEY, v INT) ENGINE=InnoDB", "INSERT INTO sf (v) VALUES (1), (2)"} {
			if _, err := f.direct.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	committed := func() flagAnswer {
		var rows []string
		r, err := f.direct.Query("SELECT id, v FROM sf ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for r.Next() {
			var id, v int
			if err := r.Scan(&id, &v); err != nil {
				t.Fatal(err)
			}
			rows = append(rows, fmt.Sprintf("%d|%d", id, v))
		}
		return flagAnswer{text: "committed: " + strings.Join(rows, " ")}
	}
	reset()
	want := append(flagsOf(t, cfg.Addr, cfg.User, cfg.Passwd, f.dbName, deprecateEOF, seq), committed())
	reset()
	got := append(flagsOf(t, f.addr, testUser, "", f.dbName, deprecateEOF, seq), committed())
	for k := range want {
		if !sameFlags(got[k], want[k]) {
			return fmt.Errorf("step %d:\n proxy   %v\n MariaDB %v\nMariaDB:\n %v\nproxy:\n %v", k, got[k], want[k], want, got)
		}
	}
	return nil
}
