package mysqlwire

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
	"github.com/queryflux/queryflux/node/proxy"
)

// loopConn is one client connection of d, warmed up: it ran a COM_QUERY, so its next ones go
// on the event loop.
func loopConn(t *testing.T, d *sql.DB) *sql.Conn {
	t.Helper()
	conn, err := d.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var one int
	if err := conn.QueryRowContext(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("warm-up: %d, %v", one, err)
	}
	return conn
}

// connAnswer is textAnswer on one connection.
func connAnswer(t *testing.T, c *sql.Conn, q string) answer {
	t.Helper()
	var a answer
	rows, err := c.QueryContext(context.Background(), q)
	if err != nil {
		return errAnswer(t, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	for rows.Next() {
		vals, err := rawRow(rows, len(cols))
		if err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(vals))
		for i, v := range vals {
			row[i] = fmt.Sprintf("%q", v)
			if v == nil {
				row[i] = "NULL"
			}
		}
		a.rows = append(a.rows, row)
	}
	if err := rows.Err(); err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) {
			a.errNum, a.errState, a.errMsg = me.Number, string(me.SQLState[:]), me.Message
		} else {
			a.errMsg = err.Error()
		}
	}
	return a
}

// onLoop runs fn and requires the server at addr to have relayed want statements on its event
// loop meanwhile.
func onLoop(t *testing.T, addr string, want int64, fn func()) {
	t.Helper()
	s := serverOf(t, addr)
	before := s.LoopStatements()
	fn()
	if got := s.LoopStatements() - before; got != want {
		t.Fatalf("the event loop relayed %d statements, want %d", got, want)
	}
}

// TestLoopRelaysAsDirect: statements of a warmed-up connection are relayed on the event loop
// (the counter proves it) and answer as MariaDB does: rows, NULLs, no rows, writes, an error at
// once and an error after rows were sent, thousands of rows, and a row over 16 MiB (split
// across packets); history gets each one's rows and row bytes.
func TestLoopRelaysAsDirect(t *testing.T) {
	f := coreServer(t, coreSetup{})
	proxied := openDB(t, f.addr, testUser, "", f.dbName, "")
	conn := loopConn(t, proxied)
	if _, err := f.direct.Exec("CREATE TABLE n (i INT PRIMARY KEY, s VARCHAR(40))"); err != nil {
		t.Fatal(err)
	}
	reads := []string{
		"SELECT 1, -1.5e300, 'x', NULL, CAST(2.5 AS DECIMAL(4,2)), DATE '2020-01-02'",
		"SELECT * FROM n",
		"SELECT seq, CONCAT('row-', seq) FROM seq_1_to_20000",
		"SELECT * FROM no_such_table",
		// The engine streams rows, then fails at row 15000: an ERR in place of the EOF.
		"SELECT seq FROM seq_1_to_30000 WHERE IF(seq = 15000, (SELECT 1 UNION SELECT 2), 1)",
		"SELECT REPEAT('z', 70000) AS big",
	}
	onLoop(t, f.addr, int64(len(reads)), func() {
		for _, q := range reads {
			got, want := connAnswer(t, conn, q), connAnswer(t, oneConn(t, f.direct), q)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%q differs\n got %.300v\nwant %.300v", q, got, want)
			}
		}
	})
	if a := connAnswer(t, conn, reads[4]); len(a.rows) < 1000 || a.errNum != 1242 {
		t.Fatalf("error after rows: %d rows, error %d %q (want rows, then 1242)", len(a.rows), a.errNum, a.errMsg)
	}
	onLoop(t, f.addr, 3, func() {
		res, err := conn.ExecContext(context.Background(), "INSERT INTO n VALUES (1, 'a'), (2, 'b')")
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := res.RowsAffected(); n != 2 {
			t.Fatalf("insert: %d rows affected", n)
		}
		if _, err := conn.ExecContext(context.Background(), "INSERT INTO n VALUES (1, 'dup')"); err == nil || !strings.Contains(err.Error(), "1062") {
			t.Fatalf("duplicate key: %v", err)
		}
		var a, b string
		if err := conn.QueryRowContext(context.Background(), "SELECT REPEAT('a', 9000000), REPEAT('b', 9000000)").Scan(&a, &b); err != nil {
			t.Fatal(err)
		}
		if a != strings.Repeat("a", 9_000_000) || b != strings.Repeat("b", 9_000_000) {
			t.Fatalf("big row: %d and %d bytes", len(a), len(b))
		}
	})
	recs := f.hist.Find(reads[2])
	if len(recs) != 1 || recs[0].Rows != 20000 || recs[0].Status != proxy.StatusSucceeded {
		t.Fatalf("history of %q: %+v", reads[2], recs)
	}
	var wantBytes int64
	for i := 1; i <= 20000; i++ {
		v := fmt.Sprint(i)
		wantBytes += int64(1 + len(v) + 1 + len("row-"+v))
	}
	if recs[0].Bytes != wantBytes {
		t.Fatalf("history bytes %d, want %d", recs[0].Bytes, wantBytes)
	}
	if recs := f.hist.Find(reads[3]); len(recs) != 1 || recs[0].Status == proxy.StatusSucceeded {
		t.Fatalf("history of a failed statement: %+v", recs)
	}
	if recs := f.hist.Find("SELECT REPEAT('a', 9000000), REPEAT('b', 9000000)"); len(recs) != 1 || recs[0].Rows != 1 || recs[0].Bytes < 18_000_000 {
		t.Fatalf("history of the big row: %+v", recs)
	}
}

