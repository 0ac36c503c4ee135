package trinohttp

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/query"
)

// SET PATH is answered by the proxy with X-Trino-Set-Path, the path printed as Trino prints it,
// which trino-go-client keeps and sends back with its next statements as X-Trino-Path. An
// element without a catalog needs the client's (MISSING_CATALOG_NAME), and a client that did
// not declare the PATH capability is refused it (NOT_SUPPORTED), as by Trino.
func TestSetPathIsKeptByTheClient(t *testing.T) {
	backend := frontendtest.NewBackend(frontendtest.FuncEngine(func(context.Context, *query.Request) (query.Rows, error) {
		return frontendtest.NewRecordRows(arrow.NewSchema(nil, nil), "CREATE TABLE"), nil
	}))
	ts := startServer(t, backend, Options{})

	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	conn, err := db.Conn(context.Background()) // the path lasts for the client connection it was set on
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "SET PATH s1"); trinoErrorName(err) != "MISSING_CATALOG_NAME" {
		t.Fatalf("SET PATH schema without a catalog: %v", err)
	}
	path := `Cat1.s_1 , "we""ird" . "x y", c2.s2;`
	if _, err := conn.ExecContext(context.Background(), "set path "+path); err != nil {
		t.Fatalf("SET PATH %s: %v", path, err)
	}
	if _, err := conn.ExecContext(context.Background(), "CREATE TABLE t (a int)"); err != nil {
		t.Fatal(err)
	}
	if got, want := backend.LastRequest(t).Headers["X-Trino-Path"], `Cat1.s_1, "we""ird"."x y", c2.s2`; got != want {
		t.Fatalf("after SET PATH the client sent X-Trino-Path %q, want %q", got, want)
	}

	// A client without the PATH capability, by hand.
	req, _ := http.NewRequest(http.MethodPost, "http://"+ts.addr+"/v1/statement", strings.NewReader("SET PATH c.s"))
	req.Header.Set("X-Trino-User", "carol")
	req.Header.Set("X-Trino-Client-Capabilities", "PARAMETRIC_DATETIME")
	_, qr := do(t, req)
	_, qr = readAll(t, qr)
	if qr.Error == nil || qr.Error.ErrorName != "NOT_SUPPORTED" || qr.Error.Message != "SET PATH not supported by client" {
		t.Fatalf("SET PATH from a client without PATH: %+v", qr.Error)
	}
}

// The path's text for each form of its names, and what is left to the engine.
func TestSetPathText(t *testing.T) {
	for _, c := range []struct{ sql, want string }{
		{"SET PATH a.b", "a.b"},
		{"set   path  A.B,c.d  ", "A.B, c.d"},
		{`SET PATH "a"."b""c"`, `"a"."b""c"`},
		{"SET PATH _x.y2;", "_x.y2"},
		{"SET PATH s", "s"},
		{"SET PATH 1a.b", ""},  // not an identifier
		{`SET PATH "".b`, ""},  // an empty quoted name
		{`SET PATH "a.b`, ""},  // an unclosed quote
		{"SET PATH a.b c", ""}, // more after the path
		{"SET PATH a.b,", ""},  // an element missing
		{"SET PATH a.b.c", ""}, // three parts
		{"SET PATHS a.b", ""},  // not SET PATH
		{"SET PATH", ""},       // no element
	} {
		req := &query.Request{SQL: c.sql, Database: "cat", Headers: map[string]string{"X-Trino-Client-Capabilities": "X,PATH"}}
		update, h, ok, err := sessionStatement(req)
		got := ""
		if ok {
			if err != nil || update != "SET PATH" {
				t.Fatalf("%q: %q, %v", c.sql, update, err)
			}
			got = h.Get("X-Trino-Set-Path")
		}
		if got != c.want {
			t.Errorf("%q: X-Trino-Set-Path %q (answered %v), want %q", c.sql, got, ok, c.want)
		}
	}
}

// The npm trino-client declares no client capabilities, so its SET PATH is refused as Trino
// refuses it (NOT_SUPPORTED) and the client goes on with its next statement. Declared by hand
// (its extraHeaders), the PATH capability gets SET PATH answered, but the client does not keep
// X-Trino-Set-Path: its next statement names no path. If a client version starts keeping it,
// the last check fails and the path reaches the engine as it does from trino-go-client.
func TestSetPathFromTheNPMClient(t *testing.T) {
	backend := frontendtest.NewBackend(frontendtest.FuncEngine(func(context.Context, *query.Request) (query.Rows, error) {
		return frontendtest.NewRecordRows(arrow.NewSchema(nil, nil), "CREATE TABLE"), nil
	}))
	ts := startServer(t, backend, Options{})

	got := runNPM(t, ts.addr, "alice", npmStep{Name: "path", SQL: "SET PATH cat.s1"}, npmStep{Name: "next", SQL: "CREATE TABLE t (a int)"})
	if e := got["path"].Error; e == nil || e.ErrorName != "NOT_SUPPORTED" || e.ErrorCode != 13 || e.ErrorType != "USER_ERROR" ||
		e.Message != "SET PATH not supported by client" {
		t.Fatalf("SET PATH from the npm client: %+v (error %+v)", got["path"].OK, e)
	}
	if got["next"].Error != nil {
		t.Fatalf("the statement after a refused SET PATH: %+v", got["next"].Error)
	}
	if p, ok := backend.LastRequest(t).Headers["X-Trino-Path"]; ok {
		t.Fatalf("after a refused SET PATH the client sent X-Trino-Path %q", p)
	}

	path := map[string]string{"X-Trino-Client-Capabilities": "PATH"}
	got = runNPMWith(t, ts.addr, "alice", "", "", path, npmStep{Name: "path", SQL: `set path cat.s1, "we""ird".s2`},
		npmStep{Name: "next", SQL: "CREATE TABLE t (a int)"})
	if got["path"].Error != nil || got["next"].Error != nil {
		t.Fatalf("SET PATH from the npm client with PATH declared: %+v, then %+v", got["path"].Error, got["next"].Error)
	}
	if p, ok := backend.LastRequest(t).Headers["X-Trino-Path"]; ok {
		t.Fatalf("the npm client kept the path it was given and sent X-Trino-Path %q", p)
	}
	for _, r := range backend.Requests() {
		if strings.Contains(strings.ToUpper(r.SQL), "PATH") {
			t.Fatalf("SET PATH reached the engine: %q", r.SQL)
		}
	}
}
