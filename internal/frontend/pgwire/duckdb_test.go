package pgwire_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/demo"
	"github.com/queryflux/queryflux/internal/query"
)

func demoServer(t *testing.T) string {
	t.Helper()
	e, err := demo.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return startServer(t, describingEngine{&oneEngine{e: e}}, pgwireTrustAll())
}

func TestPsqlOnDemo(t *testing.T) {
	addr := demoServer(t)
	out, err := psql(t, addr, "-c", "select count(*) from orders; select name, price from products order by product_id limit 2")
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	if !strings.HasPrefix(out, "500\n") || !strings.Contains(out, "Gadget 1|") {
		t.Fatalf("unexpected psql output:\n%s", out)
	}
	for _, meta := range []string{`\dt`, `\d orders`, `\l`} {
		out, err := psql(t, addr, "-c", meta)
		t.Logf("psql -c %s: err=%v\n%s", meta, err, out)
	}
}

func TestPGXOnDemo(t *testing.T) {
	addr := demoServer(t)
	c := connect(t, proxyURL(addr, "alice"))
	ctx := context.Background()
	var n int64
	var total float64
	err := c.QueryRow(ctx, "select count(*), sum(price * quantity)::double from orders join products using (product_id) where customer_id = $1 and status = $2", 14, "shipped").Scan(&n, &total)
	if err != nil {
		t.Fatal(err)
	}
	var direct int64
	if err := c.QueryRow(ctx, "select count(*) from orders where customer_id = 14 and status = 'shipped'").Scan(&direct); err != nil {
		t.Fatal(err)
	}
	if n != direct {
		t.Fatalf("with parameters %d rows, with literals %d", n, direct)
	}
	rows, err := c.Query(ctx, "select order_id, ordered_at, price from orders join products using (product_id) order by order_id")
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for rows.Next() {
		count++
	}
	if rows.Err() != nil || count != 500 {
		t.Fatalf("streamed %d rows: %v", count, rows.Err())
	}
}

// TestSessionSettingsAnsweredLocally: what JDBC and others send at connect works on DuckDB,
// which has no such settings, and application_name changes what the backend is told.
func TestSessionSettingsAnsweredLocally(t *testing.T) {
	e, err := demo.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	rec := &recordingBackend{oneEngine: &oneEngine{e: e}}
	addr := startServer(t, rec, pgwireTrustAll())
	c := connect(t, proxyURL(addr, "alice"))
	ctx := context.Background()
	for _, sql := range []string{"SET extra_float_digits = 3", "set application_name to 'report-tool'", "SET client_encoding = 'UTF8'", "SET DateStyle = ISO"} {
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec} {
			if tag, err := c.Exec(ctx, sql, mode); err != nil || tag.String() != "SET" {
				t.Fatalf("%s: tag %q err %v", sql, tag, err)
			}
		}
	}
	if _, err := c.Exec(ctx, "SET client_encoding = 'LATIN1'"); err == nil {
		t.Fatal("LATIN1 client_encoding accepted")
	}
	if got := c.PgConn().ParameterStatus("application_name"); got != "report-tool" {
		t.Fatalf("application_name status %q", got)
	}
	var n int
	if err := c.QueryRow(ctx, "select count(*) from customers").Scan(&n); err != nil || n != 200 {
		t.Fatalf("count: %d %v", n, err)
	}
	if got := rec.last.Load().Headers["application_name"]; got != "report-tool" {
		t.Fatalf("backend saw application_name %q", got)
	}
}

type recordingBackend struct {
	*oneEngine
	last atomic.Pointer[query.Request]
}

func (b *recordingBackend) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	b.last.Store(q)
	return b.oneEngine.Execute(ctx, q)
}

func TestDuckDBTransactionsArePinned(t *testing.T) {
	addr := demoServer(t)
	c := connect(t, proxyURL(addr, "alice"))
	ctx := context.Background()
	count := func() int {
		var n int
		if err := c.QueryRow(ctx, "select count(*) from customers").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "delete from customers where customer_id > 100"); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 100 || c.PgConn().TxStatus() != 'T' {
		t.Fatalf("inside the transaction: %d customers, status %q", n, c.PgConn().TxStatus())
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 200 || c.PgConn().TxStatus() != 'I' {
		t.Fatalf("after rollback: %d customers, status %q", n, c.PgConn().TxStatus())
	}
}
