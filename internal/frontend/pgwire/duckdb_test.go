package pgwire_test

import (
	"context"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/demo"
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