// oneConn is one connection of d (for connAnswer on the direct side).
func oneConn(t *testing.T, d *sql.DB) *sql.Conn {
	t.Helper()
	c, err := d.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestLoopHandsBack: what the loop does not relay goes to the session's goroutine and comes
// back right — prepared statements, SET and SHOW WARNINGS answered by the session, a
// transaction, a statement with warnings (read for SHOW WARNINGS) — and plain statements
// between them are relayed on the loop again.
func TestLoopHandsBack(t *testing.T) {
	f := coreServer(t, coreSetup{})
	proxied := openDB(t, f.addr, testUser, "", f.dbName, "")
	conn := loopConn(t, proxied)
	ctx := context.Background()
	if _, err := f.direct.Exec("CREATE TABLE t (i INT)"); err != nil {
		t.Fatal(err)
	}
	var n int
	onLoop(t, f.addr, 2, func() {
		// The prepared statement is handed back; the session's goroutine then reads the next
		// command (a COM_QUERY) and hands it to the loop, which takes the one after it too.
		if err := conn.QueryRowContext(ctx, "SELECT ? + 1", 41).Scan(&n); err != nil || n != 42 {
			t.Fatalf("prepared: %d, %v", n, err)
		}
		for _, q := range []string{"SELECT 2", "SELECT 2"} {
			if err := conn.QueryRowContext(ctx, q).Scan(&n); err != nil || n != 2 {
				t.Fatalf("select: %d, %v", n, err)
			}
		}
	})
	onLoop(t, f.addr, 2, func() { // SELECT 1/0 warns: the goroutine reads the warning
		if got := connAnswer(t, conn, "SELECT 1/0"); fmt.Sprint(got.rows) != "[[NULL]]" {
			t.Fatalf("1/0: %+v", got)
		}
		if got := connAnswer(t, conn, "SHOW WARNINGS"); !strings.Contains(fmt.Sprint(got.rows), "1365") {
			t.Fatalf("SHOW WARNINGS after 1/0: %+v", got)
		}
		if err := conn.QueryRowContext(ctx, "SELECT 3").Scan(&n); err != nil || n != 3 {
			t.Fatalf("select: %d, %v", n, err)
		}
	})
	onLoop(t, f.addr, 2, func() { // the transaction's statements run on its pinned connection, the two after it on the loop
		for _, q := range []string{"BEGIN", "INSERT INTO t VALUES (1)", "ROLLBACK", "SELECT 4"} {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM t").Scan(&n); err != nil || n != 0 {
			t.Fatalf("rolled back: %d rows, %v", n, err)
		}
	})
}

// TestLoopKillQuery: KILL QUERY from another client stops a statement relayed on the loop:
// the client gets 1317, the engine stops, history has it cancelled, and the connection serves
// on.
func TestLoopKillQuery(t *testing.T) {
	f := coreServer(t, coreSetup{})
	proxied := openDB(t, f.addr, testUser, "", f.dbName, "")
	conn := loopConn(t, proxied)
	q := "SELECT SLEEP(30) AS kill_me_on_loop"
	done := make(chan error, 1)
	onLoop(t, f.addr, 2, func() {
		go func() {
			_, err := conn.ExecContext(context.Background(), q)
			done <- err
		}()
		if _, err := proxied.Exec(fmt.Sprintf("KILL QUERY %d", runningSession(t, f.addr))); err != nil {
			t.Fatal(err)
		}
		waitKilled(t, done)
		waitEngineIdle(t, f.direct, "kill_me_on_loop")
		var n int
		if err := conn.QueryRowContext(context.Background(), "SELECT 7").Scan(&n); err != nil || n != 7 {
			t.Fatalf("after the kill: %d, %v", n, err)
		}
	})
	if recs := f.hist.Find(q); len(recs) != 1 || recs[0].Status != proxy.StatusCancelled {
		t.Fatalf("history %+v", recs)
	}
}

// TestLoopMariaDBClient: the mariadb command-line client's statements (each a COM_QUERY) are
// relayed on the loop, with what MariaDB itself prints.
func TestLoopMariaDBClient(t *testing.T) {
	cli, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skip("mariadb client not installed")
	}
	f := coreServer(t, coreSetup{})
	script := "SELECT 1 AS a; SELECT seq FROM seq_1_to_3; SELECT 'x' AS y, NULL AS z; SELECT * FROM nope;"
	run := func(addr, user, db string) string {
		host, port, _ := strings.Cut(addr, ":")
		out, _ := exec.Command(cli, "-h", host, "-P", port, "--protocol=tcp", "--skip-ssl", "-u", user, "-B", db, "-e", script).CombinedOutput()
		return string(out)
	}
	s := serverOf(t, f.addr)
	before := s.LoopStatements()
	got := run(f.addr, testUser, f.dbName)
	want := strings.ReplaceAll(run("127.0.0.1:3306", "root", f.dbName), "mysql.nope", f.dbName+".nope")
	if got != want || !strings.Contains(got, "x\tNULL") || !strings.Contains(got, "1146") {
		t.Fatalf("mariadb printed through the proxy:\n%s\nand from MariaDB:\n%s", got, want)
	}
	if n := s.LoopStatements() - before; n < 3 {
		t.Fatalf("the loop relayed %d of the client's statements", n)
	}
}

