package mysqlengine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/query"
)

func idleConns(e *Engine) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.idle[0])
}

// rawRows reads every row of a RawQuery as its text values.
func rawRows(t *testing.T, r *RawQuery) [][]string {
	t.Helper()
	fields := make([]*mysql.Field, len(r.Columns()))
	for i, c := range r.Columns() {
		fields[i] = &mysql.Field{}
		if err := fields[i].Parse(c[4:]); err != nil {
			t.Fatal(err)
		}
	}
	var out [][]string
	buf := make([]byte, 4, 64)
	for {
		row, ok := r.NextRow(buf)
		if !ok {
			break
		}
		vals, err := mysql.RowData(row[4:]).Parse(fields, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, v := range vals {
			if v.Type == mysql.FieldValueTypeNull {
				s = append(s, "NULL")
			} else if b, ok := v.Value().([]byte); ok {
				s = append(s, string(b))
			} else {
				s = append(s, fmt.Sprint(v.Value()))
			}
		}
		out = append(out, s)
		buf = row[:4]
	}
	return out
}

// TestQueryRawResultsAndPool: rows, OK packets (affected rows, insert id) and engine errors
// through QueryRaw; clean ends return the connection to the pool. Both ways a result set can
// end: with an OK (CLIENT_DEPRECATE_EOF, MariaDB's choice) and with EOF packets.
func TestQueryRawResultsAndPool(t *testing.T) {
	for _, deprecateEOF := range []bool{true, false} {
		t.Run(fmt.Sprintf("deprecateEOF=%v", deprecateEOF), func(t *testing.T) {
			e, name := openTestEngine(t)
			if !deprecateEOF {
				e.dialOptions = []client.Option{func(c *client.Conn) error {
					c.UnsetCapability(mysql.CLIENT_DEPRECATE_EOF)
					return nil
				}}
			}
			testQueryRaw(t, e, name)
			if got := e.deprecatesEOF(nil); got != deprecateEOF {
				t.Fatalf("negotiated CLIENT_DEPRECATE_EOF %v, want %v", got, deprecateEOF)
			}
		})
	}
}

func testQueryRaw(t *testing.T, e *Engine, name string) {
	exec(t, e, "CREATE TABLE r (id INT AUTO_INCREMENT PRIMARY KEY, s VARCHAR(10))")
	ctx := context.Background()
	q, err := e.QueryRaw(ctx, &query.Request{SQL: "INSERT INTO r (s) VALUES ('a'), ('b'), (NULL)", Database: name})
	if err != nil {
		t.Fatal(err)
	}
	if q.Columns() != nil || q.Result().AffectedRows != 3 || q.Result().InsertId != 1 {
		t.Fatalf("insert: columns %d, result %+v", len(q.Columns()), q.Result())
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	q, err = e.QueryRaw(ctx, &query.Request{SQL: "SELECT id, s FROM r ORDER BY id", Database: name})
	if err != nil {
		t.Fatal(err)
	}
	if got := rawRows(t, q); len(got) != 3 || strings.Join(got[1], ",") != "2,b" || got[2][1] != "NULL" {
		t.Fatalf("rows %q", got)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	idle := idleConns(e)
	_, err = e.QueryRaw(ctx, &query.Request{SQL: "SELECT * FROM missing", Database: name})
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != "42S02" || !strings.Contains(qe.Message, "(MySQL error 1146)") {
		t.Fatalf("missing table: %v", err)
	}
	if idleConns(e) != idle {
		t.Fatalf("an engine error closed the connection: idle %d, want %d", idleConns(e), idle)
	}
}

// TestQueryRawAbandonAndCancel: a result closed before its end closes its connection (never
// back to the pool with unread packets), and a cancelled context kills the statement.
func TestQueryRawAbandonAndCancel(t *testing.T) {
	e, _ := openTestEngine(t)
	ctx := context.Background()
	q, err := e.QueryRaw(ctx, &query.Request{SQL: "SELECT seq FROM seq_1_to_100000"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := q.NextRow(make([]byte, 4)); !ok {
		t.Fatal("no first row")
	}
	idle := idleConns(e)
	q.Close()
	if idleConns(e) != idle {
		t.Fatal("a connection with unread rows went back to the pool")
	}
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	start := time.Now()
	q, err = e.QueryRaw(cctx, &query.Request{SQL: "SELECT SLEEP(30) FROM seq_1_to_2"})
	if err == nil {
		rawRows(t, q)
		err = q.Close()
	}
	if !errors.Is(err, context.Canceled) || time.Since(start) > 10*time.Second {
		t.Fatalf("cancelled: %v after %s", err, time.Since(start))
	}
	q, err = e.QueryRaw(ctx, &query.Request{SQL: "SELECT 1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := rawRows(t, q); len(got) != 1 || got[0][0] != "1" {
		t.Fatalf("after cancel: %q", got)
	}
	q.Close()
}

// TestQueryRawOneResultSet: the engine's connections do not ask for multiple result sets, so a
// procedure that returns rows is refused by the server, cleanly: the connection serves on.
func TestQueryRawOneResultSet(t *testing.T) {
	e, name := openTestEngine(t)
	exec(t, e, "CREATE PROCEDURE two() BEGIN SELECT 1; SELECT 2; END")
	q, err := e.QueryRaw(context.Background(), &query.Request{SQL: "CALL two()", Database: name})
	if err == nil {
		rawRows(t, q)
		err = q.Close()
	}
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != "0A000" {
		t.Fatalf("CALL two(): %v", err)
	}
	q, err = e.QueryRaw(context.Background(), &query.Request{SQL: "SELECT 2", Database: name})
	if err != nil {
		t.Fatal(err)
	}
	if got := rawRows(t, q); len(got) != 1 || got[0][0] != "2" {
		t.Fatalf("after CALL: %q", got)
	}
	q.Close()
}

// TestQueryRawCarriesTheEngineTag: a relayed statement runs under its lease's engine tag, a
// leading comment the engine shows in its process list (KillTagged finds it there).
func TestQueryRawCarriesTheEngineTag(t *testing.T) {
	e, name := openTestEngine(t)
	ctx := query.WithEngineTag(context.Background(), "qf-lease-test-7")
	q, err := e.QueryRaw(ctx, &query.Request{SQL: "SELECT INFO FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()", Database: name})
	if err != nil {
		t.Fatal(err)
	}
	got := rawRows(t, q)
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0][0], "/* qf-lease-test-7 */ SELECT INFO") {
		t.Fatalf("the engine ran %q, want the statement after its tag", got)
	}
}
