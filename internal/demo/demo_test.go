package demo_test

import (
	"context"
	"io"
	"testing"

	"github.com/queryflux/queryflux/internal/demo"
	"github.com/queryflux/queryflux/internal/query"
)

func scalar(t *testing.T, e query.Engine, sql string) string {
	t.Helper()
	rows, err := e.Execute(context.Background(), &query.Request{SQL: sql})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	b, err := rows.Next(context.Background())
	if err == io.EOF || err != nil || b.NumRows() != 1 {
		t.Fatalf("%s: no single row (%v)", sql, err)
	}
	return b.Column(0).ValueStr(0)
}

func TestDemoDataset(t *testing.T) {
	e, err := demo.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for sql, want := range map[string]string{
		"select count(*) from customers": "200",
		"select count(*) from products":  "50",
		"select count(*) from orders":    "500",
		"select count(*) from orders o left join customers c using (customer_id) where c.customer_id is null": "0",
		"select count(*) from orders o left join products p using (product_id) where p.product_id is null":    "0",
	} {
		if got := scalar(t, e, sql); got != want {
			t.Errorf("%s = %s, want %s", sql, got, want)
		}
	}
}

// TestDemoIsDeterministic: two loads hold the same rows.
func TestDemoIsDeterministic(t *testing.T) {
	const fingerprint = `select sum(hash(o.order_id, o.customer_id, o.product_id, o.quantity, o.ordered_at, o.status, p.price, c.name, c.signup_date))
		from orders o join products p using (product_id) join customers c using (customer_id)`
	var got []string
	for range 2 {
		e, err := demo.Open()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, scalar(t, e, fingerprint))
		e.Close()
	}
	if got[0] != got[1] {
		t.Fatalf("two loads differ: %v", got)
	}
}