// TestLoopKeepsPings: a pool's pings between statements (go-sql-driver's Ping, a COM_PING)
// are answered on the event loop, so the session stays there: every statement after them is
// relayed on the loop, and the ping's OK carries the session's status as the goroutine's does.
func TestLoopKeepsPings(t *testing.T) {
	f := coreServer(t, coreSetup{})
	proxied := openDB(t, f.addr, testUser, "", f.dbName, "")
	conn := loopConn(t, proxied)
	ctx := context.Background()
	onLoop(t, f.addr, 10, func() {
		for i := range 10 {
			for range 2 {
				if err := conn.PingContext(ctx); err != nil {
					t.Fatalf("ping: %v", err)
				}
			}
			var n int
			if err := conn.QueryRowContext(ctx, fmt.Sprintf("SELECT %d", i)).Scan(&n); err != nil || n != i {
				t.Fatalf("select %d: %d, %v", i, n, err)
			}
		}
	})
	c, err := client.Connect(f.addr, testUser, "", f.dbName)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 2 { // on the loop from the first statement on
		if _, err := c.Execute("SELECT 1"); err != nil {
			t.Fatal(err)
		}
	}
	for range 8 {
		if err := c.Ping(); err != nil || !c.IsAutoCommit() || c.IsInTransaction() {
			t.Fatalf("ping on the loop: %v, autocommit %v, in a transaction %v", err, c.IsAutoCommit(), c.IsInTransaction())
		}
	}
}

// TestLoopTakesFirstStatements: the first statement of a session, and the first after a
// command the loop does not take (a prepared statement's), are relayed on the loop too.
func TestLoopTakesFirstStatements(t *testing.T) {
	f := coreServer(t, coreSetup{})
	proxied := openDB(t, f.addr, testUser, "", f.dbName, "")
	ctx := context.Background()
	onLoop(t, f.addr, 1, func() {
		c := oneConn(t, proxied) // a new session
		var n int
		if err := c.QueryRowContext(ctx, "SELECT 5").Scan(&n); err != nil || n != 5 {
			t.Fatalf("first statement: %d, %v", n, err)
		}
		if err := c.QueryRowContext(ctx, "SELECT ? + 1", 5).Scan(&n); err != nil || n != 6 {
			t.Fatalf("prepared: %d, %v", n, err)
		}
	})
	onLoop(t, f.addr, 1, func() {
		c := oneConn(t, proxied)
		var n int
		if err := c.QueryRowContext(ctx, "SELECT ? + 1", 6).Scan(&n); err != nil || n != 7 {
			t.Fatalf("prepared: %d, %v", n, err)
		}
		if err := c.QueryRowContext(ctx, "SELECT 8").Scan(&n); err != nil || n != 8 {
			t.Fatalf("after a prepared statement: %d, %v", n, err)
		}
	})
}

// paths are the two ways a session relays a statement.
var paths = []struct {
	name   string
	noLoop bool
}{{"loop", false}, {"goroutine", true}}

// TestClientGoneMidResult: a client that disconnects while its result is relayed stops the
// statement on the engine before its slot is given back: when the statement is reported, the
// engine runs it no more (a slot freed earlier lets the next statement in while this one still
// runs; this one writes each row it sends to a table, so it takes a while to end once stopped:
// it rolls them back). History has it cancelled (the client went), on the loop and on the
// goroutine; other clients go on.
func TestClientGoneMidResult(t *testing.T) {
	for _, path := range paths {
		t.Run(path.name, func(t *testing.T) {
			q := "SELECT write_row(seq), REPEAT('x', 300) FROM seq_1_to_5000000"
			var f *coreFixture
			runningAtFinish := make(chan int64, 1)
			f = coreServer(t, coreSetup{noLoop: path.noLoop, onFinish: func(r proxy.Record) {
				if r.SQL == q {
					runningAtFinish <- engineStatements(t, f.direct)
				}
			}})
			for _, stmt := range mytest.RowWriter {
				if _, err := f.direct.Exec(stmt); err != nil {
					t.Fatal(err)
				}
			}
			proxied := openDB(t, f.addr, testUser, "", f.dbName, "")
			conn := loopConn(t, proxied)
			rows, err := conn.QueryContext(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 10 && rows.Next(); i++ {
			}
			conn.Raw(func(c any) error { return driverClose(c) })
			rows.Close()
			select {
			case n := <-runningAtFinish:
				if n != 0 {
					t.Fatalf("the engine still ran the statement when its slot was given back (%d statements)", n)
				}
			case <-time.After(30 * time.Second): // a hang guard: the session reports at once
				t.Fatal("the statement was not reported")
			}
			if recs := f.hist.Find(q); len(recs) != 1 || recs[0].Status != proxy.StatusCancelled || recs[0].Rows < 10 {
				t.Fatalf("history %+v", recs)
			}
			var n int
			if err := loopConn(t, proxied).QueryRowContext(context.Background(), "SELECT 8").Scan(&n); err != nil || n != 8 {
				t.Fatalf("another client: %d, %v", n, err)
			}
		})
	}
}

// engineStatements is how many statements MariaDB runs in direct's database, besides the one
// asking (found by database rather than by text: while a statement runs a stored function,
// the process list shows the function's statement).
func engineStatements(t *testing.T, direct *sql.DB) (n int64) {
	err := direct.QueryRow("SELECT COUNT(*) FROM information_schema.processlist WHERE db = DATABASE() AND info IS NOT NULL AND id <> CONNECTION_ID()").Scan(&n)
	if err != nil {
		t.Error(err)
	}
	return n
}

// engineRuns is how many statements containing marker MariaDB runs.
func engineRuns(t *testing.T, direct *sql.DB, marker string) (n int) {
	err := direct.QueryRow("SELECT COUNT(*) FROM information_schema.processlist WHERE info LIKE ? AND info NOT LIKE '%processlist%'", "%"+marker+"%").Scan(&n)
	if err != nil {
		t.Error(err)
	}
	return n
}

// engineThread is the MariaDB connection id running the statement that contains marker.
func engineThread(t *testing.T, direct *sql.DB, marker string) int64 {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var id int64
		err := direct.QueryRow("SELECT id FROM information_schema.processlist WHERE info LIKE ? AND info NOT LIKE '%processlist%'", "%"+marker+"%").Scan(&id)
		if err == nil {
			return id
		}
		if !errors.Is(err, sql.ErrNoRows) {
			t.Fatal(err)
		}
	}
	t.Fatalf("the engine runs no statement with %q", marker)
	return 0
}

