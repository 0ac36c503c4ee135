package duckengine

import (
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// A Trino client's 0.digits literal is DuckDB's decimal of Trino's type (decimal(1,1) for 0.5);
// every other number, a string, a sample's percentage and another protocol's statement are
// left as written.
func TestTrinoFractionLiterals(t *testing.T) {
	for sql, want := range map[string]string{
		"select 0.5":                                  "select CAST(0.5 AS DECIMAL(1,1))",
		"select 0.050, -0.5":                          "select CAST(0.050 AS DECIMAL(3,3)), -CAST(0.5 AS DECIMAL(1,1))",
		"select 0.0":                                  "select CAST(0.0 AS DECIMAL(1,1))",
		"select 10.5, 1.05, 0.5e3, '0.5', x0.5":       "select 10.5, 1.05, 0.5e3, '0.5', x0.5",
		"select * from t tablesample bernoulli (0.5)": "select * from t tablesample bernoulli (0.5)",
	} {
		if got := pgCompat(&query.Request{SQL: sql, Protocol: query.ProtocolTrino}); got != want {
			t.Errorf("%s:\n got %s\nwant %s", sql, got, want)
		}
	}
	if got := pgCompat(&query.Request{SQL: "select 0.5", Protocol: query.ProtocolPostgres}); got != "select 0.5" {
		t.Errorf("a PostgreSQL client's 0.5: %s", got)
	}
}
