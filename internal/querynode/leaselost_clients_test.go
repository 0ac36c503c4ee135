package querynode

import (
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
	"github.com/queryflux/queryflux/internal/query"
)

// TestLostLeaseThroughTheClientsPeopleUse: a statement whose capacity lease is lost while it
// runs on PostgreSQL reaches the client libraries applications use as the error their retry
// logic keys on, and their connection goes on to run the next statement: psycopg 3 raises
// TransactionRollback (40000), node-postgres and PostgreSQL's JDBC driver read SQLSTATE 40000
// (class 40, which Spring and JDBC's SQLTransactionRollbackException treat as retryable), node
// mysql2 1213 (40001) ER_LOCK_DEADLOCK (what MySQL ORMs retry), and the npm trino-client
// ADMINISTRATIVELY_PREEMPTED (131080, INSUFFICIENT_RESOURCES). Each message names the lease.
func TestLostLeaseThroughTheClientsPeopleUse(t *testing.T) {
	f := newLostLeaseNode(t)
	host, port, err := net.SplitHostPort(f.addrs["postgres"])
	if err != nil {
		t.Fatal(err)
	}
	portNum, _ := strconv.Atoi(port)
	pg := pgclienttest.DSN{Host: host, Port: portNum, User: "queryflux", Database: "g"}
	myHost, myPort, err := net.SplitHostPort(f.addrs["mysql"])
	if err != nil {
		t.Fatal(err)
	}
	wantPG := func(lost string) map[string]string {
		return map[string]string{"started": "yes", "lost": lost, "after": "42"}
	}
	clients := []struct {
		name string
		// prepare finds or builds the client (failing or skipping t, on the test's goroutine)
		// and returns how to run a statement through it.
		prepare func(t *testing.T) func(sql string) (string, error)
		want    map[string]string
	}{
		{"psycopg3", func(t *testing.T) func(string) (string, error) {
			return func(sql string) (string, error) {
				return pgclienttest.Command(t, 2*time.Minute, nil, "/usr/bin/python3", "lease_lost.py", pg.Keywords(), sql)
			}
		}, wantPG(query.CodeLeaseLost + " TransactionRollback")},
		{"node-postgres", func(t *testing.T) func(string) (string, error) {
			return func(sql string) (string, error) {
				return pgclienttest.Command(t, 2*time.Minute, nil, "node", "lease_lost.js", pg.URL(), sql)
			}
		}, wantPG(query.CodeLeaseLost + " ERROR")},
		{"jdbc", func(t *testing.T) func(string) (string, error) {
			classpath := pgclienttest.JDBCClasspath(t, "LeaseLost.java")
			return func(sql string) (string, error) {
				return pgclienttest.Command(t, 2*time.Minute, nil, "java", "-cp", classpath, "LeaseLost", pg.JDBC(), sql)
			}
		}, wantPG(query.CodeLeaseLost + " class 40")},
		{"mysql2", func(t *testing.T) func(string) (string, error) {
			dir := frontendtest.NodeClients(t, "mysql2")
			return func(sql string) (string, error) {
				env := []string{"MYSQL_HOST=" + myHost, "MYSQL_PORT=" + myPort, "MYSQL_USER=queryflux", "SQL=" + sql}
				return pgclienttest.Command(t, 2*time.Minute, env, "node", filepath.Join(dir, "mysql2_leaselost.js"))
			}
		}, wantPG("1213 40001 ER_LOCK_DEADLOCK")},
		{"trino-client", func(t *testing.T) func(string) (string, error) {
			dir := frontendtest.NodeClients(t, "trino-client")
			return func(sql string) (string, error) {
				steps, _ := json.Marshal([]map[string]string{{"name": "lost", "sql": sql}, {"name": "after", "sql": "select 40 + 2"}})
				env := []string{"TRINO_SERVER=http://" + f.addrs["trino"], "TRINO_USER=queryflux", "TRINO_STEPS=" + string(steps)}
				out, err := pgclienttest.Command(t, 2*time.Minute, env, "node", filepath.Join(dir, "trino_probe.js"))
				return trinoProbeCases(out), err
			}
		}, map[string]string{"lost": "ADMINISTRATIVELY_PREEMPTED 131080 INSUFFICIENT_RESOURCES", "after": "42"}},
	}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			marker := "qf_lease_lost_" + strings.ReplaceAll(c.name, "-", "_")
			run := c.prepare(t)
			before := len(f.guard.Slots())
			type result struct {
				out string
				err error
			}
			done := make(chan result, 1)
			go func() {
				out, err := run(sleepMarked(marker))
				done <- result{out, err}
			}()
			lease, _ := f.loseRunning(c.name, marker, before)
			start := time.Now()
			var r result
			select {
			case r = <-done:
			case <-time.After(3 * time.Minute):
				t.Fatalf("%s: the client still waits on the statement whose lease was lost", c.name)
			}
			if r.err != nil {
				t.Errorf("%s: %v\n%s", c.name, r.err, r.out)
			}
			pgclienttest.Expect(t, c.name, r.out, c.want)
			if !strings.Contains(r.out, "capacity lease "+lease+" on cluster pg was lost") {
				t.Errorf("%s: the message does not name the lease %s and its cluster:\n%s", c.name, lease, r.out)
			}
			f.waitStopped(c.name, marker, start)
		})
	}
	if got := counter(t, f.reg, "queryflux_queries_total", map[string]string{"group": "g", "cluster": "pg", "status": "lease_lost"}); got != float64(len(clients)) {
		t.Errorf(`queries_total{status="lease_lost"} = %v, want %d`, got, len(clients))
	}
}

// trinoProbeCases turns trino_probe.js's JSON lines into "case" lines: an error as its
// errorName, errorCode and errorType, then a "message:" line; rows as the first row's first
// value.
func trinoProbeCases(out string) string {
	var b strings.Builder
	for _, line := range strings.Split(out, "\n") {
		var p struct {
			Probe string `json:"probe"`
			OK    *struct {
				Rows [][]any `json:"rows"`
			} `json:"ok"`
			Error *struct {
				Message   string `json:"message"`
				ErrorName string `json:"errorName"`
				ErrorType string `json:"errorType"`
				ErrorCode int    `json:"errorCode"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(line), &p) != nil || p.Probe == "" {
			fmt.Fprintln(&b, line)
			continue
		}
		switch {
		case p.Error != nil:
			fmt.Fprintf(&b, "case %s: %s %d %s\nmessage: %s\n", p.Probe, p.Error.ErrorName, p.Error.ErrorCode, p.Error.ErrorType, p.Error.Message)
		case p.OK != nil && len(p.OK.Rows) > 0 && len(p.OK.Rows[0]) > 0:
			fmt.Fprintf(&b, "case %s: %v\n", p.Probe, p.OK.Rows[0][0])
		default:
			fmt.Fprintf(&b, "case %s: no rows\n", p.Probe)
		}
	}
	return b.String()
}
