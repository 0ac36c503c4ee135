package flightsql

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
)

// TestXdbcTypeInfoNamesTheEnginesTypes: GetXdbcTypeInfo (JDBC's getTypeInfo) answers each
// engine's own types, ordered by XDBC number: every type it lists, with its create
// parameters filled in, declares a column on that engine (PostgreSQL, DuckDB, MariaDB), and a
// filter by number lists only that number's types.
func TestXdbcTypeInfoNamesTheEnginesTypes(t *testing.T) {
	wantInts := map[string]string{"postgres": "[integer]", "duckdb": "[INTEGER]", "mysql": "[INT MEDIUMINT]"}
	for _, spec := range txEngines(t) {
		t.Run(spec.Kind, func(t *testing.T) {
			c := startServer(t, engineCore(t, spec), Options{Auth: passwords{"alice": "pw"}})
			ctx := login(t, c, "alice", "pw")
			info, err := c.GetXdbcTypeInfo(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			schema, rows := fetch(t, ctx, c, info)
			if !schema.Equal(schema_ref.XdbcTypeInfo) {
				t.Fatalf("schema %v", schema)
			}
			if len(rows) < 10 {
				t.Fatalf("%d types: %v", len(rows), rows)
			}
			last := int64(-100)
			for i, r := range rows {
				n, _ := strconv.ParseInt(r[1], 10, 32)
				if n < last {
					t.Fatalf("type %s (%d) after one of %d: not ordered by data_type", r[0], n, last)
				}
				last = n
				decl := r[0]
				switch params := r[5]; {
				case strings.Contains(params, "scale"):
					decl += "(10,2)"
				case strings.Contains(params, "length"):
					decl += "(10)"
				}
				mustUpdate(t, ctx, c, fmt.Sprintf("CREATE TABLE xt%d (c %s)", i, decl))
			}
			integer := int32(4)
			info, err = c.GetXdbcTypeInfo(ctx, &integer)
			if err != nil {
				t.Fatal(err)
			}
			_, rows = fetch(t, ctx, c, info)
			var names []string
			for _, r := range rows {
				names = append(names, r[0])
			}
			if fmt.Sprint(names) != wantInts[spec.Kind] {
				t.Fatalf("INTEGER (4) types: %v, want %s", names, wantInts[spec.Kind])
			}
		})
	}
}
