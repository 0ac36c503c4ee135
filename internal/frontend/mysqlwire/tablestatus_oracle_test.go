package mysqlwire

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// TestTableStatusOnDuckDBAsMariaDB: SHOW TABLE STATUS (what GUI tools and migration tools read
// for a table's engine and next AUTO_INCREMENT value) answers through the proxy on DuckDB with
// MariaDB's columns and, in the columns a catalog can hold alike, MariaDB's values: for a table
// with an AUTO_INCREMENT key after inserts, after a TRUNCATE (which starts the counter again),
// and for a view. Create_time, the sizes and the row estimate are each engine's own.
func TestTableStatusOnDuckDBAsMariaDB(t *testing.T) {
	const ddl = "CREATE TABLE st_t (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, v INT)"
	script := []string{ddl, "INSERT INTO st_t (v) VALUES (1), (2), (3)", "status",
		"TRUNCATE TABLE st_t", "status", "INSERT INTO st_t (v) VALUES (4)", "status",
		"CREATE VIEW st_v AS SELECT v FROM st_t", "SHOW TABLE STATUS LIKE 'st_v'"}
	run := func(d *sql.DB) string {
		ctx := context.Background()
		var b strings.Builder
		for _, s := range script {
			q := s
			if s == "status" {
				q = "SHOW TABLE STATUS LIKE 'st_t'"
			}
			if !strings.HasPrefix(q, "SHOW") {
				if _, err := d.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				continue
			}
			rows, err := d.QueryContext(ctx, q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			cols, _ := rows.Columns()
			vals, err := frontendtest.ScanAll(rows)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s: %s\n", q, strings.Join(cols, ","))
			for _, row := range vals {
				for i, c := range cols {
					switch c {
					case "Name", "Engine", "Version", "Row_format", "Auto_increment", "Checksum", "Create_options", "Comment", "Temporary":
						fmt.Fprintf(&b, " %s=%v", c, cell(row[i]))
					}
				}
				b.WriteString("\n")
			}
		}
		return b.String()
	}
	maria := coreServer(t, coreSetup{})
	want := run(maria.direct)
	eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	got := run(openDB(t, serveCore(t, "duck", eng, coreSetup{}).addr, testUser, "", "", ""))
	if got != want {
		t.Errorf("on DuckDB:\n%s\non MariaDB:\n%s", got, want)
	}
}

// cell is a scanned value as text: NULL for nil, the bytes' text.
func cell(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return string(v)
	}
	return fmt.Sprint(v)
}
