package trinohttp

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

func postgresBackend(t testing.TB) *frontendtest.Backend {
	return postgresBackendAt(t, pgtest.NewDatabase(t))
}

// postgresBackendAt is a backend over the PostgreSQL database at dbURL.
func postgresBackendAt(t testing.TB, dbURL string) *frontendtest.Backend {
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := pgengine.Open(engine.Spec{Name: "pg", Kind: pgengine.Kind, Endpoint: u.Host,
		Database: strings.TrimPrefix(u.Path, "/"), User: u.User.Username(), Options: map[string]string{"sslmode": "disable"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return frontendtest.NewBackend(eng)
}

// runTrino posts sql with the given headers and follows nextUri to the end; it returns the
// rows, the final error and the headers of every response.
func runTrino(t *testing.T, addr, sql string, header http.Header) ([][]any, *QueryError, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/statement", strings.NewReader(sql))
	if header != nil {
		req.Header = header.Clone()
	}
	if req.Header.Get("X-Trino-User") == "" {
		req.Header.Set("X-Trino-User", "carol")
	}
	resp, qr := do(t, req)
	seen := resp.Header.Clone()
	var data [][]any
	for qr.NextURI != "" {
		resp, qr = get(t, qr.NextURI)
		for k, v := range resp.Header {
			seen[k] = v
		}
		data = append(data, qr.Data...)
	}
	return data, qr.Error, seen
}

// PREPARE answers X-Trino-Added-Prepare, EXECUTE ... USING runs the statement the client sends
// back in X-Trino-Prepared-Statement on PostgreSQL, DEALLOCATE PREPARE answers
// X-Trino-Deallocated-Prepare: Trino's protocol, where the client keeps its statements.
func TestPrepareExecuteDeallocateOnPostgres(t *testing.T) {
	ts := startServer(t, postgresBackend(t), Options{})
	_, qerr, h := runTrino(t, ts.addr, "PREPARE st FROM SELECT ? + 1, 'a?' WHERE ? > 0", nil)
	added := h.Get("X-Trino-Added-Prepare")
	if qerr != nil || added != "st="+url.QueryEscape("SELECT ? + 1, 'a?' WHERE ? > 0") {
		t.Fatalf("PREPARE: err %v, X-Trino-Added-Prepare %q", qerr, added)
	}
	rows, qerr, _ := runTrino(t, ts.addr, "EXECUTE st USING 41, 7", http.Header{"X-Trino-Prepared-Statement": {added}})
	if qerr != nil || len(rows) != 1 || rows[0][0] != float64(42) || rows[0][1] != "a?" {
		t.Fatalf("EXECUTE: err %v, rows %#v", qerr, rows)
	}
	_, qerr, h = runTrino(t, ts.addr, "DEALLOCATE PREPARE st", nil)
	if qerr != nil || h.Get("X-Trino-Deallocated-Prepare") != "st" {
		t.Fatalf("DEALLOCATE: err %v, headers %v", qerr, h)
	}
}

// trino-go-client's parameters (a prepared statement in X-Trino-Prepared-Statement run by
// EXECUTE ... USING) reach PostgreSQL as $1, $2 parameters; a ? in a string stays a ?.
func TestTrinoGoClientParametersOnPostgres(t *testing.T) {
	ts := startServer(t, postgresBackend(t), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://bob@" + ts.addr})
	rows, err := db.Query("select ? + 1, ?, '?' as q, length(?)", 41, "it's", "abc")
	if err != nil {
		t.Fatal(err)
	}
	got := scanAll(t, rows)
	if len(got) != 1 || got[0][0] != int64(42) || got[0][1] != "it's" || got[0][2] != "?" || got[0][3] != int64(3) {
		t.Fatalf("got %#v", got)
	}
}

// PostgreSQL's uuid, json and jsonb reach trino-go-client as Trino's uuid and json: the
// canonical UUID text and the JSON document, with Trino's type names.
func TestUUIDAndJSONFromPostgres(t *testing.T) {
	ts := startServer(t, postgresBackend(t), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://bob@" + ts.addr})
	rows, err := db.Query(`select 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, '{"a": [1, 2]}'::json, '{"b": true}'::jsonb`)
	if err != nil {
		t.Fatal(err)
	}
	types, err := rows.ColumnTypes()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ct := range types {
		names = append(names, ct.DatabaseTypeName())
	}
	got := scanAll(t, rows)
	if strings.Join(names, " ") != "UUID JSON JSON" || len(got) != 1 ||
		got[0][0] != "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11" || got[0][1] != `{"a": [1, 2]}` || got[0][2] != `{"b": true}` {
		t.Fatalf("types %v, rows %#v", names, got)
	}
}

// SET SESSION and RESET SESSION through trino-go-client: the proxy answers them, the client keeps
// the property and sends it in X-Trino-Session with its later statements, until it is reset.
func TestTrinoGoClientSessionProperties(t *testing.T) {
	backend := postgresBackend(t)
	ts := startServer(t, backend, Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://bob@" + ts.addr})
	ctx := context.Background()
	conn, err := db.Conn(ctx) // the session is the client connection's
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sessionOf := func(sql string) string {
		t.Helper()
		var n int64
		if err := conn.QueryRowContext(ctx, sql).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return backend.LastRequest(t).Headers["X-Trino-Session"]
	}
	if _, err := conn.ExecContext(ctx, "SET SESSION query_max_run_time = '10m'"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "SET SESSION pg.batch_size = 500"); err != nil {
		t.Fatal(err)
	}
	if got := sessionOf("select 1"); !strings.Contains(got, "query_max_run_time=10m") || !strings.Contains(got, "pg.batch_size=500") {
		t.Fatalf("X-Trino-Session after SET SESSION: %q", got)
	}
	if _, err := conn.ExecContext(ctx, "RESET SESSION query_max_run_time"); err != nil {
		t.Fatal(err)
	}
	if got := sessionOf("select 2"); strings.Contains(got, "query_max_run_time") || !strings.Contains(got, "pg.batch_size=500") {
		t.Fatalf("X-Trino-Session after RESET SESSION: %q", got)
	}
	// A value that is not a literal is not the proxy's to evaluate: the engine answers it.
	if _, err := conn.ExecContext(ctx, "SET SESSION query_max_run_time = concat('1', '0m')"); err == nil {
		t.Fatal("SET SESSION of an expression succeeded")
	}
}

// PostgreSQL's errors reach trino-go-client by Trino's name and type, with the line and column
// of the statement PostgreSQL pointed at.
func TestTrinoGoClientErrorLocations(t *testing.T) {
	ts := startServer(t, postgresBackend(t), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://bob@" + ts.addr})
	for _, c := range []struct {
		sql, name    string
		line, column int
	}{
		{"selec 1", "SYNTAX_ERROR", 1, 1},
		{"select 1,\n  2 +* 3", "OPERATOR_NOT_FOUND", 2, 5}, // no operator +*
		{"select 'é', x\nfrom  no_such_table", "TABLE_NOT_FOUND", 2, 7},
		{"select 1 +", "SYNTAX_ERROR", 1, 11},
	} {
		_, err := db.Query(c.sql)
		var failed *trino.ErrQueryFailed
		var te *trino.ErrTrino
		if !errors.As(err, &failed) || !errors.As(failed.Reason, &te) {
			t.Fatalf("%q: error %v (%T)", c.sql, err, err)
		}
		if te.ErrorName != c.name || te.ErrorType != "USER_ERROR" || te.ErrorLocation.LineNumber != c.line || te.ErrorLocation.ColumnNumber != c.column {
			t.Errorf("%q: %s %s at %d:%d, want %s at %d:%d", c.sql, te.ErrorName, te.ErrorType,
				te.ErrorLocation.LineNumber, te.ErrorLocation.ColumnNumber, c.name, c.line, c.column)
		}
	}
}
