package querytest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/trinodb/trino-go-client/trino"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// cancelClient is a client library people use. open readies it (on the test's goroutine: it
// may skip when the library is not installed) for a daemon's frontends at addrs.
type cancelClient struct {
	name string
	open func(t *testing.T, addrs map[string]string) runStatement
	// cancel and limit are what the client must report of a statement cancelled on the engine
	// and of one that ran past a time limit (the group's queryTimeoutSecs, PostgreSQL's
	// statement_timeout).
	cancel, limit string
}

// TestEngineCancelAndTimeLimitThroughRealClients: a statement cancelled on its PostgreSQL
// engine (pg_cancel_backend, as an operator or the engine fence does it) reaches each client as
// its protocol's cancel, and a statement stopped by the group's query timeout or by PostgreSQL's
// statement_timeout as its time limit, though PostgreSQL answers all three 57014: MySQL 1317
// (70100) against 3024, Flight SQL CANCELLED against DEADLINE_EXCEEDED, Trino USER_CANCELED
// against EXCEEDED_TIME_LIMIT.
func TestEngineCancelAndTimeLimitThroughRealClients(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Minute)
	defer stop()
	engine, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(context.Background())
	free := startCancelDaemon(t, dbURL, "")
	limits := map[string]map[string]string{"the group's query timeout": startCancelDaemon(t, dbURL, ", queryTimeoutSecs: 1")}
	timeoutURL := pgtest.NewDatabase(t) // every session on it has a statement_timeout of 1 s
	if _, err := engine.Exec(ctx, "alter database "+pgx.Identifier{mustURL(t, timeoutURL).Path[1:]}.Sanitize()+" set statement_timeout = '1s'"); err != nil {
		t.Fatal(err)
	}
	limits["PostgreSQL's statement_timeout"] = startCancelDaemon(t, timeoutURL, "")

	for _, c := range cancelClients {
		t.Run(c.name, func(t *testing.T) {
			m := fmt.Sprintf("qf-cancel-%d", cancelMarkers.Add(1))
			run := c.open(t, free)
			done := make(chan [2]string, 1)
			go func() {
				got, err := run(ctx, "select pg_sleep(60) /* "+m+" */")
				done <- [2]string{got, errString(err)}
			}()
			cancelOnEngine(ctx, t, engine, m, done)
			if got := <-done; got[1] != "" || got[0] != c.cancel {
				t.Errorf("a statement cancelled on the engine: %s reported %q (%s), want %q", c.name, got[0], got[1], c.cancel)
			}

			for limit, addrs := range limits {
				got, err := c.open(t, addrs)(ctx, "select pg_sleep(60)")
				if err != nil || got != c.limit {
					t.Errorf("a statement past %s: %s reported %q (%v), want %q", limit, c.name, got, err, c.limit)
				}
			}
		})
	}
}

// runStatement runs one statement and returns what the client library reports of its failure,
// in the library's own terms ("ok" when it succeeded). An error is the test's own trouble (the
// client could not run at all).
type runStatement func(ctx context.Context, sql string) (string, error)

var cancelMarkers atomic.Int64

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// startCancelDaemon is a standalone daemon with the MySQL, Trino and Flight SQL frontends on
// the database at dbURL; group is more settings of its cluster group.
func startCancelDaemon(t *testing.T, dbURL, group string) map[string]string {
	return startFrontendsDaemon(t, dbURL, 8, group)
}

// startFrontendsDaemon is startCancelDaemon with maxRunning connections to the database.
func startFrontendsDaemon(t *testing.T, dbURL string, maxRunning int, group string) map[string]string {
	addrs := daemontest.FreeAddrs(t, 4)
	cfg := daemontest.WriteFile(t, "cancel.yaml", fmt.Sprintf(`queryflux:
  role: standalone
  adminApi: {listen: "%s", token: "%s"}
  frontends:
    mysql: {enabled: true, listen: "%s"}
    trino: {enabled: true, listen: "%s"}
    flightsql: {enabled: true, listen: "%s"}
`, addrs[0], adminToken, addrs[1], addrs[2], addrs[3])+pgClusterWith(t, dbURL, maxRunning, group))
	startDaemon(t, nil, addrs, "--config", cfg)
	return map[string]string{"mysql": addrs[1], "trino": addrs[2], "flightsql": addrs[3]}
}

// cancelOnEngine cancels, with pg_cancel_backend, the statement carrying marker once PostgreSQL
// runs it, until the client is done. PostgreSQL drops a cancel that lands while the backend reads
// the next protocol message (pg_stat_activity already shows the statement active after its
// Parse), so a cancel is sent again while the same run stays active; a run with a new start time
// is the statement run again after its cancel, which no client asked for.
func cancelOnEngine(ctx context.Context, t *testing.T, engine *pgx.Conn, marker string, done <-chan [2]string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var cancelled *time.Time
	for len(done) == 0 {
		var started []time.Time
		rows, err := engine.Query(ctx, `with run as materialized (select pid, query_start from pg_stat_activity
			where query like '%'||$1||'%' and state = 'active' and pid <> pg_backend_pid())
			select query_start from run where pg_cancel_backend(pid)`, marker)
		if err == nil {
			started, err = pgx.CollectRows(rows, pgx.RowTo[time.Time])
		}
		switch {
		case err != nil:
			t.Fatal(err)
		case len(started) > 1:
			t.Fatalf("the statement %s runs %d times on PostgreSQL", marker, len(started))
		case len(started) == 1 && cancelled != nil && !started[0].Equal(*cancelled):
			t.Fatalf("the statement %s ran again on PostgreSQL after its cancel", marker)
		case len(started) == 1:
			cancelled = &started[0]
		case cancelled == nil && time.Now().After(deadline):
			t.Fatalf("the statement %s never ran on PostgreSQL", marker)
		}
		time.Sleep(20 * time.Millisecond) // polling the engine's own view: no event to wait on
	}
}

