package pgengine_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/query"
)

// TestMySQLClientsLiteralsOnPostgreSQL: a MySQL client's string literal, as the clients that
// interpolate parameters write it, means on PostgreSQL what it means on MySQL: 'O\'Brien' is
// O'Brien (it was a syntax error), 'C:\\temp' has one backslash (it had two), _binary'...', X'..'
// and 0x.. are the bytes (X'4142' was a bit string); with a bound ? beside them; and a PostgreSQL
// client's 'a\nb' keeps its backslash.
func TestMySQLClientsLiteralsOnPostgreSQL(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	value := func(t interface {
		Helper()
		Fatalf(string, ...any)
	}, protocol, sql string, args ...any) []byte {
		t.Helper()
		rows, err := e.Execute(ctx, &query.Request{SQL: sql, Protocol: protocol, Args: args})
		if err != nil {
			t.Fatalf("%q: %v", sql, err)
		}
		defer rows.Close()
		b, err := rows.Next(ctx)
		if err != nil && err != io.EOF || b == nil || b.NumRows() != 1 {
			t.Fatalf("%q: no row (%v)", sql, err)
		}
		switch c := b.Column(0).(type) {
		case *array.String:
			return []byte(c.Value(0))
		case *array.Binary:
			return c.Value(0)
		default:
			t.Fatalf("%q: a %s column", sql, c.DataType())
		}
		return nil
	}
	for _, v := range []string{"O'Brien", `C:\temp\new`, "a\nb\tc\rd", `100% \% \_`, `\`, "ü€𝄞😀日本語", `say "hi"`, "ctrl-z \x1a", ""} {
		if got := value(t, query.ProtocolMySQL, "SELECT "+mytest.Quote(v)+"::text AS v"); string(got) != v {
			t.Errorf("%s: %q, want %q", mytest.Quote(v), got, v)
		}
		if got := value(t, query.ProtocolMySQL, "SELECT ?::text || "+mytest.Quote(v)+" AS v", "p:"); string(got) != "p:"+v {
			t.Errorf("? || %s: %q, want %q", mytest.Quote(v), got, "p:"+v)
		}
	}
	if got := value(t, query.ProtocolMySQL, `SELECT _binary'\0\'x\\' AS v`); string(got) != "\x00'x\\" {
		t.Errorf("_binary: %q", got)
	}
	for lit, want := range map[string]string{`X'4142'`: "AB", `0x4142`: "AB", `x'00ff'`: "\x00\xff"} {
		if got := value(t, query.ProtocolMySQL, "SELECT "+lit+" AS v"); string(got) != want {
			t.Errorf("%s: %q, want %q", lit, got, want)
		}
	}
	// MySQL reads "..." as a string (PostgreSQL: a name, "column "it's" does not exist").
	for lit, want := range map[string]string{`"it's"`: "it's", `"say ""hi"""`: `say "hi"`, `"a\"b\\c"`: `a"b\c`} {
		if got := value(t, query.ProtocolMySQL, "SELECT "+lit+"::text AS v"); string(got) != want {
			t.Errorf("%s: %q, want %q", lit, got, want)
		}
	}
	if got := value(t, query.ProtocolPostgres, `SELECT 'a\nb'::text AS v`); string(got) != `a\nb` {
		t.Errorf("a PostgreSQL client's literal: %q, want %q", got, `a\nb`)
	}
	rapid.Check(t, func(rt *rapid.T) {
		v := strings.ReplaceAll(rapid.String().Draw(rt, "v")+rapid.SampledFrom([]string{`\`, `'`, `"`, "\n", "\x1a", "%", "''", `\\`}).Draw(rt, "special"), "\x00", "")
		if got := value(rt, query.ProtocolMySQL, "SELECT "+mytest.Quote(v)+"::text AS v"); string(got) != v {
			rt.Fatalf("%s: %q, want %q", mytest.Quote(v), got, v)
		}
		raw := rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(rt, "bytes")
		if got := value(rt, query.ProtocolMySQL, "SELECT _binary"+mytest.Quote(string(raw))+" AS v"); string(got) != string(raw) {
			rt.Fatalf("_binary %x: %x", raw, got)
		}
	})
}
