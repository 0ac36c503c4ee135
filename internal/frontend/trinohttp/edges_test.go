package trinohttp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// edgeText has a 2-, 3- and 4-byte UTF-8 character, both quotes, backslashes, a newline and a
// tab: trino-go-client writes it into EXECUTE IMMEDIATE ... USING as a literal.
const edgeText = "O'Brien \"q\" C:\\temp\\new ü€ 𝄞😀 日本語\n\tend"

// TestTrinoGoClientEdgeValues: through trino-go-client, on PostgreSQL and on DuckDB: the text
// above as a bound parameter and as a literal, 100 KB out and 200 KB in, a 2 MB result over
// many pages, and NULL of every type both engines name alike.
func TestTrinoGoClientEdgeValues(t *testing.T) {
	duck, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { duck.Close() })
	for name, backend := range map[string]*frontendtest.Backend{"postgres": postgresBackend(t), "duckdb": frontendtest.NewBackend(duck)} {
		t.Run(name, func(t *testing.T) {
			ts := startServer(t, backend, Options{})
			db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr, Source: "edges"})
			var s, lit string
			if err := db.QueryRow("SELECT CAST(? AS VARCHAR), '"+strings.ReplaceAll(edgeText, "'", "''")+"'", edgeText).Scan(&s, &lit); err != nil || s != edgeText || lit != edgeText {
				t.Fatalf("text: %q %q %v, want %q", s, lit, err, edgeText)
			}
			var out string
			if err := db.QueryRow("SELECT repeat('ab', 50000)").Scan(&out); err != nil || out != strings.Repeat("ab", 50000) {
				t.Fatalf("100 KB out: %d characters, %v", len(out), err)
			}
			var n int64
			if err := db.QueryRow("SELECT length(CAST(? AS VARCHAR))", strings.Repeat("ab", 100000)).Scan(&n); err != nil || n != 200000 {
				t.Fatalf("200 KB in: %d, %v", n, err)
			}
			rows, err := db.Query("SELECT x, repeat('y', 100) FROM generate_series(0, 19999) AS g(x) ORDER BY x")
			if err != nil {
				t.Fatal(err)
			}
			var count, sum int64
			for rows.Next() {
				var x int64
				var y string
				if err := rows.Scan(&x, &y); err != nil {
					t.Fatal(err)
				}
				if y == strings.Repeat("y", 100) {
					count, sum = count+1, sum+x
				}
			}
			if rows.Err() != nil || count != 20000 || sum != 199990000 {
				t.Fatalf("2 MB result: %d rows summing to %d, %v", count, sum, rows.Err())
			}
			types := []string{"INTEGER", "BIGINT", "SMALLINT", "REAL", "DOUBLE PRECISION", "DECIMAL(10,2)", "VARCHAR",
				"DATE", "TIMESTAMP", "TIME", "BOOLEAN"}
			var cols []string
			for _, ty := range types {
				cols = append(cols, fmt.Sprintf("CAST(NULL AS %s)", ty))
			}
			nulls, err := db.Query("SELECT " + strings.Join(cols, ", "))
			if err != nil {
				t.Fatal(err)
			}
			got := scanAll(t, nulls)
			if len(got) != 1 || len(got[0]) != len(types) {
				t.Fatalf("NULLs: %v", got)
			}
			for i, v := range got[0] {
				if v != nil {
					t.Errorf("NULL of %s came as %v", types[i], v)
				}
			}
		})
	}
}