// TestEngineGoneMidResult: when the engine's connection ends in the middle of a result (an
// admin's KILL CONNECTION on MariaDB), the client gets the rows so far, then an error packet it
// can read, on the loop and on the goroutine; history has the statement failed, and the session
// serves on (not on the killed connection).
func TestEngineGoneMidResult(t *testing.T) {
	for _, path := range paths {
		t.Run(path.name, func(t *testing.T) {
			f := coreServer(t, coreSetup{noLoop: path.noLoop})
			proxied := openDB(t, f.addr, testUser, "", f.dbName, "")
			conn := loopConn(t, proxied)
			q := "SELECT seq, REPEAT('x', 1000) AS engine_gone FROM seq_1_to_5000000"
			rows, err := conn.QueryContext(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for ; n < 10 && rows.Next(); n++ {
			}
			if _, err := f.direct.Exec(fmt.Sprintf("KILL CONNECTION %d", engineThread(t, f.direct, "engine_gone"))); err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				n++
			}
			// 1429 (the engine cannot be reached) when its connection just ended; MariaDB's own
			// 1927 (connection killed) when it could say so first.
			var me *mysql.MySQLError
			if err := rows.Err(); !errors.As(err, &me) || me.Number != 1429 && me.Number != 1927 || n >= 5000000 {
				t.Fatalf("after %d rows: %v (want an error packet: 1429 or 1927)", n, err)
			}
			rows.Close()
			var one int
			if err := conn.QueryRowContext(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
				t.Fatalf("the session after it: %d, %v", one, err)
			}
			if recs := f.hist.Find(q); len(recs) != 1 || recs[0].Status != proxy.StatusFailed || recs[0].Rows < 10 {
				t.Fatalf("history %+v", recs)
			}
		})
	}
}

// limitedCore is coreServer with its engine logged in as a MariaDB user allowed one connection
// at a time: the connection a KILL QUERY needs is refused, as by a server at max_connections.
func limitedCore(t *testing.T, s coreSetup) *coreFixture {
	t.Helper()
	dsn, name := mytest.NewDatabase(t)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Params = map[string]string{"time_zone": "'+00:00'"}
	direct, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	user, password := "qfk_"+name[len(name)-12:], "one-connection"
	for _, stmt := range []string{
		fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s' WITH MAX_USER_CONNECTIONS 1", user, password),
		fmt.Sprintf("GRANT ALL ON `%s`.* TO '%s'@'%%'", name, user),
	} {
		if _, err := direct.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = direct.Exec(fmt.Sprintf("DROP USER '%s'@'%%'", user)) })
	eng, err := mysqlengine.Open(mysqlengine.Config{Name: "mariadb", Addr: cfg.Addr, User: user, Password: password, Database: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	f := serveCore(t, "maria", eng, s)
	f.dbName, f.direct = name, direct
	return f
}

// TestCancelWithoutKillConnection: when the connection that would send KILL QUERY cannot be
// made (MariaDB refuses the engine's user a second connection), a cancelled statement's own
// connection is cut instead: the client gets 1317 at once rather than when the statement ends
// on its own (a SLEEP that sends nothing meanwhile), MariaDB stops it (it looks at its client
// between slices of the sleep), history has it cancelled, and the next statement gets a
// connection; on the loop and on the goroutine.
func TestCancelWithoutKillConnection(t *testing.T) {
	for _, path := range paths {
		t.Run(path.name, func(t *testing.T) {
			f := limitedCore(t, coreSetup{noLoop: path.noLoop})
			proxied := openDB(t, f.addr, testUser, "", f.dbName, "")
			conn := loopConn(t, proxied)
			q := "SELECT SLEEP(30) AS no_kill_conn"
			loopBefore := serverOf(t, f.addr).LoopStatements()
			done := make(chan error, 1)
			go func() {
				_, err := conn.ExecContext(context.Background(), q)
				done <- err
			}()
			if _, err := proxied.Exec(fmt.Sprintf("KILL QUERY %d", runningSession(t, f.addr))); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				var me *mysql.MySQLError
				if !errors.As(err, &me) || me.Number != 1317 {
					t.Fatalf("cancelled statement: %v (want 1317)", err)
				}
			case <-time.After(10 * time.Second): // the SLEEP would end at 30 s
				t.Fatal("the cancelled statement still runs after 10 s")
			}
			if onLoop := serverOf(t, f.addr).LoopStatements() > loopBefore; onLoop == path.noLoop {
				t.Fatalf("relayed on the loop: %v", onLoop)
			}
			waitEngineIdle(t, f.direct, "no_kill_conn")
			if recs := f.hist.Find(q); len(recs) != 1 || recs[0].Status != proxy.StatusCancelled {
				t.Fatalf("history %+v", recs)
			}
			var n int
			if err := conn.QueryRowContext(context.Background(), "SELECT 9").Scan(&n); err != nil || n != 9 {
				t.Fatalf("after the cancel: %d, %v", n, err)
			}
		})
	}
}

