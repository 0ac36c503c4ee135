package mysqlengine

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/query"
)

// extendedInfo reads the extended metadata block of a column definition packet (header
// included); ok is false when it has none.
func extendedInfo(t *testing.T, p []byte) (block string, ok bool) {
	t.Helper()
	def, pos := p[4:], 0
	for range 6 {
		_, _, n, err := mysql.LengthEncodedString(def[pos:])
		if err != nil {
			t.Fatalf("column definition %q: %v", def, err)
		}
		pos += n
	}
	if len(def)-pos == 13 { // 0x0c and the 12 bytes it announces: no block
		return "", false
	}
	b, _, _, err := mysql.LengthEncodedString(def[pos:])
	if err != nil {
		t.Fatalf("column definition %q: %v", def, err)
	}
	return string(b), true
}

// TestExtendedMetadataRelayed: a request whose client asked for MariaDB's extended metadata
// runs, on every relay path (QueryRaw, ExecuteRaw, a loop connection), on a connection opened
// with it: its column definitions carry MariaDB's extended type info (a JSON column's
// format=json, a UUID's type name), and its warnings are read. Requests that did not ask never
// get such a connection (their definitions have no block), pooled or new. On the Arrow path
// (Execute, prepared, a pinned session) go-mysql reads the answer without the blocks, and the
// Arrow fields carry them.
func TestExtendedMetadataRelayed(t *testing.T) {
	e, name := openTestEngine(t)
	exec(t, e, "CREATE TABLE m (j JSON, u UUID)")
	if !e.ExtendedMetadata() {
		t.Fatal("MariaDB's offer of extended metadata was not seen")
	}
	ctx := context.Background()
	const sel = "SELECT j, u FROM m"
	paths := map[string]func(q *query.Request) (columns [][]byte, done func()){
		"QueryRaw": func(q *query.Request) ([][]byte, func()) {
			r, err := e.QueryRaw(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			return r.Columns(), func() { _ = r.Close() }
		},
		"ExecuteRaw": func(q *query.Request) ([][]byte, func()) {
			r, err := e.ExecuteRaw(ctx, q, StmtParams{})
			if err != nil {
				t.Fatal(err)
			}
			return r.Columns(), func() { _ = r.Close() }
		},
		"loop": func(q *query.Request) ([][]byte, func()) {
			lc := e.TakeLoopConn(q)
			if lc == nil {
				var err error
				if lc, err = e.OpenLoopConn(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			// What the loop relays: the connection's own packets.
			r := &RawQuery{e: e, conn: lc.c, sql: q.SQL, buf: getRelayBuffers(), classicEOF: true}
			if err := r.start(r.queryPacket()); err != nil {
				t.Fatal(err)
			}
			return r.columns, func() {
				for _, more := r.NextRows(); more; _, more = r.NextRows() {
				}
				lc.c.Sequence = r.seq
				putRelayBuffers(r.buf)
				lc.Release(true)
			}
		},
	}
	for path, run := range paths {
		t.Run(path, func(t *testing.T) {
			for round := range 3 { // later rounds take pooled connections
				for _, asked := range []bool{true, false} {
					cols, done := run(&query.Request{SQL: sel, Database: name, ExtendedMetadata: asked})
					if len(cols) != 2 {
						t.Fatalf("round %d: %d columns", round, len(cols))
					}
					for i, want := range []string{"\x01\x04json", "\x00\x04uuid"} {
						block, ok := extendedInfo(t, cols[i])
						if asked && (!ok || block != want) {
							t.Errorf("round %d, asked: column %d's extended metadata %q (%v), want %q", round, i, block, ok, want)
						}
						if !asked && ok {
							t.Errorf("round %d, not asked: column %d has extended metadata %q", round, i, block)
						}
					}
					done()
				}
			}
		})
	}
	t.Run("warnings", func(t *testing.T) {
		r, err := e.QueryRaw(ctx, &query.Request{SQL: "SELECT CAST('12x' AS SIGNED) AS n", Database: name, ExtendedMetadata: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, more := r.NextRows(); more; _, more = r.NextRows() {
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if ws := r.Warnings(); len(ws) != 1 || ws[0].Code != 1292 {
			t.Fatalf("warnings %+v, want one 1292", ws)
		}
	})
	t.Run("Arrow path", func(t *testing.T) {
		exec(t, e, `INSERT INTO m VALUES ('{"a": 1}', '123e4567-e89b-12d3-a456-426614174000')`)
		runs := map[string]func(q *query.Request) (query.Rows, error){
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
		for run, execute := range runs {
			for round := range 3 {
				for _, asked := range []bool{true, false} {
					rows, err := execute(&query.Request{SQL: sel, Database: name, ExtendedMetadata: asked})
					if err != nil {
						t.Fatalf("%s, round %d, asked %v: %v", run, round, asked, err)
					}
					for i, want := range []string{"\x01\x04json", "\x00\x04uuid"} {
						block, ok := rows.Schema().Field(i).Metadata.GetValue(ExtendedMetadataKey)
						if asked && block != want || !asked && ok {
							t.Errorf("%s, round %d, asked %v: column %d's extended metadata %q (%v)", run, round, asked, i, block, ok)
						}
					}
					batch, err := rows.Next(ctx)
					if err != nil || batch.NumRows() != 1 {
						t.Fatalf("%s, round %d, asked %v: %v", run, round, asked, err)
					}
					if got := fmt.Sprint(batch.Column(0), batch.Column(1)); got != `["{\"a\": 1}"] ["123e4567-e89b-12d3-a456-426614174000"]` {
						t.Errorf("%s, round %d, asked %v: %s", run, round, asked, got)
					}
					rows.Close()
				}
			}
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, c := range e.idle[flagExtendedMetadata] {
			if !hasMetadata(c) {
				t.Error("a connection without extended metadata pooled as one with it")
			}
		}
		for _, c := range e.idle[0] {
			if hasMetadata(c) {
				t.Error("a connection with extended metadata pooled as one without it")
			}
		}
	})
}

// TestExtendedMetadataFromAServerWithout: a client that asked for extended metadata, relayed
// from a server that has none (a MySQL server, here a fake), gets column definitions with an
// empty block each, as it expects them; the event loop, which relays them as they are, takes
// none of its statements; and the engine says its server has none.
func TestExtendedMetadataFromAServerWithout(t *testing.T) {
	fake := mytest.NewFake(t, func(string) ([][]byte, bool) { return mytest.FakeResult("c", "1"), false })
	e, err := Open(Config{Name: "fake", Addr: fake.Addr, User: mytest.FakeUser})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ctx := context.Background()
	for round := range 2 {
		for _, asked := range []bool{true, false} {
			q := &query.Request{SQL: "SELECT c", ExtendedMetadata: asked}
			r, err := e.QueryRaw(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			block, ok := extendedInfo(t, r.Columns()[0])
			if ok != asked || block != "" {
				t.Errorf("round %d, asked %v: extended metadata %q (%v)", round, asked, block, ok)
			}
			for _, more := r.NextRows(); more; _, more = r.NextRows() {
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if asked {
				if lc := e.TakeLoopConn(q); lc != nil {
					t.Error("a loop connection for a client that asked")
				}
				if _, err := e.OpenLoopConn(ctx, q); !errors.Is(err, ErrNoLoop) {
					t.Errorf("OpenLoopConn for a client that asked: %v, want ErrNoLoop", err)
				}
			}
		}
	}
	if e.ExtendedMetadata() {
		t.Error("the fake's MySQL greeting taken for an offer of extended metadata")
	}
}
