package mysqlwire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// Long client sessions: each client library runs many statements in a row on one connection —
// text queries, prepared statements (where the client prepares them on the server), errors
// with more statements after them, NULLs, multi-row results, writes and reads of what they
// wrote — against the embedded DuckDB (every statement on the Arrow path, which the event loop
// hands to the session's goroutine), and alternating between DuckDB and MariaDB (a
// passthrough statement relayed on the loop, then one on the Arrow path, and so on).

// sessionStep is one statement of a long session, as the client scripts read it, and the
// line the script prints for it (want: readProbes' value).
type sessionStep struct {
	SQL      string `json:"sql"`
	Params   []any  `json:"params,omitempty"`
	Prepared bool   `json:"prepared,omitempty"`
	want     string
}

// sessionDialect writes a session's statements for one engine.
type sessionDialect struct {
	name    string
	suffix  string // after every statement (a routing comment)
	intCast string // CAST(? AS ...) of an integer parameter
	// rows is a table function of the integers 0..n-1 as column x.
	rows func(n int) string
}

var (
	duckDialect  = sessionDialect{name: "duck", intCast: "INTEGER", rows: func(n int) string { return fmt.Sprintf("range(%d) t(x)", n) }}
	mariaDialect = sessionDialect{name: "maria", intCast: "SIGNED", rows: func(n int) string {
		return fmt.Sprintf("(SELECT seq AS x FROM seq_0_to_%d) t", n-1)
	}}
)

// sessionSteps is a session of n statements after the creation of table session_t on each
// dialect's engine. Statement i is of kind i % 8 and runs on one dialect after the other, so
// that over 8 * len(dialects) statements each engine runs every kind.
func sessionSteps(n int, dialects ...sessionDialect) []sessionStep {
	var steps []sessionStep
	rows, nulls := map[string]int{}, map[string]int{} // inserted into session_t, and with v NULL
	for _, d := range dialects {
		steps = append(steps, sessionStep{SQL: "CREATE TABLE session_t (id INTEGER, v VARCHAR(20))" + d.suffix, want: `"affected 0"`})
	}
	for i := range n {
		d := dialects[(i+i/8)%len(dialects)]
		var s sessionStep
		switch i % 8 {
		case 0:
			s.SQL, s.want = fmt.Sprintf("SELECT %d AS n, 'row-%d' AS s, NULL AS z", i, i), fmt.Sprintf(`[["%d","row-%d",null]]`, i, i)
		case 1:
			s.SQL, s.Params, s.Prepared = fmt.Sprintf("SELECT CAST(? AS %s) + 1 AS n, ? AS s, ? AS z", d.intCast), []any{i, fmt.Sprint("p-", i), nil}, true
			s.want = fmt.Sprintf(`[["%d","p-%d",null]]`, i+1, i)
		case 2:
			s.SQL, s.want = fmt.Sprintf("SELEC %d", i), "error 1064"
			if i%16 == 10 {
				s.SQL, s.want = fmt.Sprintf("SELECT * FROM no_such_table_%d", i), "error 1146"
			}
		case 3:
			k := i%5 + 2
			s.SQL = fmt.Sprintf("SELECT x AS n, x * x AS sq FROM %s ORDER BY x", d.rows(k))
			s.want = jsonRows(k, func(x int) string { return fmt.Sprintf(`"%d","%d"`, x, x*x) })
		case 4:
			s.SQL, s.want = fmt.Sprintf("INSERT INTO session_t VALUES (%d, 'v-%d')", i, i), `"affected 1"`
			rows[d.name]++
		case 5:
			s.SQL = fmt.Sprintf("SELECT CASE WHEN x = CAST(? AS %s) THEN NULL ELSE x END AS v FROM %s ORDER BY x", d.intCast, d.rows(4))
			s.Params, s.Prepared = []any{i % 4}, true
			s.want = jsonRows(4, func(x int) string {
				if x == i%4 {
					return "null"
				}
				return fmt.Sprintf(`"%d"`, x)
			})
		case 6:
			s.SQL, s.want = "SELECT count(*) AS c, count(v) AS cv FROM session_t", fmt.Sprintf(`[["%d","%d"]]`, rows[d.name], rows[d.name]-nulls[d.name])
		case 7:
			s.SQL, s.Params, s.Prepared, s.want = "INSERT INTO session_t VALUES (?, ?)", []any{1000 + i, nil}, true, `"affected 1"`
			rows[d.name]++
			nulls[d.name]++
		}
		s.SQL += d.suffix
		steps = append(steps, s)
	}
	return steps
}