// TestLoopEngineConnClosedWhileIdle: an engine connection the server closed while it sat idle
// in the loop's pool for over a second is found out before it serves: the next statement runs
// on a fresh one, on the loop.
func TestLoopEngineConnClosedWhileIdle(t *testing.T) {
	f := coreServer(t, coreSetup{})
	proxied := openDB(t, f.addr, testUser, "", f.dbName, "")
	conn := loopConn(t, proxied)
	admin := oneConn(t, f.direct)
	ctx := context.Background()
	rows, err := admin.QueryContext(ctx, "SELECT id FROM information_schema.processlist WHERE db = ? AND command = 'Sleep' AND id <> CONNECTION_ID()", f.dbName)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if len(ids) == 0 {
		t.Fatal("no idle engine connection")
	}
	for _, id := range ids { // the engine's idle loop connection (and the direct pool's spares)
		if _, err := admin.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1100 * time.Millisecond) // past mysqlengine's loopCheckIdleAfter
	onLoop(t, f.addr, 1, func() {
		var n int
		if err := conn.QueryRowContext(ctx, "SELECT 10").Scan(&n); err != nil || n != 10 {
			t.Fatalf("on a connection the engine closed: %d, %v", n, err)
		}
	})
}

// TestLoopPingsFromAClientThatReadsLate: a client that sends a flood of pings before reading
// any answer fills its socket: the loop answers pings until its answers stop fitting (the last
// perhaps in part), the session leaves the loop and its goroutine answers the rest, and the
// client reads every answer whole and in the order of its commands: two statements in the
// flood, one early (relayed on the loop, the pings after it held meanwhile) and one last, are
// answered in their places.
func TestLoopPingsFromAClientThatReadsLate(t *testing.T) {
	f := coreServer(t, coreSetup{})
	c, err := client.Connect(f.addr, testUser, "", f.dbName)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Execute("SELECT 1"); err != nil {
		t.Fatal(err)
	}
	waitLoop(t, f.addr, true)
	s := serverOf(t, f.addr)
	// 2.25 MB of pings, 4.95 MB of answers: more than the proxy's send buffer (4 MiB at most on
	// Linux) and the client's receive buffer (not grown while nothing is read) hold.
	const pings, early = 450_000, 1000
	ping := []byte{1, 0, 0, 0, gomysql.COM_PING}
	flood := append(bytes.Repeat(ping, early), comQuery("SELECT 'early'")...)
	flood = append(append(flood, bytes.Repeat(ping, pings-early)...), comQuery("SELECT 'last'")...)
	nc := c.Conn.Conn
	sent := make(chan error, 1)
	go func() {
		_, err := nc.Write(flood)
		sent <- err
	}()
	waitLoop(t, f.addr, false) // the loop's answers no longer fit: the goroutine has the session
	r := bufio.NewReader(nc)
	var first []byte
	for i := range pings {
		if i == early {
			readTextValue(t, r, "early")
		}
		seq, p := readClientPacket(t, r)
		if first == nil {
			first = p
		}
		if seq != 1 || len(p) < 7 || p[0] != gomysql.OK_HEADER || !bytes.Equal(p, first) {
			t.Fatalf("answer %d: sequence %d, % x (want an OK as the first, % x, sequence 1)", i, seq, p, first)
		}
	}
	readTextValue(t, r, "last")
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if r.Buffered() > 0 {
		t.Fatalf("%d bytes after the last answer", r.Buffered())
	}
	if n := s.loopPings.Load(); n == 0 || n >= pings {
		t.Fatalf("the loop answered %d of %d pings, want some, not all", n, pings)
	}
	res, err := c.Execute("SELECT 2")
	if err != nil {
		t.Fatalf("after the pings: %v", err)
	}
	if n, _ := res.GetInt(0, 0); n != 2 {
		t.Fatalf("after the pings: SELECT 2 answered %d (a stray answer?)", n)
	}
}

// comQuery frames sql as a client's COM_QUERY.
func comQuery(sql string) []byte {
	n := 1 + len(sql)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), 0, gomysql.COM_QUERY}, sql...)
}

// readClientPacket reads one packet the proxy sent its client: its sequence number and payload.
func readClientPacket(t *testing.T, r io.Reader) (seq byte, payload []byte) {
	t.Helper()
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		t.Fatal(err)
	}
	p := make([]byte, int(h[0])|int(h[1])<<8|int(h[2])<<16)
	if _, err := io.ReadFull(r, p); err != nil {
		t.Fatal(err)
	}
	return h[3], p
}

// readTextValue reads a text result set of one column and one row, and requires its value to
// be want.
func readTextValue(t *testing.T, r io.Reader, want string) {
	t.Helper()
	var got [5][]byte
	for i := range got {
		seq, p := readClientPacket(t, r)
		if int(seq) != i+1 {
			t.Fatalf("%q's answer, packet %d: sequence %d", want, i, seq)
		}
		got[i] = p
	}
	row := append([]byte{byte(len(want))}, want...)
	if !bytes.Equal(got[0], []byte{1}) || got[2][0] != gomysql.EOF_HEADER || !bytes.Equal(got[3], row) || got[4][0] != gomysql.EOF_HEADER {
		t.Fatalf("want the result set of %q, got % x", want, got)
	}
}

