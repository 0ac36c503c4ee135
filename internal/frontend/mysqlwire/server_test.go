package mysqlwire

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/go-mysql-org/go-mysql/client"
	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/query"
)

// mariaBackend is a backend over the MySQL engine on a fresh MariaDB database.
func mariaBackend(t testing.TB) (*frontendtest.Backend, string) {
	eng, _, name := frontendtest.MariaDB(t)
	return frontendtest.NewBackend(eng), name
}

func openDB(t testing.TB, addr, user, password, db string, params string) *sql.DB {
	t.Helper()
	dsn := fmt.Sprintf("%s:%s@tcp(%s)/%s?%s", user, password, addr, db, params)
	d, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func queryStrings(t *testing.T, d *sql.DB, q string, args ...any) [][]string {
	t.Helper()
	rows, err := d.Query(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = v.String
			if !v.Valid {
				row[i] = "NULL"
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

func TestGoSQLDriverTextAndBinary(t *testing.T) {
	backend, dbName := mariaBackend(t)
	addr := startServer(t, backend, Options{})
	d := openDB(t, addr, "alice", testPassword, dbName, "")
	if got := queryStrings(t, d, "select 40+2"); got[0][0] != "42" {
		t.Fatalf("select 40+2: %v", got)
	}
	if req := backend.LastRequest(t); req.User != "alice" || req.Database != dbName || req.Protocol != query.ProtocolMySQL {
		t.Fatalf("request %+v", req)
	}
	for _, stmt := range []string{
		`CREATE TABLE t (id INT PRIMARY KEY, i8 TINYINT, u64 BIGINT UNSIGNED, f FLOAT, d DOUBLE, dec1 DECIMAL(12,3), dec2 DECIMAL(8,2),
			s VARCHAR(20), b VARBINARY(10), dt DATE, ts DATETIME(6), tm TIME, n INT)`,
		`INSERT INTO t VALUES (1, -5, 18446744073709551615, 1.5, -2.25, 123456789.125, 10.5, 'héllo wörld', X'00FF10',
			'2024-02-29', '2024-02-29 13:14:15.123456', '08:09:10', NULL)`,
		`INSERT INTO t VALUES (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
	} {
		res, err := d.Exec(stmt)
		if err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		if strings.HasPrefix(stmt, "INSERT") {
			if n, _ := res.RowsAffected(); n != 1 {
				t.Fatalf("rows affected %d", n)
			}
		}
	}
	want := [][]string{
		{"1", "-5", "18446744073709551615", "1.5", "-2.25", "123456789.125", "10.50", "héllo wörld", "\x00\xff\x10",
			"2024-02-29", "2024-02-29 13:14:15.123456", "08:09:10", "NULL"},
		{"2", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"},
	}
	text := queryStrings(t, d, "SELECT * FROM t ORDER BY id")
	binary := queryStrings(t, d, "SELECT * FROM t WHERE id >= ? ORDER BY id", 1) // prepared: binary protocol
	for name, got := range map[string][][]string{"text": text, "binary": binary} {
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s protocol:\n got %q\nwant %q", name, got, want)
		}
	}
	if req := backend.LastRequest(t); len(req.Args) != 1 || req.Args[0] != int64(1) {
		t.Fatalf("prepared args %#v", req.Args)
	}
	// parseTime: the driver decodes DATETIME and DATE from both protocols.
	dp := openDB(t, addr, "alice", testPassword, dbName, "parseTime=true")
	var ts, dt sql.NullTime
	if err := dp.QueryRow("SELECT ts, dt FROM t WHERE id = ?", 1).Scan(&ts, &dt); err != nil {
		t.Fatal(err)
	}
	if got := ts.Time.Format("2006-01-02 15:04:05.000000"); got != "2024-02-29 13:14:15.123456" {
		t.Fatalf("binary datetime %s", got)
	}
	if err := dp.QueryRow("SELECT ts, dt FROM t WHERE id = 1").Scan(&ts, &dt); err != nil {
		t.Fatal(err)
	}
	if got := dt.Time.Format("2006-01-02"); got != "2024-02-29" {
		t.Fatalf("text date %s", got)
	}
}

func TestErrorsCarryMySQLCodes(t *testing.T) {
	backend, dbName := mariaBackend(t)
	addr := startServer(t, backend, Options{})
	d := openDB(t, addr, testUser, "", dbName, "")
	cases := []struct {
		sql    string
		number uint16
		state  string
	}{
		{"SELEC 1", 1064, "42000"},
		{"SELECT * FROM no_such_table", 1146, "42S02"},
	}
	for _, c := range cases {
		for _, prepared := range []bool{false, true} {
			var err error
			if prepared {
				_, err = d.Query(c.sql+" WHERE 1 = ?", 1)
			} else {
				_, err = d.Query(c.sql)
			}
			var me *mysql.MySQLError
			if !errors.As(err, &me) || me.Number != c.number || string(me.SQLState[:]) != c.state {
				t.Errorf("%s (prepared=%v): %v, want %d (%s)", c.sql, prepared, err, c.number, c.state)
			}
		}
	}
	// The session goes on after errors.
	if got := queryStrings(t, d, "SELECT 1"); got[0][0] != "1" {
		t.Fatal(got)
	}
}

func TestNotConfiguredAnswers1053(t *testing.T) {
	backend, dbName := mariaBackend(t)
	backend.SetReady(false)
	addr := startServer(t, backend, Options{})
	d := openDB(t, addr, testUser, "", dbName, "")
	for _, prepared := range []bool{false, true} {
		var err error
		if prepared {
			_, err = d.Query("SELECT ?", 1)
		} else {
			_, err = d.Query("SELECT 1")
		}
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1053 || string(me.SQLState[:]) != "08S01" || !strings.Contains(me.Message, "not configured") {
			t.Fatalf("prepared=%v: %v", prepared, err)
		}
	}
	backend.SetReady(true)
	if got := queryStrings(t, d, "SELECT 7"); got[0][0] != "7" {
		t.Fatal(got)
	}
}

func TestAuthentication(t *testing.T) {
	backend, dbName := mariaBackend(t)
	for _, method := range []string{gomysql.AUTH_NATIVE_PASSWORD, gomysql.AUTH_CACHING_SHA2_PASSWORD} {
		t.Run(method, func(t *testing.T) {
			addr := startServer(t, backend, Options{AuthMethod: method})
			for i := 0; i < 2; i++ { // the second caching_sha2 login takes the fast path
				d := openDB(t, addr, "alice", testPassword, dbName, "")
				if err := d.Ping(); err != nil {
					t.Fatalf("alice login %d: %v", i, err)
				}
				d.Close()
			}
			var me *mysql.MySQLError
			err := openDB(t, addr, "alice", "wrong", dbName, "").Ping()
			if !errors.As(err, &me) || me.Number != 1045 {
				t.Fatalf("wrong password: %v", err)
			}
			err = openDB(t, addr, "alice", "", dbName, "").Ping()
			if !errors.As(err, &me) || me.Number != 1045 {
				t.Fatalf("empty password: %v", err)
			}
			if err := openDB(t, addr, testUser, "", dbName, "").Ping(); err != nil {
				t.Fatalf("loopback user: %v", err)
			}
			err = openDB(t, addr, "mallory", "x", dbName, "").Ping()
			if err == nil {
				t.Fatal("unknown user logged in")
			}
		})
	}
}

func TestLoopbackUserNeedsLoopback(t *testing.T) {
	s := &Server{opts: Options{LoopbackUser: "queryflux", AuthMethod: gomysql.AUTH_NATIVE_PASSWORD}}
	if ok, _ := s.admit("queryflux", &net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 5}, false); ok {
		t.Fatal("loopback user trusted from a non-loopback address")
	}
	if ok, _ := s.admit("queryflux", &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 5}, false); !ok {
		t.Fatal("loopback user not trusted from loopback")
	}
	if ok, _ := s.admit("QUERYFLUX", &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 5}, false); ok {
		t.Fatal("another name trusted from loopback")
	}
}

func TestMariaDBCLI(t *testing.T) {
	cli, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skip("mariadb CLI not installed")
	}
	backend, dbName := mariaBackend(t)
	addr := startServer(t, backend, Options{})
	host, port, _ := net.SplitHostPort(addr)
	run := func(args ...string) (string, error) {
		base := []string{"-h", host, "-P", port, "--protocol=tcp", "--skip-ssl", "-N", "-B"}
		out, err := exec.Command(cli, append(base, args...)...).CombinedOutput()
		return string(out), err
	}
	out, err := run("-u", testUser, "-e", "select 40+2")
	if err != nil || strings.TrimSpace(out) != "42" {
		t.Fatalf("loopback user: %v %q", err, out)
	}
	out, err = run("-u", "alice", "-p"+testPassword, dbName, "-e", "create table c (x int); insert into c values (1),(2); select sum(x) from c")
	if err != nil || strings.TrimSpace(out) != "3" {
		t.Fatalf("alice: %v %q", err, out)
	}
	out, err = run("-u", testUser, "-e", "select * from nope")
	if err == nil || !strings.Contains(out, "ERROR 1146 (42S02)") {
		t.Fatalf("error display: %v %q", err, out)
	}
	backend.SetReady(false)
	out, err = run("-u", testUser, "-e", "select 1")
	if err == nil || !strings.Contains(out, "ERROR 1053 (08S01)") {
		t.Fatalf("not configured: %v %q", err, out)
	}
}

func TestMysqlslap(t *testing.T) {
	slap, err := exec.LookPath("mysqlslap")
	if err != nil {
		if slap, err = exec.LookPath("mariadb-slap"); err != nil {
			t.Skip("mysqlslap not installed")
		}
	}
	backend, dbName := mariaBackend(t)
	addr := startServer(t, backend, Options{})
	host, port, _ := net.SplitHostPort(addr)
	out, err := exec.Command(slap, "-h", host, "-P", port, "--protocol=tcp", "--skip-ssl", "-u", testUser,
		"--create-schema="+dbName, "--query=select 1", "--concurrency=4", "--iterations=3",
		"--number-of-queries=40").CombinedOutput()
	if err != nil {
		t.Fatalf("mysqlslap: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Average number of seconds to run all queries") {
		t.Fatalf("mysqlslap output:\n%s", out)
	}
	n := 0
	for _, r := range backend.Requests() {
		if r.SQL == "select 1" {
			n++
		}
	}
	if n < 40*3 {
		t.Fatalf("backend saw %d 'select 1', want >= 120", n)
	}
	_ = context.Background
}

func TestArrowTypesToMySQL(t *testing.T) {
	addr := startServer(t, frontendtest.NewBackend(frontendtest.AllTypesEngine()), Options{})
	d := openDB(t, addr, testUser, "", "", "")
	want := frontendtest.AllTypesText
	nulls := make([]string, len(want))
	for i := range nulls {
		nulls[i] = "NULL"
	}
	for name, got := range map[string][][]string{
		"text":   queryStrings(t, d, "types"),
		"binary": queryStrings(t, d, "types WHERE ?", 1),
	} {
		if len(got) != 2 {
			t.Fatalf("%s: %d rows", name, len(got))
		}
		if fmt.Sprint(got[0]) != fmt.Sprint(want) || fmt.Sprint(got[1]) != fmt.Sprint(nulls) {
			t.Errorf("%s protocol:\n got %q\nwant %q\nnulls %q", name, got[0], want, got[1])
		}
	}
	rows, err := d.Query("types")
	if err != nil {
		t.Fatal(err)
	}
	cts, _ := rows.ColumnTypes()
	rows.Close()
	var names []string
	for _, ct := range cts {
		names = append(names, ct.DatabaseTypeName())
	}
	wantNames := "TINYINT TINYINT SMALLINT INT BIGINT UNSIGNED TINYINT UNSIGNED SMALLINT UNSIGNED INT UNSIGNED BIGINT FLOAT DOUBLE DECIMAL VARCHAR BLOB DATE DATETIME TIMESTAMP TIME NULL"
	if strings.Join(names, " ") != wantNames {
		t.Fatalf("column types\n got %s\nwant %s", strings.Join(names, " "), wantNames)
	}
}

func TestKillQueryCancelsStatement(t *testing.T) {
	backend, dbName := mariaBackend(t)
	addr := startServer(t, backend, Options{})
	d := openDB(t, addr, testUser, "", dbName, "")
	d.SetMaxOpenConns(2)
	conn, err := d.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The proxy's connection id (from its handshake) is not MariaDB's CONNECTION_ID(), and
	// go-sql-driver does not expose it: find the running session through the server.
	done := make(chan error, 1)
	go func() {
		_, err := conn.ExecContext(context.Background(), "SELECT SLEEP(30)")
		done <- err
	}()
	if _, err := d.Exec(fmt.Sprintf("KILL QUERY %d", runningSession(t, addr))); err != nil {
		t.Fatal(err)
	}
	waitKilled(t, done)
	var me *mysql.MySQLError
	if _, err := d.Exec("KILL QUERY 999999"); !errors.As(err, &me) || me.Number != 1094 {
		t.Fatalf("unknown id: %v", err)
	}
}

func TestLargeResultsStream(t *testing.T) {
	backend, dbName := mariaBackend(t)
	addr := startServer(t, backend, Options{})
	d := openDB(t, addr, testUser, "", dbName, "")
	// Many rows, several engine batches.
	var count, sum int64
	rows, err := d.Query("SELECT seq, CONCAT('row-', seq) FROM seq_1_to_50000")
	if err != nil {
		t.Fatal(err)
	}
	count, sum = 0, 0
	for rows.Next() {
		var n int64
		var s string
		if err := rows.Scan(&n, &s); err != nil {
			t.Fatal(err)
		}
		if s != fmt.Sprintf("row-%d", n) {
			t.Fatalf("row %d: %q", n, s)
		}
		count++
		sum += n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if count != 50000 || sum != 50000*50001/2 {
		t.Fatalf("count %d sum %d", count, sum)
	}
}

// TestValueLargerThanAPacket sends an 18 MB value: more than one MySQL packet (16 MiB - 1), so
// the row is split and the client rejoins it.
func TestValueLargerThanAPacket(t *testing.T) {
	big := strings.Repeat("ab", 9_000_000)
	eng := frontendtest.FuncEngine(func(ctx context.Context, q *query.Request) (query.Rows, error) {
		b := array.NewStringBuilder(memory.DefaultAllocator)
		defer b.Release()
		b.Append(big)
		col := b.NewArray()
		defer col.Release()
		schema := arrow.NewSchema([]arrow.Field{{Name: "big", Type: arrow.BinaryTypes.String}}, nil)
		batch := array.NewRecordBatch(schema, []arrow.Array{col}, 1)
		defer batch.Release()
		return frontendtest.NewRecordRows(schema, "", batch), nil
	})
	addr := startServer(t, frontendtest.NewBackend(eng), Options{})
	for _, args := range [][]any{nil, {1}} { // text and binary protocol
		var got string
		q := "big"
		if args != nil {
			q = "big ?"
		}
		if err := openDB(t, addr, testUser, "", "", "maxAllowedPacket=0").QueryRow(q, args...).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != big {
			t.Fatalf("args %v: got %d bytes", args, len(got))
		}
	}
}

// TestGoMySQLClientCommands drives COM_INIT_DB, COM_PING, COM_STMT_* and COM_QUIT with
// go-mysql's own client.
func TestGoMySQLClientCommands(t *testing.T) {
	backend, dbName := mariaBackend(t)
	addr := startServer(t, backend, Options{})
	c, err := client.Connect(addr, testUser, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(); err != nil { // COM_PING
		t.Fatal(err)
	}
	if err := c.UseDB(dbName); err != nil { // COM_INIT_DB
		t.Fatal(err)
	}
	r, err := c.Execute("SELECT DATABASE()")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := r.GetString(0, 0); got != dbName {
		t.Fatalf("DATABASE() = %q after COM_INIT_DB %q", got, dbName)
	}
	st, err := c.Prepare("SELECT ? + 1, ?") // COM_STMT_PREPARE
	if err != nil {
		t.Fatal(err)
	}
	if st.ParamNum() != 2 {
		t.Fatalf("params %d", st.ParamNum())
	}
	r, err = st.Execute(41, "x") // COM_STMT_EXECUTE, binary rows
	if err != nil {
		t.Fatal(err)
	}
	n, _ := r.GetInt(0, 0)
	s, _ := r.GetString(0, 1)
	if n != 42 || s != "x" {
		t.Fatalf("prepared: %d %q", n, s)
	}
	if err := st.Close(); err != nil { // COM_STMT_CLOSE
		t.Fatal(err)
	}
	if err := c.Quit(); err != nil { // COM_QUIT
		t.Fatal(err)
	}
}

// TestClientHangupStopsEngineQuery: go-sql-driver closes its connection when a query's context
// ends; the proxy must then stop the engine query rather than let it run for nobody.
func TestClientHangupStopsEngineQuery(t *testing.T) {
	eng, directDSN, dbName := frontendtest.MariaDB(t)
	addr := startServer(t, frontendtest.NewBackend(eng), Options{})
	d := openDB(t, addr, testUser, "", dbName, "")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := d.QueryContext(ctx, "SELECT SLEEP(29.5)"); err == nil {
		t.Fatal("query outlived its context")
	}
	direct, err := sql.Open("mysql", directDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := direct.QueryRow("SELECT COUNT(*) FROM information_schema.processlist WHERE info = 'SELECT SLEEP(29.5)'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the engine query still runs after the client hung up")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTransactionsArePinned: BEGIN pins one engine connection, so a transaction behaves as on
// a direct connection (go-sql-driver's Begin/Commit/Rollback, checked from MariaDB directly).
func TestTransactionsArePinned(t *testing.T) {
	eng, directDSN, dbName := frontendtest.MariaDB(t)
	frontendtest.Exec(t, eng, "CREATE TABLE acct (id INT PRIMARY KEY) ENGINE=InnoDB")
	addr := startServer(t, frontendtest.NewBackend(eng), Options{})
	d := openDB(t, addr, testUser, "", dbName, "")
	direct, err := sql.Open("mysql", directDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	count := func() (n int) {
		if err := direct.QueryRow("SELECT COUNT(*) FROM acct").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	tx, err := d.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int{1, 2} {
		if _, err := tx.Exec("INSERT INTO acct VALUES (?)", id); err != nil {
			t.Fatal(err)
		}
	}
	var inTx int
	if err := tx.QueryRow("SELECT COUNT(*) FROM acct").Scan(&inTx); err != nil || inTx != 2 {
		t.Fatalf("inside the transaction: %d %v", inTx, err)
	}
	if count() != 0 {
		t.Fatal("uncommitted rows visible outside the transaction")
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if count() != 0 {
		t.Fatal("rolled-back rows visible")
	}
	tx, _ = d.Begin()
	tx.Exec("INSERT INTO acct VALUES (3)")
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if count() != 1 {
		t.Fatalf("after commit: %d rows", count())
	}
	// A client that disconnects inside a transaction rolls it back.
	c, err := client.Connect(addr, testUser, "", dbName)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Execute("START TRANSACTION"); err != nil {
		t.Fatal(err)
	}
	if !c.IsInTransaction() {
		t.Fatal("OK packet after START TRANSACTION lacks SERVER_STATUS_IN_TRANS")
	}
	if _, err := c.Execute("INSERT INTO acct VALUES (4)"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	waitNoOpenTransaction(t, direct, dbName)
	// The row lock the insert took is free: a leaked transaction would hold it, and this
	// insert would time out after 1s instead of succeeding.
	ctx := context.Background()
	probe, err := direct.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	if _, err := probe.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := probe.ExecContext(ctx, "INSERT INTO acct VALUES (4)"); err != nil {
		t.Fatalf("row 4 is still locked after the client disconnected inside a transaction: %v", err)
	}
	if count() != 2 {
		t.Fatalf("after disconnecting inside a transaction and inserting 4 directly: %d rows", count())
	}
	// A BEGIN behind a driver's comment pins the connection as BEGIN does.
	c, err = client.Connect(addr, testUser, "", dbName)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, stmt := range []string{"/* app=billing */ BEGIN", "# app=billing\nSTART TRANSACTION"} {
		if _, err := c.Execute(stmt); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Execute("INSERT INTO acct VALUES (5)"); err != nil {
			t.Fatal(err)
		}
		if count() != 2 || !c.IsInTransaction() {
			t.Fatalf("after %q and an insert: %d rows visible elsewhere (want 2), in transaction %v", stmt, count(), c.IsInTransaction())
		}
		if _, err := c.Execute("/* app=billing */ ROLLBACK"); err != nil {
			t.Fatal(err)
		}
		if count() != 2 {
			t.Fatalf("after rollback: %d rows", count())
		}
	}
}

// waitNoOpenTransaction waits until no connection to database db has an InnoDB transaction
// open, within 10s: the proxy must roll back (or close) the engine connection of a client
// that hung up inside a transaction, not keep it idle with the transaction still open.
func waitNoOpenTransaction(t *testing.T, direct *sql.DB, db string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		err := direct.QueryRow(`SELECT COUNT(*) FROM information_schema.innodb_trx t
			JOIN information_schema.processlist p ON p.id = t.trx_mysql_thread_id WHERE p.db = ?`, db).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d transactions on %s still open after the client disconnected", n, db)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitKilled waits for the statement whose error done carries (a SLEEP(30)) to end as killed,
// 1317: had the kill not stopped it, it would end without an error.
func waitKilled(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1317 {
			t.Fatalf("killed statement: %v", err)
		}
	case <-time.After(time.Minute): // a hang guard, past the statement's own 30 s
		t.Fatal("the killed statement never ended")
	}
}