// jsonRows is n rows as the session scripts print them, row x's values written by row.
func jsonRows(n int, row func(x int) string) string {
	var out []string
	for x := range n {
		out = append(out, "["+row(x)+"]")
	}
	return "[" + strings.Join(out, ",") + "]"
}

// sessionClients are the client libraries the long sessions run on.
var sessionClients = []string{"go-sql-driver", "pymysql", "mysqldb", "mysql2"}

// runSession runs steps on one connection of client to the proxy at addr and fails t for
// every step whose answer is not its want.
func runSession(t *testing.T, client, addr, db string, steps []sessionStep) {
	t.Helper()
	var got map[string]string
	if client == "go-sql-driver" {
		got = goSQLSession(t, addr, db, steps)
	} else {
		got = scriptSession(t, client, addr, db, steps)
	}
	for i, s := range steps {
		if g := got[fmt.Sprint("step ", i)]; g != s.want {
			t.Errorf("%s, step %d %q %v: %s, want %s", client, i, s.SQL, s.Params, g, s.want)
		}
	}
}

// scriptSession runs steps through the session script of client (pymysql, mysqldb, mysql2).
func scriptSession(t *testing.T, client, addr, db string, steps []sessionStep) map[string]string {
	t.Helper()
	in, err := json.Marshal(steps)
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var cmd *exec.Cmd
	if client == "mysql2" {
		cmd = exec.CommandContext(ctx, "node", "mysql2_session.js")
		cmd.Dir = frontendtest.NodeClients(t, "mysql2")
		cmd.Env = append(os.Environ(), "MYSQL_HOST="+host, "MYSQL_PORT="+port, "MYSQL_USER="+testUser, "MYSQL_DB="+db)
	} else {
		module := map[string]string{"pymysql": "pymysql", "mysqldb": "MySQLdb"}[client]
		cmd = exec.CommandContext(ctx, frontendtest.PythonWith(t, module), "testdata/python_session.py", client, host, port, testUser, "", db)
	}
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stderr = bytes.NewReader(in), &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s session against %s: %v\n%s\n%s", client, addr, err, out, stderr.String())
	}
	return readProbes(t, out)
}

// goSQLSession runs steps on one go-sql-driver connection (prepared steps prepared on the
// server, its default) and writes each answer as the scripts print it.
func goSQLSession(t *testing.T, addr, db string, steps []sessionStep) map[string]string {
	t.Helper()
	conn := oneConn(t, openDB(t, addr, testUser, "", db, ""))
	ctx := context.Background()
	got := map[string]string{}
	for i, s := range steps {
		var args []any
		if s.Prepared {
			args = s.Params
		}
		var out string
		if w := strings.ToUpper(strings.Fields(s.SQL)[0]); w == "INSERT" || w == "CREATE" {
			res, err := conn.ExecContext(ctx, s.SQL, args...)
			out = mysqlErrno(err)
			if err == nil {
				n, _ := res.RowsAffected()
				out = fmt.Sprintf(`"affected %d"`, n)
			}
		} else {
			rows, err := conn.QueryContext(ctx, s.SQL, args...)
			out = mysqlErrno(err)
			if err == nil {
				vals, err := frontendtest.ScanAll(rows)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				b, _ := json.Marshal(stringCells(vals))
				out = string(b)
			}
		}
		got[fmt.Sprint("step ", i)] = out
	}
	return got
}

// mysqlErrno is err as readProbes reads a script's error line: "error" and its number.
func mysqlErrno(err error) string {
	if err == nil {
		return ""
	}
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		return fmt.Sprint("error ", me.Number)
	}
	return "error " + err.Error()
}

