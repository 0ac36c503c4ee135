package pgwire_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/demo"
	"github.com/queryflux/queryflux/internal/frontend/pgwire"
	"github.com/queryflux/queryflux/internal/netlimit"
)

// TestSavedColumnsHeldInTheBudgetOnDuckDB: the columns a kept statement holds (its Describe's,
// its first run's, kept to check the next runs: resultChanged) count against the connection's
// held bytes, and go back when the statement is closed. SELECT * of a table of 250 columns
// with 60-byte names is 18 bytes of text and about 30 KB of columns: a 128 KiB budget takes a
// few of them, refusing the next with 54000 (before, 12 and more: only the text was counted),
// and a closed statement makes room again.
func TestSavedColumnsHeldInTheBudgetOnDuckDB(t *testing.T) {
	e, err := demo.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	addr := startServer(t, describingEngine{&oneEngine{e: e}}, pgwire.Options{TrustUsers: []string{"*"}, Limits: netlimit.Limits{HeldBytesMax: 128 << 10}})
	ctx := context.Background()
	c, err := pgconn.Connect(ctx, "postgres://u@"+addr+"/demo?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	cols := make([]string, 250)
	for i := range cols {
		cols[i] = fmt.Sprintf("1 AS c%04d_%s", i, strings.Repeat("x", 54))
	}
	if _, err := c.Exec(ctx, "CREATE TABLE wide AS SELECT "+strings.Join(cols, ", ")).ReadAll(); err != nil {
		t.Fatal(err)
	}
	const wide = "SELECT * FROM wide"

	// Described (pgconn's Prepare: Parse, Describe).
	refused := -1
	for i := range 12 {
		if _, err := c.Prepare(ctx, fmt.Sprintf("d%d", i), wide, nil); err != nil {
			if pgCode(err) != "54000" {
				t.Fatalf("statement %d: %v, want 54000", i, err)
			}
			refused = i
			break
		}
	}
	if refused < 2 || refused > 5 {
		t.Fatalf("described statements of 250 columns in a 128 KiB budget: refused at %d, want the 3rd to the 6th", refused)
	}
	for i := range refused {
		if err := c.Deallocate(ctx, fmt.Sprintf("d%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Prepare(ctx, "again", wide, nil); err != nil {
		t.Fatalf("after closing the statements: %v", err)
	}
	if err := c.Deallocate(ctx, "again"); err != nil {
		t.Fatal(err)
	}

	// Run without a Describe: the first run's columns are kept.
	fe := wireConnect(t, addr, "u", "demo")
	refused = -1
	for i := range 12 {
		trace := traceOn(t, fe, &pgproto3.Parse{Name: fmt.Sprintf("r%d", i), Query: wide}, &pgproto3.Bind{PreparedStatement: fmt.Sprintf("r%d", i)},
			&pgproto3.Execute{}, &pgproto3.Sync{})
		if last := trace[len(trace)-2]; last != "complete SELECT 1" {
			if last != "error 54000" {
				t.Fatalf("run %d: %s, want 54000", i, last)
			}
			refused = i
			break
		}
	}
	if refused < 2 || refused > 5 {
		t.Fatalf("statements run with 250 columns in a 128 KiB budget: refused at %d, want the 3rd to the 6th", refused)
	}
}
