package pgengine_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/query"
)

// firstString runs sql on e within ctx (pool path) and returns the first column of the first row.
func firstString(t *testing.T, ctx context.Context, e query.Engine, sql string) string {
	t.Helper()
	rows, err := e.Execute(ctx, &query.Request{SQL: sql})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	b, err := rows.Next(ctx)
	if err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return b.Column(0).ValueStr(0)
}

// TestSessionsRunUnderTheirLeaseTag: a statement runs with application_name set to its
// context's lease tag, on the pool path and on the relay path; a statement without a tag runs
// under the connection's own name again, never under an old lease's; and every engine
// connection has the client_connection_check_interval backstop.
func TestSessionsRunUnderTheirLeaseTag(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	const sql = "select current_setting('application_name')"
	for _, tag := range []string{"qf-lease:pg#1", "qf-lease:pg#2"} {
		if got := firstString(t, query.WithEngineTag(ctx, tag), e, sql); got != tag {
			t.Fatalf("pool path under %q: application_name %q", tag, got)
		}
	}
	if got := firstString(t, ctx, e, sql); got != "" {
		t.Fatalf("untagged statement ran under application_name %q, want the connection's own (empty)", got)
	}
	if got := firstString(t, ctx, e, "select current_setting('client_connection_check_interval')"); got != "1s" {
		t.Fatalf("client_connection_check_interval = %q, want 1s", got)
	}

	pe := e.(*pgengine.Engine)
	relay := func(o engine.PGWireOptions, want string) {
		t.Helper()
		w, err := pe.OpenPGWire(ctx, o)
		if err != nil {
			t.Fatalf("relay path under %q: %v", want, err)
		}
		rows, _, err := simpleOn(t, w, sql)
		_ = w.Close()
		if err != nil || len(rows) != 1 || rows[0] != want {
			t.Fatalf("relay path under %q: application_name %v, %v", want, rows, err)
		}
	}
	relay(engine.PGWireOptions{Owner: 1, Tag: "qf-lease:pg#3"}, "qf-lease:pg#3")
	// Without waiting, the owner's connection serves a statement of the tag it carries, and
	// none of another (it would have to be retagged first).
	relay(engine.PGWireOptions{Owner: 1, Tag: "qf-lease:pg#3", NoWait: true}, "qf-lease:pg#3")
	if _, err := pe.OpenPGWire(ctx, engine.PGWireOptions{Owner: 1, Tag: "qf-lease:pg#5", NoWait: true}); !errors.Is(err, engine.ErrWouldWait) {
		t.Fatalf("a connection tagged for another lease, without waiting: %v, want ErrWouldWait", err)
	}
	relay(engine.PGWireOptions{Owner: 2}, "")
	// The tag in the context, as the core handed it before PGWireOptions.Tag.
	w, err := pe.OpenPGWire(query.WithEngineTag(ctx, "qf-lease:pg#4"), engine.PGWireOptions{Owner: 2})
	if err != nil {
		t.Fatal(err)
	}
	if rows, _, err := simpleOn(t, w, sql); err != nil || len(rows) != 1 || rows[0] != "qf-lease:pg#4" {
		t.Fatalf("relay path under a context's tag: application_name %v, %v", rows, err)
	}
	_ = w.Close()
}
