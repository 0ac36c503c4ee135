// Package demo holds the embedded default's demo dataset: a small shop (customers, products,
// orders) generated deterministically by SQL into an in-memory DuckDB, so a fresh install has
// something to query.
//
// determinism: outside the simulator (opens an embedded DuckDB engine)
package demo

import (
	"context"
	"fmt"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/query"
)

// Table sizes.
const (
	Customers = 200
	Products  = 50
	Orders    = 500
)

// schemaSQL builds the dataset from arithmetic on row numbers only: the same rows every time.
var schemaSQL = []string{
	fmt.Sprintf(`CREATE TABLE products AS
	SELECT i AS product_id,
	       ['Widget', 'Gadget', 'Gizmo', 'Doohickey', 'Sprocket'][i %% 5 + 1] || ' ' || i AS name,
	       ['tools', 'toys', 'garden', 'kitchen'][i %% 4 + 1] AS category,
	       CAST(1 + ((i * 3797) %% 9000) / 100.0 AS DECIMAL(10, 2)) AS price
	FROM range(1, %d) t(i)`, Products+1),
	fmt.Sprintf(`CREATE TABLE customers AS
	SELECT i AS customer_id,
	       ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Frances', 'Ken'][i %% 8 + 1] || ' ' ||
	       ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Allen', 'Thompson', 'Ritchie'][i %% 9 + 1] AS name,
	       'customer' || i || '@example.com' AS email,
	       ['FR', 'DE', 'US', 'JP', 'BR', 'IN'][i %% 6 + 1] AS country,
	       DATE '2023-01-01' + CAST((i * 7) %% 365 AS INTEGER) AS signup_date
	FROM range(1, %d) t(i)`, Customers+1),
	fmt.Sprintf(`CREATE TABLE orders AS
	SELECT i AS order_id,
	       CAST((i * 13) %% %d + 1 AS INTEGER) AS customer_id,
	       CAST((i * 7) %% %d + 1 AS INTEGER) AS product_id,
	       CAST(i %% 5 + 1 AS INTEGER) AS quantity,
	       TIMESTAMP '2024-01-01 08:00:00' + to_minutes(CAST((i * 97) %% 525600 AS BIGINT)) AS ordered_at,
	       ['pending', 'shipped', 'delivered', 'cancelled'][i %% 4 + 1] AS status
	FROM range(1, %d) t(i)`, Customers, Products, Orders+1),
}

// Open returns an in-memory DuckDB engine holding the demo dataset.
func Open() (query.Engine, error) {
	e, err := duckengine.Open(engine.Spec{Name: "demo", Kind: duckengine.Kind, Endpoint: ":memory:"})
	if err != nil {
		return nil, err
	}
	if err := Load(context.Background(), e); err != nil {
		_ = e.Close()
		return nil, err
	}
	return e, nil
}

// Load creates the demo tables in e.
func Load(ctx context.Context, e query.Engine) error {
	for _, sql := range schemaSQL {
		rows, err := e.Execute(ctx, &query.Request{SQL: sql})
		if err != nil {
			return fmt.Errorf("demo: load: %w", err)
		}
		_ = rows.Close()
	}
	return nil
}