var cancelClients = []cancelClient{
	{name: "go-sql-driver/mysql", open: goMySQL, cancel: "1317 70100", limit: "3024 HY000"},
	{name: "PyMySQL", open: pythonMySQL("pymysql"), cancel: "OperationalError 1317", limit: "OperationalError 3024"},
	{name: "mysqlclient", open: pythonMySQL("MySQLdb"), cancel: "OperationalError 1317", limit: "OperationalError 3024"},
	{name: "mysql2", open: nodeMySQL2, cancel: "1317 70100 ER_QUERY_INTERRUPTED", limit: "3024 HY000 ER_QUERY_TIMEOUT"},
	{name: "trino-go-client", open: trinoGo, cancel: "USER_CANCELED USER_ERROR", limit: "EXCEEDED_TIME_LIMIT INSUFFICIENT_RESOURCES"},
	{name: "arrow-go flightsql", open: arrowFlight, cancel: "Canceled", limit: "DeadlineExceeded"},
}

func goMySQL(t *testing.T, addrs map[string]string) runStatement {
	db, err := sql.Open("mysql", "queryflux@tcp("+addrs["mysql"]+")/")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return reporting(queryAll(db), func(err error) string {
		var me *gomysql.MySQLError
		if errors.As(err, &me) {
			return fmt.Sprintf("%d %s", me.Number, me.SQLState[:])
		}
		return ""
	})
}

// reporting is a runStatement of a Go client library: run runs a statement, and describe words
// the library's own error ("" for any other error).
func reporting(run func(ctx context.Context, q string) error, describe func(error) string) runStatement {
	return func(ctx context.Context, q string) (string, error) {
		err := run(ctx, q)
		if err == nil {
			return "ok", nil
		}
		if d := describe(err); d != "" {
			return d, nil
		}
		return "", err
	}
}

// queryAll runs a statement on db and reads its rows.
func queryAll(db *sql.DB) func(ctx context.Context, q string) error {
	return func(ctx context.Context, q string) error {
		_, err := frontendtest.QueryAll(ctx, db, q)
		return err
	}
}

// pythonMySQL runs statements with the Python MySQL client module (pymysql, MySQLdb) and
// reports its exception's class and errno.
func pythonMySQL(module string) func(*testing.T, map[string]string) runStatement {
	return func(t *testing.T, addrs map[string]string) runStatement {
		python := frontendtest.PythonWith(t, module)
		host, port, _ := net.SplitHostPort(addrs["mysql"])
		script := `import sys, ` + module + ` as m
c = m.connect(host=sys.argv[1], port=int(sys.argv[2]), user="queryflux")
try:
    cur = c.cursor()
    cur.execute(sys.argv[3])
    cur.fetchall()
    print("ok")
except m.MySQLError as e:
    print(type(e).__name__, e.args[0])
`
		return func(ctx context.Context, q string) (string, error) {
			return output(exec.CommandContext(ctx, python, "-c", script, host, port, q))
		}
	}
}

// nodeMySQL2 runs statements with node's mysql2 and reports its error's errno, sqlState and
// code.
func nodeMySQL2(t *testing.T, addrs map[string]string) runStatement {
	dir := frontendtest.NodeClients(t, "mysql2")
	host, port, _ := net.SplitHostPort(addrs["mysql"])
	const script = `const mysql = require('mysql2/promise');
(async () => {
  const [host, port, sql] = process.argv.slice(1);
  const c = await mysql.createConnection({ host, port: Number(port), user: 'queryflux' });
  try {
    await c.query(sql);
    console.log('ok');
  } catch (e) {
    console.log(e.errno, e.sqlState, e.code);
  }
  await c.end();
})();
`
	return func(ctx context.Context, q string) (string, error) {
		cmd := exec.CommandContext(ctx, "node", "-e", script, host, port, q)
		cmd.Dir = dir
		return output(cmd)
	}
}

// output is what cmd prints, trimmed.
func output(cmd *exec.Cmd) (string, error) {
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%v: %s", err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

func trinoGo(t *testing.T, addrs map[string]string) runStatement {
	db := frontendtest.OpenTrino(t, trino.Config{ServerURI: "http://queryflux@" + addrs["trino"]})
	return reporting(queryAll(db), func(err error) string {
		var te *trino.ErrTrino
		if errors.As(err, &te) {
			return te.ErrorName + " " + te.ErrorType
		}
		return ""
	})
}

func arrowFlight(t *testing.T, addrs map[string]string) runStatement {
	c := frontendtest.DialFlight(t, addrs["flightsql"])
	run := func(ctx context.Context, q string) error {
		_, err := frontendtest.FlightRows(ctx, c, q, frontendtest.ValueStr)
		return err
	}
	return reporting(run, func(err error) string {
		if s, ok := status.FromError(err); ok {
			return s.Code().String()
		}
		return ""
	})
}
