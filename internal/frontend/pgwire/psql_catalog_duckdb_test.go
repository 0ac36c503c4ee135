package pgwire_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestPsqlCatalogCommandsOnDuckDBAsPostgreSQL: psql's \ddp (default privileges), \dRs and
// \dRs+ (subscriptions) and \dX (extended statistics) list on the embedded DuckDB what they
// list on a fresh PostgreSQL 15 database: headers, columns, no rows (they failed: no
// pg_default_acl, pg_subscription or pg_statistics_obj_is_visible). \dconfig runs too (it
// failed on current_setting(s.name), which DuckDB takes only of a constant); its rows are each
// server's own settings.
func TestPsqlCatalogCommandsOnDuckDBAsPostgreSQL(t *testing.T) {
	psql := func(url string, commands ...string) string {
		args := []string{"-X", "-v", "ON_ERROR_STOP=1", url}
		for _, c := range commands {
			args = append(args, "-c", c)
		}
		cmd := exec.Command("psql", args...)
		cmd.Env = append(cmd.Environ(), "PGCONNECT_TIMEOUT=10")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("psql %v on %s: %v\n%s", commands, url, err, out)
		}
		return string(out)
	}
	pgURL, duck := pgtest.NewDatabase(t), duckProxy(t, "transaction").URL()
	same := []string{`\ddp`, `\dRs`, `\dRs+`, `\dX`}
	if want, got := psql(pgURL, same...), psql(duck, same...); got != want {
		t.Errorf("psql %v:\nPostgreSQL:\n%s\nQueryFlux on DuckDB:\n%s", same, want, got)
	}
	header := func(out string) string { return strings.Join(strings.Fields(strings.SplitN(out, "\n", 3)[1]), " ") }
	if want, got := header(psql(pgURL, `\dconfig`)), header(psql(duck, `\dconfig`)); got != want || want != "Parameter | Value" {
		t.Errorf(`psql \dconfig: columns %q on DuckDB, %q on PostgreSQL`, got, want)
	}
}
