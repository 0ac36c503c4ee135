package trinohttp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/query"
)

func TestErrorsMapToTrino(t *testing.T) {
	cases := []struct {
		err        error
		name, kind string
	}{
		{&query.Error{Code: query.CodeSyntax}, "SYNTAX_ERROR", "USER_ERROR"},
		{&query.Error{Code: query.CodeAccessDenied}, "PERMISSION_DENIED", "USER_ERROR"},
		{&query.Error{Code: query.CodeNoRoute}, "CATALOG_NOT_FOUND", "USER_ERROR"},
		{&query.Error{Code: query.CodeQueueFull}, "QUERY_QUEUE_FULL", "INSUFFICIENT_RESOURCES"},
		{&query.Error{Code: query.CodeCapacityTimeout}, "GENERIC_INSUFFICIENT_RESOURCES", "INSUFFICIENT_RESOURCES"},
		{&query.Error{Code: query.CodeQueryTimeout, TimedOut: true}, "EXCEEDED_TIME_LIMIT", "INSUFFICIENT_RESOURCES"},
		{&query.Error{Code: query.CodeQueryTimeout}, "USER_CANCELED", "USER_ERROR"},
		{query.EngineUnavailable("c", errors.New("dial tcp 10.1.2.3:8080")), "GENERIC_EXTERNAL", "EXTERNAL"},
		{query.CoordinationUnavailable(errors.New("http://cp:9000/worker/capacity")), "GENERIC_INTERNAL_ERROR", "INTERNAL_ERROR"},
		{&query.Error{Code: query.CodeEngine}, "GENERIC_EXTERNAL", "EXTERNAL"},
		{&query.Error{Code: "42P01"}, "TABLE_NOT_FOUND", "USER_ERROR"},
		{&query.Error{Code: "22012"}, "DIVISION_BY_ZERO", "USER_ERROR"}, // Trino's own code for it
		{&query.Error{Code: "XX000"}, "GENERIC_INTERNAL_ERROR", "INTERNAL_ERROR"},
		{&query.Error{Code: "42000", Message: "x [trino DIVISION_BY_ZERO 8 USER_ERROR]"}, "DIVISION_BY_ZERO", "USER_ERROR"},
		{context.Canceled, "USER_CANCELED", "USER_ERROR"},
	}
	for _, c := range cases {
		qe := toQueryError(c.err)
		if qe.ErrorName != c.name || qe.ErrorType != c.kind {
			t.Errorf("%v → %s/%s, want %s/%s", c.err, qe.ErrorName, qe.ErrorType, c.name, c.kind)
		}
	}
	if qe := toQueryError(&query.Error{Code: "42000", Message: "x [trino DIVISION_BY_ZERO 8 USER_ERROR]"}); qe.Message != "x" || qe.ErrorCode != 8 {
		t.Errorf("relayed Trino error: %+v", qe)
	}
}

func TestParseExecuteImmediate(t *testing.T) {
	sql, args, ok := parseExecuteImmediate(`EXECUTE IMMEDIATE 'SELECT ?, ?, ?, ?, ?, ?, ?' USING 1, -2.5, 'it''s', X'00ff', true, NULL, DATE '2024-01-02'`, nil)
	if !ok || sql != "SELECT ?, ?, ?, ?, ?, ?, ?" {
		t.Fatalf("%v %q", ok, sql)
	}
	want := []any{int64(1), -2.5, "it's", []byte{0, 0xff}, true, nil, "2024-01-02"}
	for i := range want {
		if a, w := args[i], want[i]; fmtAny(a) != fmtAny(w) {
			t.Errorf("arg %d: %#v, want %#v", i, a, w)
		}
	}
	if sql, args, ok := parseExecuteImmediate("EXECUTE s1 USING 7", map[string]string{"s1": "SELECT ?"}); !ok || sql != "SELECT ?" || args[0] != int64(7) {
		t.Fatalf("named: %v %q %v", ok, sql, args)
	}
	for _, bad := range []string{"SELECT 1", "EXECUTE IMMEDIATE 'x' USING ARRAY[1]", "EXECUTE nope USING 1", "EXECUTE IMMEDIATE 'x"} {
		if _, _, ok := parseExecuteImmediate(bad, nil); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

func fmtAny(v any) string {
	if b, ok := v.([]byte); ok {
		return "bytes:" + string(b)
	}
	return fmt.Sprintf("%T:%v", v, v)
}

func TestPageRowsBoundsBytes(t *testing.T) {
	wide := []any{strings.Repeat("x", 400<<10)} // 400 KiB
	narrow := []any{int64(1)}
	if n := pageRows([][]any{wide, wide, wide, wide}, 1000, pageBytesTarget); n != 3 {
		t.Fatalf("wide rows per page: %d, want 3", n)
	}
	if n := pageRows([][]any{{strings.Repeat("x", 5<<20)}, narrow}, 1000, pageBytesTarget); n != 1 {
		t.Fatalf("a row larger than the target still goes alone: %d", n)
	}
	many := make([][]any, 5000)
	for i := range many {
		many[i] = narrow
	}
	if n := pageRows(many, 1000, pageBytesTarget); n != 1000 {
		t.Fatalf("narrow rows per page: %d", n)
	}
}

func TestServeAfterCloseReturns(t *testing.T) {
	s, err := NewServer(frontendtest.NewBackend(frontendtest.AllTypesEngine()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	if err := s.Serve(l); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Serve after Close: %v", err)
	}
}