// TestLoopEngineErrorThatEndsTheConnection: an engine's ERR that comes as it closes the
// connection (MariaDB's 1927, connection killed; a fake engine sends it on cue) reaches the
// client on the loop, and the dead engine connection does not go back to the loop's pool: the
// next statement, on the loop too, runs on a fresh one.
func TestLoopEngineErrorThatEndsTheConnection(t *testing.T) {
	fake := mytest.NewFake(t, func(sql string) ([][]byte, bool) {
		switch sql {
		case "SELECT 1":
			return mytest.FakeResult("1", "1"), false
		case "SELECT ends_conn":
			return [][]byte{mytest.FakeError(1927, "70100", "Connection was killed")}, true
		}
		return [][]byte{mytest.FakeOK()}, false
	})
	eng, err := mysqlengine.Open(mysqlengine.Config{Name: "fake", Addr: fake.Addr, User: mytest.FakeUser})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	f := serveCore(t, "fake", eng, coreSetup{})
	conn := loopConn(t, openDB(t, f.addr, testUser, "", "", ""))
	ctx := context.Background()
	onLoop(t, f.addr, 2, func() {
		var me *mysql.MySQLError
		if _, err := conn.ExecContext(ctx, "SELECT ends_conn"); !errors.As(err, &me) || me.Number != 1927 {
			t.Fatalf("an error that ends the engine connection: %v, want 1927", err)
		}
		var n int
		if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&n); err != nil || n != 1 {
			t.Fatalf("the statement after it: %d, %v", n, err)
		}
	})
	if n := fake.Logins.Load(); n != 2 {
		t.Fatalf("%d engine logins, want 2 (the first connection, then a fresh one)", n)
	}
}

// waitLoop waits until the only session of the server at addr is on its event loop (on), or
// off it.
func waitLoop(t *testing.T, addr string, on bool) {
	t.Helper()
	s := serverOf(t, addr)
	onLoop := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, h := range s.sessions {
			h.idleMu.Lock()
			defer h.idleMu.Unlock()
			return h.onloop != nil
		}
		return false
	}
	for deadline := time.Now().Add(60 * time.Second); onLoop() != on; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the session is not on the loop: %v after 60 s", onLoop())
		}
	}
}

