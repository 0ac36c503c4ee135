package pgengine_test

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/query"
)

// openOneConn opens an engine whose relay has a single connection, so consecutive statements
// are known to share it. options are connection parameters (sslmode, ...).
func openOneConn(t *testing.T, options ...string) engine.PGRelayer {
	t.Helper()
	opts := map[string]string{}
	for i := 0; i+1 < len(options); i += 2 {
		opts[options[i]] = options[i+1]
	}
	e, err := pgengine.Open(engine.Spec{Name: "pg", Kind: pgengine.Kind, Endpoint: pgtest.NewDatabase(t), MaxConns: 1, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e.(engine.PGRelayer)
}

// relayText runs st and returns its rows' text values (one string per row, columns joined by
// "|"), its tag and its error.
func relayText(t *testing.T, r engine.PGRelayer, st engine.PGStatement) ([]string, string, error) {
	t.Helper()
	res, err := r.RelayPG(context.Background(), st)
	if err != nil {
		return nil, "", err
	}
	var rows []string
	for {
		msg, ok := res.NextRow()
		if !ok {
			break
		}
		if msg[0] != 'D' {
			t.Fatalf("row message type %q", msg[0])
		}
		rows = append(rows, dataRowText(msg))
	}
	tag, err := res.Close()
	return rows, tag, err
}

func dataRowText(msg []byte) string {
	body := msg[5:]
	n := int(binary.BigEndian.Uint16(body))
	body = body[2:]
	cols := make([]string, 0, n)
	for range n {
		size := int(int32(binary.BigEndian.Uint32(body)))
		body = body[4:]
		if size < 0 {
			cols = append(cols, "NULL")
			continue
		}
		cols = append(cols, string(body[:size]))
		body = body[size:]
	}
	return strings.Join(cols, "|")
}

func preparedNames(t *testing.T, r engine.PGRelayer) []string {
	t.Helper()
	rows, _, err := relayText(t, r, engine.PGStatement{Simple: true, SQL: "select name from pg_prepared_statements order by name"})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestRelayRowsTagsAndErrors(t *testing.T) {
	r := openOneConn(t)
	rows, tag, err := relayText(t, r, engine.PGStatement{Simple: true, SQL: "select g, null::text from generate_series(1,3) g"})
	if err != nil || tag != "SELECT 3" || strings.Join(rows, ",") != "1|NULL,2|NULL,3|NULL" {
		t.Fatalf("simple: rows %v tag %q err %v", rows, tag, err)
	}
	rows, tag, err = relayText(t, r, engine.PGStatement{SQL: "select $1::int + 1", Params: [][]byte{[]byte("41")}})
	if err != nil || tag != "SELECT 1" || strings.Join(rows, ",") != "42" {
		t.Fatalf("extended: rows %v tag %q err %v", rows, tag, err)
	}
	_, _, err = relayText(t, r, engine.PGStatement{Simple: true, SQL: "select 1/0"})
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "22012" {
		t.Fatalf("division by zero: %v", err)
	}
	// The connection answered the error to its end: the next statement works on it.
	if rows, _, err := relayText(t, r, engine.PGStatement{Simple: true, SQL: "select 'after'"}); err != nil || rows[0] != "after" {
		t.Fatalf("after an error: %v %v", rows, err)
	}
}

func TestRelayRefusesCopyClearly(t *testing.T) {
	r := openOneConn(t)
	if _, _, err := relayText(t, r, engine.PGStatement{Simple: true, SQL: "create table copy_t(a int)"}); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{"copy (select 1) to stdout", "copy copy_t from stdin"} {
		_, _, err := relayText(t, r, engine.PGStatement{Simple: true, SQL: sql})
		var qe *query.Error
		if !errors.As(err, &qe) || qe.Code != "0A000" || !strings.Contains(qe.Message, "COPY") {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if rows, _, err := relayText(t, r, engine.PGStatement{Simple: true, SQL: "select 'still serving'"}); err != nil || rows[0] != "still serving" {
		t.Fatalf("after COPY: %v %v", rows, err)
	}
}

func TestRelayKeepsNamedStatementsPreparedPerConnection(t *testing.T) {
	r := openOneConn(t)
	st := engine.PGStatement{SQL: "select $1::int * 2", Prepared: true, Params: [][]byte{[]byte("4")}}
	for i := range 3 {
		rows, _, err := relayText(t, r, st)
		if err != nil || rows[0] != "8" {
			t.Fatalf("execution %d: %v %v", i, rows, err)
		}
	}
	if got := preparedNames(t, r); strings.Join(got, ",") != "qf_1" {
		t.Fatalf("prepared on the engine connection after 3 executions: %v, want one (qf_1)", got)
	}
	// An unnamed (client) statement is never kept.
	if _, _, err := relayText(t, r, engine.PGStatement{SQL: "select 1"}); err != nil {
		t.Fatal(err)
	}
	// A statement whose Parse fails is not remembered: the next try parses again and reports
	// the same error, not "prepared statement does not exist".
	bad := engine.PGStatement{SQL: "select nosuchcolumn", Prepared: true}
	for range 2 {
		_, _, err := relayText(t, r, bad)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42703" {
			t.Fatalf("bad statement: %v", err)
		}
	}
	if got := preparedNames(t, r); strings.Join(got, ",") != "qf_1" {
		t.Fatalf("prepared after failed parses: %v", got)
	}
}

func TestRelayRecoversWhenStatementsVanish(t *testing.T) {
	r := openOneConn(t)
	st := engine.PGStatement{SQL: "select 7", Prepared: true}
	if _, _, err := relayText(t, r, st); err != nil {
		t.Fatal(err)
	}
	if _, _, err := relayText(t, r, engine.PGStatement{Simple: true, SQL: "deallocate all"}); err != nil {
		t.Fatal(err)
	}
	// The connection's statement is gone: that execution fails (26000) and its connection is
	// dropped, so the next one prepares again on a fresh connection.
	_, _, err := relayText(t, r, st)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "26000" {
		t.Fatalf("after deallocate: %v", err)
	}
	if rows, _, err := relayText(t, r, st); err != nil || rows[0] != "7" {
		t.Fatalf("next execution: %v %v", rows, err)
	}
}

func TestRelayCancelStopsTheStatementOnTheServer(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	e, err := pgengine.Open(engine.Spec{Name: "pg", Kind: pgengine.Kind, Endpoint: dsn, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	r := e.(engine.PGRelayer)
	// The connection is opened and tagged first, so the cancel below can only meet the statement.
	if _, _, err := relayText(t, r, engine.PGStatement{Simple: true, SQL: "select 1"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const sleep = "select pg_sleep(30)"
	go cancelWhenRunning(t, dsn, sleep, cancel) // PostgreSQL may describe the result only once it runs
	start := time.Now()
	res, err := r.RelayPG(ctx, engine.PGStatement{Simple: true, SQL: sleep})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = res.NextRow()
	_, err = res.Close()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("cancelled statement: %v", err)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatal("the statement ran to its end")
	}
	// The cancelled connection is not reused, and the relay goes on on a new one.
	if rows, _, err := relayText(t, r, engine.PGStatement{Simple: true, SQL: "select 1"}); err != nil || rows[0] != "1" {
		t.Fatalf("after cancel: %v %v", rows, err)
	}
}

// cancelWhenRunning calls cancel once the server shows statement running, whatever the load.
func cancelWhenRunning(t *testing.T, dsn, statement string, cancel func()) {
	defer cancel()
	conn, err := pgconn.Connect(context.Background(), dsn)
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close(context.Background())
	running := "select count(*) from pg_stat_activity where state = 'active' and query = '" + statement + "'"
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		res := conn.ExecParams(context.Background(), running, nil, nil, nil, nil).Read()
		if res.Err == nil && len(res.Rows) == 1 && string(res.Rows[0][0]) == "1" {
			return
		}
	}
	t.Error("the statement never showed as running in pg_stat_activity")
}

// TestRelayOverTLS: the relay's connections keep the TLS that pgconn negotiated.
func TestRelayOverTLS(t *testing.T) {
	r := openOneConn(t, "sslmode", "require")
	rows, _, err := relayText(t, r, engine.PGStatement{Simple: true, SQL: "select ssl from pg_stat_ssl where pid = pg_backend_pid()"})
	if err != nil {
		t.Skipf("the server does not take TLS here: %v", err)
	}
	if strings.Join(rows, ",") != "t" {
		t.Fatalf("relay connection TLS: %v", rows)
	}
}

// TestRelayDropsAConnectionTheServerClosedWhileIdle: a connection the server ended while it sat
// idle (here pg_terminate_backend) is noticed before use, and the statement runs on a new one.
func TestRelayDropsAConnectionTheServerClosedWhileIdle(t *testing.T) {
	for _, sslmode := range []string{"disable", "require"} {
		t.Run(sslmode, func(t *testing.T) {
			r := openOneConn(t, "sslmode", sslmode)
			pid := func() string {
				rows, _, err := relayText(t, r, engine.PGStatement{Simple: true, SQL: "select pg_backend_pid()"})
				if err != nil {
					t.Fatal(err)
				}
				return rows[0]
			}
			first := pid()
			other := openOneConn(t)
			if _, _, err := relayText(t, other, engine.PGStatement{Simple: true, SQL: "select pg_terminate_backend(" + first + ")"}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1100 * time.Millisecond) // past rawCheckIdleAfter: the idle connection is checked
			if second := pid(); second == first {
				t.Fatalf("the terminated connection (pid %s) was used again", first)
			}
		})
	}
}