// stringCells is rows with every value as a string, or nil for NULL.
func stringCells(rows [][]any) [][]*string {
	out := make([][]*string, len(rows))
	for i, row := range rows {
		out[i] = make([]*string, len(row))
		for j, v := range row {
			if v != nil {
				s := fmt.Sprint(v)
				if b, ok := v.([]byte); ok {
					s = string(b)
				}
				out[i][j] = &s
			}
		}
	}
	return out
}

// TestClientSessionsOnDuckDB: each client runs a long session against the embedded DuckDB
// behind a real core: every statement takes the Arrow path and answers right, errors leave the
// session usable, and the session backs off the event loop rather than going back on it for
// each statement.
func TestClientSessionsOnDuckDB(t *testing.T) {
	steps := sessionSteps(64, duckDialect)
	for _, client := range sessionClients {
		t.Run(client, func(t *testing.T) {
			eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { eng.Close() })
			f := serveCore(t, "duck", eng, coreSetup{})
			s := serverOf(t, f.addr)
			runSession(t, client, f.addr, "", steps)
			if p := f.core.Paths(); p.Passthrough != 0 || p.Arrow < int64(len(steps)) {
				t.Errorf("%d statements took the paths %+v: want all on the Arrow path", len(steps), p)
			}
			if got, most := s.LoopEntries(), int64(len(steps)/loopBackoff+1)*(loopHandOffsMax+1); got > most {
				t.Errorf("%d statements on the Arrow path went on the loop %d times, want at most %d", len(steps), got, most)
			}
		})
	}
}

// TestClientSessionsAlternatingEngines: each client's long session alternates between MariaDB
// (passthrough, relayed on the event loop) and DuckDB (the Arrow path, routed there by a
// comment), statement by statement: every answer is right, each engine ran its own.
func TestClientSessionsAlternatingEngines(t *testing.T) {
	duck := duckDialect
	duck.suffix = " /* duck */"
	steps := sessionSteps(64, mariaDialect, duck)
	for _, client := range sessionClients {
		t.Run(client, func(t *testing.T) {
			maria, _, db := frontendtest.MariaDB(t)
			eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { eng.Close() })
			hist := &frontendtest.Records{}
			core := proxy.New(proxy.Options{Env: env.Real(slog.New(slog.DiscardHandler)), Registerer: prometheus.NewRegistry(), OnFinish: hist.Add})
			rt, err := proxy.NewRuntime(proxy.RuntimeSpec{
				Clusters: []proxy.ClusterSpec{{Name: "maria", Enabled: true, MaxRunningQueries: 8, Engine: maria},
					{Name: "duck", Enabled: true, MaxRunningQueries: 8, Engine: eng}},
				Groups: []proxy.GroupSpec{{Name: "main", Members: []proxy.MemberSpec{{Cluster: "maria"}}, MaxQueuedQueries: 100},
					{Name: "duck", Members: []proxy.MemberSpec{{Cluster: "duck"}}, MaxQueuedQueries: 100}},
				Routers:  []proxy.Router{&proxy.QueryRegexRouter{Rules: []proxy.RegexRule{{Pattern: regexp.MustCompile(`/\* duck \*/$`), Group: "duck"}}}},
				Fallback: "main",
			})
			if err != nil {
				t.Fatal(err)
			}
			core.Activate(rt)
			addr := startServer(t, core, Options{})
			runSession(t, client, addr, db, steps)
			for _, st := range steps {
				if st.Prepared {
					continue // PyMySQL and mysqlclient send the text with the values in
				}
				want := "maria"
				if strings.HasSuffix(st.SQL, duck.suffix) {
					want = "duck"
				}
				recs := hist.Find(st.SQL)
				if len(recs) == 0 {
					t.Errorf("%q is not in the history", st.SQL)
				}
				for _, r := range recs {
					if r.Cluster != want {
						t.Errorf("%q ran on %q, want %q", st.SQL, r.Cluster, want)
					}
				}
			}
			if p := core.Paths(); p.Passthrough == 0 || p.Arrow == 0 || serverOf(t, addr).LoopStatements() == 0 {
				t.Errorf("paths %+v, %d statements relayed on the loop: want both paths, and the loop used", p, serverOf(t, addr).LoopStatements())
			}
		})
	}
}