// TestLoopWithCostsNothingOffTheLoop: a statement the goroutine reads, for a session that
// cannot go on the loop (here: no socket to lend), is neither copied nor read for the loop.
func TestLoopWithCostsNothingOffTheLoop(t *testing.T) {
	h := &session{}
	data := append([]byte{gomysql.COM_QUERY}, "SELECT a_column_named_at_some_length FROM a_table"...)
	allocs := testing.AllocsPerRun(100, func() {
		if ran, err := h.loopWith(data); ran || err != nil {
			t.Fatalf("loopWith off the loop: ran %v, %v", ran, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("loopWith off the loop: %v allocations per statement, want 0", allocs)
	}
}

// TestLoopStatementsGetTheirOwnRequests: the loop fills one request for each statement it
// admits, so each must reach the core as its own, with nothing left of the one before (the
// Tags a check set, a SQL it rewrote); the rewritten one runs as rewritten (on the goroutine),
// and history has every statement as it ran.
func TestLoopStatementsGetTheirOwnRequests(t *testing.T) {
	var seen checkLog
	f := coreServer(t, coreSetup{check: seen.check(func(req *query.Request) string {
		line := fmt.Sprintf("%s %q %q", req.SQL, req.Database, req.Tags)
		req.Tags = append(req.Tags, "checked")
		if req.SQL == "SELECT 102" {
			req.SQL = "SELECT 120"
		}
		return line
	})})
	proxied := openDB(t, f.addr, testUser, "", f.dbName, "")
	conn := loopConn(t, proxied)
	seen.take()
	onLoop(t, f.addr, 3, func() {
		for i, want := range []int{101, 120, 103, 104} {
			var n int
			if err := conn.QueryRowContext(context.Background(), fmt.Sprintf("SELECT %d", 101+i)).Scan(&n); err != nil || n != want {
				t.Fatalf("SELECT %d: %d, %v; want %d", 101+i, n, err, want)
			}
		}
	})
	var want []string
	for i := range 4 {
		want = append(want, fmt.Sprintf("SELECT %d %q %q", 101+i, f.dbName, []string(nil)))
	}
	if got := seen.take(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the core saw\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, q := range []string{"SELECT 101", "SELECT 120", "SELECT 103", "SELECT 104"} {
		if recs := f.hist.Find(q); len(recs) != 1 || recs[0].Database != f.dbName || recs[0].Status != proxy.StatusSucceeded {
			t.Fatalf("history of %s: %+v", q, recs)
		}
	}
}

// A session whose statements all take the Arrow path (here: passthrough off) leaves the loop
// for a while after a few of them, rather than going back on it to wait for each next one (a
// pair per statement, and a hand-over each way); its answers are the same.
func TestArrowPathSessionLeavesTheLoop(t *testing.T) {
	f := coreServer(t, coreSetup{noPassthrough: true})
	conn := loopConn(t, openDB(t, f.addr, testUser, "", f.dbName, ""))
	s := serverOf(t, f.addr)
	const statements = 200
	before := s.LoopEntries()
	for i := range statements {
		var n int
		if err := conn.QueryRowContext(context.Background(), fmt.Sprintf("SELECT %d", i)).Scan(&n); err != nil || n != i {
			t.Fatalf("statement %d: %d, %v", i, n, err)
		}
	}
	// loopHandOffsMax entries, then loopBackoff commands off the loop, and again.
	if got, most := s.LoopEntries()-before, int64(statements/loopBackoff+1)*(loopHandOffsMax+1); got > most {
		t.Fatalf("%d statements on the Arrow path went on the loop %d times, want at most %d", statements, got, most)
	}
}

// TestLoopStatementAllocations pins what a statement relayed on the loop allocates, the
// proxy's whole share (the client here allocates nothing: rawClient), through a real core
// that keeps no records: the event loop's admission, report and engine connection hand-over
// (BenchmarkLoopStatement shows the same with -benchmem).
func TestLoopStatementAllocations(t *testing.T) {
	f := coreServer(t, coreSetup{noRecords: true})
	c := newRawClient(t, f.addr, f.dbName)
	q, one := comQuery("SELECT 1"), []byte{1, '1'}
	for range 2 {
		if err := c.query(q, one); err != nil {
			t.Fatal(err)
		}
	}
	s := serverOf(t, f.addr)
	before := s.LoopStatements()
	allocs := testing.AllocsPerRun(200, func() {
		if err := c.query(q, one); err != nil {
			t.Fatal(err)
		}
	})
	if n := s.LoopStatements() - before; n != 201 {
		t.Fatalf("the event loop relayed %d of 201 statements", n)
	}
	if allocs > loopStatementAllocs {
		t.Fatalf("a statement on the loop allocates %v objects, want at most %d", allocs, loopStatementAllocs)
	}
}

// loopStatementAllocs is what a statement on the loop allocates: its query id and its capacity
// slot, and in a test binary (invariants on) the ledger's entry for its admission. Its
// admission, Relay and request are the loop's own, made once per run, and a statement sent
// again shares the text copied the time before.
const loopStatementAllocs = 3

// TestLoopRepeatedStatements: a statement the client sends again shares the text the loop
// copied the time before, and every statement still reaches the core and history with its own
// text (statements of one length differing in one byte, repeated and alternated).
func TestLoopRepeatedStatements(t *testing.T) {
	var seen checkLog
	f := coreServer(t, coreSetup{check: seen.check(func(req *query.Request) string { return req.SQL })})
	c := newRawClient(t, f.addr, f.dbName)
	seen.take() // the login's check of its database
	sent := []string{"SELECT 1", "SELECT 1", "SELECT 2", "SELECT 2", "SELECT 1", "SELECT 3"}
	onLoop(t, f.addr, int64(len(sent)), func() {
		for _, q := range sent {
			if err := c.query(comQuery(q), []byte{1, q[7]}); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	})
	if got := strings.Join(seen.take(), ", "); got != strings.Join(sent, ", ") {
		t.Fatalf("the core saw %s, want %s", got, strings.Join(sent, ", "))
	}
	for q, n := range map[string]int{"SELECT 1": 3, "SELECT 2": 2, "SELECT 3": 1} {
		if recs := f.hist.Find(q); len(recs) != n {
			t.Fatalf("history has %s %d times, want %d", q, len(recs), n)
		}
	}
}

// checkLog is a core check (coreSetup.check) that keeps a line about each statement it checks.
type checkLog struct {
	mu    sync.Mutex
	lines []string
}

// check is the check: line says what to keep of a statement, and may change it.
func (l *checkLog) check(line func(req *query.Request) string) func(*query.Request, string) error {
	return func(req *query.Request, _ string) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, line(req))
		return nil
	}
}

// take returns the lines kept so far, and forgets them.
func (l *checkLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := l.lines
	l.lines = nil
	return lines
}

// TestLoopWatchesNoColumnDefinitions: of a result's packets the loop's Watch looks at the head
// (the column count) and the end; the column definitions and their EOF stream through unseen
// (relayloop.MySQL's Skip), however many columns there are, and so do the rows, counted
// (relayloop.MySQL's Rows). The statements' rows still reach the client, and history counts
// only their rows.
func TestLoopWatchesNoColumnDefinitions(t *testing.T) {
	f := coreServer(t, coreSetup{})
	c := newRawClient(t, f.addr, f.dbName)
	s := serverOf(t, f.addr)
	initDB := append([]byte{byte(1 + len(f.dbName)), 0, 0, 0, gomysql.COM_INIT_DB}, f.dbName...)
	offLoop := func() { // a command the loop hands back: the run's count lands
		t.Helper()
		if err := c.query(initDB, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.query(comQuery("SELECT 1"), []byte{1, '1'}); err != nil {
		t.Fatal(err)
	}
	offLoop()
	const statements = 5
	wide := "SELECT 1, 2, 3, 4, 5, 6, 7, 8 UNION ALL SELECT 1, 2, 3, 4, 5, 6, 7, 9"
	before := s.LoopWatched()
	onLoop(t, f.addr, statements, func() {
		for range statements {
			if err := c.query(comQuery(wide), []byte{1, '1', 1, '2', 1, '3', 1, '4', 1, '5', 1, '6', 1, '7', 1, '8'}); err != nil {
				t.Fatal(err)
			}
		}
	})
	offLoop()
	// Per statement: the column count and the EOF that ends the rows. Watching the two rows
	// too makes 4, the eight definitions and their EOF 13.
	if got := s.LoopWatched() - before; got != statements*2 {
		t.Fatalf("the loop's Watch looked at %d engine packets for %d statements of 8 columns and 2 rows, want %d",
			got, statements, statements*2)
	}
	if recs := f.hist.Find(wide); len(recs) != statements || recs[0].Rows != 2 {
		t.Fatalf("history has %d records of the statement (rows %v), want %d of 2 rows", len(recs), recs, statements)
	}
}

// TestBetweenPacketsNotInColumnDefinitions: a statement whose engine connection ends while
// column definitions still stream through (Skip left) is not between packets: an ERR there
// would be read as a column definition, so the session ends instead.
func TestBetweenPacketsNotInColumnDefinitions(t *testing.T) {
	lr := &loopRun{phase: phaseRows}
	lr.rows.Skip = 2
	if lr.betweenPackets() {
		t.Fatal("between packets with two column definitions still to come")
	}
	lr.rows.Skip = 0
	if !lr.betweenPackets() {
		t.Fatal("not between packets after the column definitions and their EOF")
	}
}

// TestLoopSessionValuesAfterPlainStatements: a statement that names no session value is sent
// as it is, unread for them when the client sends it again (the loop keeps what it found), and
// one that names them after it still gets the proxy's values, on a connection that alternates
// the two on the loop.
func TestLoopSessionValuesAfterPlainStatements(t *testing.T) {
	f := coreServer(t, coreSetup{})
	c := loopConn(t, openDB(t, f.addr, testUser, "", f.dbName, ""))
	ctx := context.Background()
	for range 3 {
		for range 2 {
			var one int
			if err := c.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
				t.Fatalf("SELECT 1: %d, %v", one, err)
			}
		}
		var version string
		if err := c.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil || version != "8.0.11-queryflux" {
			t.Fatalf("SELECT VERSION() after SELECT 1 on the loop: %q (%v), want the proxy's", version, err)
		}
	}
}

// rawRow scans rows' current row of n columns as their raw bytes (nil for a NULL).
func rawRow(rows *sql.Rows, n int) ([]sql.RawBytes, error) {
	vals := make([]sql.RawBytes, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	return vals, rows.Scan(ptrs...)
}

// TestLoopStatementsCarryTheirTextsShape: each statement the loop admits reaches the core with
// a sqltok.Shape for its very text (query.Request.Shape), one Shape for a text sent again and
// another for another text, so that the core's checks and the history's redaction remember
// what they found of a text and do not read it again at each statement.
func TestLoopStatementsCarryTheirTextsShape(t *testing.T) {
	var mu sync.Mutex
	var shapes []*sqltok.Shape
	f := coreServer(t, coreSetup{check: func(req *query.Request, _ string) error {
		mu.Lock()
		defer mu.Unlock()
		shapes = append(shapes, req.Shape.Of(req.SQL))
		return nil
	}})
	c := newRawClient(t, f.addr, f.dbName)
	mu.Lock()
	shapes = nil // the login's check of its database
	mu.Unlock()
	sent := []string{"SELECT 1", "SELECT 1", "SELECT 2", "SELECT 2", "SELECT 2"}
	onLoop(t, f.addr, int64(len(sent)), func() {
		for _, q := range sent {
			if err := c.query(comQuery(q), []byte{1, q[7]}); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	})
	mu.Lock()
	defer mu.Unlock()
	if len(shapes) != len(sent) {
		t.Fatalf("the core checked %d statements, want %d", len(shapes), len(sent))
	}
	for i, s := range shapes {
		if s == nil {
			t.Fatalf("%s (statement %d) reached the core without its text's shape", sent[i], i)
		}
	}
	if shapes[0] != shapes[1] || shapes[2] != shapes[3] || shapes[3] != shapes[4] || shapes[1] == shapes[2] {
		t.Fatalf("shapes %p: want one for each text", shapes)
	}
}

// TestLoopQueryTimeoutAfterStatements: the group's query timeout stops a statement on the loop
// that follows quicker ones of the same run (each statement's context is its own, and what
// stops it is looked for in its own): the client gets 3024, the engine runs it no more, history
// says it failed, and the session goes on there.
func TestLoopQueryTimeoutAfterStatements(t *testing.T) {
	f := coreServer(t, coreSetup{queryTimeout: 300 * time.Millisecond})
	proxied := openDB(t, f.addr, testUser, "", f.dbName, "")
	conn := loopConn(t, proxied)
	q := "SELECT SLEEP(120) AS timed_out_on_loop"
	onLoop(t, f.addr, 4, func() {
		for i := range 2 {
			var n int
			if err := conn.QueryRowContext(context.Background(), fmt.Sprintf("SELECT %d", 41+i)).Scan(&n); err != nil || n != 41+i {
				t.Fatalf("SELECT %d: %d, %v", 41+i, n, err)
			}
		}
		done := make(chan error, 1)
		go func() {
			_, err := conn.ExecContext(context.Background(), q)
			done <- err
		}()
		select {
		case err := <-done:
			var me *mysql.MySQLError
			if !errors.As(err, &me) || me.Number != 3024 {
				t.Fatalf("timed-out statement: %v, want 3024", err)
			}
		case <-time.After(time.Minute): // a hang guard: the statement runs 120 s unless stopped
			t.Fatal("the group's query timeout never stopped the statement")
		}
		waitEngineIdle(t, f.direct, "timed_out_on_loop")
		var n int
		if err := conn.QueryRowContext(context.Background(), "SELECT 9").Scan(&n); err != nil || n != 9 {
			t.Fatalf("after the timeout: %d, %v", n, err)
		}
	})
	if recs := f.hist.Find(q); len(recs) != 1 || recs[0].Status != proxy.StatusFailed {
		t.Fatalf("history %+v", recs)
	}
}
