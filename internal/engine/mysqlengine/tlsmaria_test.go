package mysqlengine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/query"
)

// TestTLSToMariaDB: against a MariaDB that takes TLS connections only, an engine opened with
// tls=verify-full and the CA that signed the server's certificate runs statements on every
// path (the Arrow path: Execute, prepared, a session; the relay: QueryRaw, ExecuteRaw), each
// on a connection MariaDB reports encrypted, with MariaDB's extended metadata when asked for;
// verify-ca too. With another CA it fails, the log naming the certificate's authority, and without
// TLS MariaDB itself refuses it.
func TestTLSToMariaDB(t *testing.T) {
	m := mytest.StartTLSMariaDB(t)
	ctx := context.Background()
	open := func(t *testing.T, opts map[string]string) *Engine {
		t.Helper()
		q, err := OpenSpec(engine.Spec{Name: "tlsmaria", Kind: "mysql", Endpoint: m.Addr, User: "root", Options: opts})
		if err != nil {
			t.Fatal(err)
		}
		e := q.(*Engine)
		t.Cleanup(func() { e.Close() })
		return e
	}
	e := open(t, map[string]string{"tls": "verify-full", "tlsCAFile": m.CAFile})
	exec(t, e, "CREATE DATABASE d")
	exec(t, e, "CREATE TABLE d.m (j JSON, u UUID)")
	exec(t, e, `INSERT INTO d.m VALUES ('{"a": 1}', '123e4567-e89b-12d3-a456-426614174000')`)
	if !e.ExtendedMetadata() {
		t.Error("the TLS engine does not know its server offers extended metadata")
	}
	// Each statement reads its own connection's TLS version, and the columns of d.m.
	const sel = "SELECT (SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'Ssl_version') AS v, j, u FROM m"
	arrow := map[string]func(q *query.Request) (query.Rows, error){
		"Execute": func(q *query.Request) (query.Rows, error) { return e.Execute(ctx, q) },
		"prepared": func(q *query.Request) (query.Rows, error) {
			q.SQL, q.Args = sel+" WHERE 1 = ?", []any{1}
			return e.Execute(ctx, q)
		},
		"session": func(q *query.Request) (query.Rows, error) {
			s, err := e.OpenSession(ctx, q)
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { s.Close() })
			return s.Execute(ctx, q)
		},
	}
	for path, run := range arrow {
		for round := range 2 { // the second takes pooled connections
			for _, asked := range []bool{true, false} {
				rows, err := run(&query.Request{SQL: sel, Database: "d", ExtendedMetadata: asked})
				if err != nil {
					t.Fatalf("%s, round %d, asked %v: %v", path, round, asked, err)
				}
				block, _ := rows.Schema().Field(1).Metadata.GetValue(ExtendedMetadataKey)
				if got := collect(t, rows); len(got) != 1 || !strings.HasPrefix(got[0][0], "TLSv1.") {
					t.Errorf("%s, round %d: %v, want the row over TLS", path, round, got)
				}
				if asked && block != "\x01\x04json" || !asked && block != "" {
					t.Errorf("%s, round %d, asked %v: extended metadata %q", path, round, asked, block)
				}
			}
		}
	}
	relay := map[string]func(q *query.Request) (*RawQuery, error){
		"QueryRaw":   func(q *query.Request) (*RawQuery, error) { return e.QueryRaw(ctx, q) },
		"ExecuteRaw": func(q *query.Request) (*RawQuery, error) { return e.ExecuteRaw(ctx, q, StmtParams{}) },
	}
	for path, run := range relay {
		for round := range 2 {
			for _, asked := range []bool{true, false} {
				r, err := run(&query.Request{SQL: sel, Database: "d", ExtendedMetadata: asked})
				if err != nil {
					t.Fatalf("%s, round %d, asked %v: %v", path, round, asked, err)
				}
				block, ok := extendedInfo(t, r.Columns()[1])
				if asked && block != "\x01\x04json" || !asked && ok {
					t.Errorf("%s, round %d, asked %v: extended metadata %q (%v)", path, round, asked, block, ok)
				}
				var rows [][]string
				read := path == "QueryRaw" && !asked // go-mysql cannot parse definitions with extended metadata
				if read {
					rows = rawRows(t, r)
				} else {
					for _, more := r.NextRows(); more; _, more = r.NextRows() {
						rows = append(rows, nil)
					}
				}
				if err := r.Close(); err != nil || len(rows) != 1 || read && !strings.HasPrefix(rows[0][0], "TLSv1.") {
					t.Errorf("%s, round %d: %v %v, want the row over TLS", path, round, rows, err)
				}
			}
		}
	}
	// The server's own character set is latin1 (MariaDB's default before 11.6): the engine's
	// connections are utf8mb4 all the same, so text written as UTF-8 reads back as written.
	exec(t, e, "CREATE TABLE d.txt (s VARCHAR(10)) CHARACTER SET utf8mb4")
	exec(t, e, "INSERT INTO d.txt VALUES ('héllo')")
	const text = "SELECT s, CHAR_LENGTH(s), CHAR_LENGTH('héllo'), @@character_set_server FROM d.txt"
	rows, err := e.Execute(ctx, &query.Request{SQL: text})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(collect(t, rows)); got != "[[héllo 5 5 latin1]]" {
		t.Errorf("Execute: %s, want [[héllo 5 5 latin1]]", got)
	}
	r, err := e.QueryRaw(ctx, &query.Request{SQL: text})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(rawRows(t, r)); got != "[[héllo 5 5 latin1]]" {
		t.Errorf("QueryRaw: %s, want [[héllo 5 5 latin1]]", got)
	}
	r.Close()
	t.Run("verify-ca", func(t *testing.T) {
		e := open(t, map[string]string{"tls": "verify-ca", "tlsCAFile": m.CAFile})
		if err := e.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("another CA", func(t *testing.T) {
		for _, mode := range []string{"verify-full", "verify-ca"} {
			e := open(t, map[string]string{"tls": mode, "tlsCAFile": m.OtherCAFile})
			err := e.Ping(ctx)
			if err == nil {
				t.Fatalf("%s: a certificate another CA signed was accepted", mode)
			}
			if msg := logDetail(err); !strings.Contains(msg, "certificate signed by unknown authority") || !strings.Contains(msg, `"tlsmaria"`) {
				t.Errorf("%s: %s: want the log to name the engine and why its certificate was refused", mode, msg)
			} else {
				t.Logf("%s: the log says: %s", mode, msg)
			}
		}
	})
	t.Run("no TLS", func(t *testing.T) {
		e := open(t, nil)
		err := e.Ping(ctx)
		if err == nil {
			t.Fatal("without TLS: MariaDB, which takes TLS connections only, let the engine in")
		}
		t.Logf("without TLS, the log says: %s", logDetail(err))
	})
}

// logDetail is what the log says of err: a hidden error's detail, else the error.
func logDetail(err error) string {
	var h *query.Hidden
	if errors.As(err, &h) {
		return h.Detail.Error()
	}
	return fmt.Sprint(err)
}
