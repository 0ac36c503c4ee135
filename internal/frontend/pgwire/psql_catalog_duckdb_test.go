package pgwire_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestPsqlCatalogCommandsOnDuckDBAsPostgreSQL: psql's \ddp (default privileges), \dRs and
// \dRs+ (subscriptions), \dX (extended statistics), \dl (large objects), \dd (object
// descriptions) and \dO (collations) list on the embedded DuckDB what they list on a fresh
// PostgreSQL 15 database: headers, columns, no rows (they failed: no pg_default_acl,
// pg_subscription, pg_statistics_obj_is_visible, pg_largeobject_metadata, getdatabaseencoding,
// a catalog row's tableoid). \dconfig and the operator class and text search listings run too,
// titled and with columns as there; their rows are each server's own.
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
	same := []string{`\ddp`, `\dRs`, `\dRs+`, `\dX`, `\dl`, `\dd`, `\dO`}
	if want, got := psql(pgURL, same...), psql(duck, same...); got != want {
		t.Errorf("psql %v:\nPostgreSQL:\n%s\nQueryFlux on DuckDB:\n%s", same, want, got)
	}
	header := func(out string) string {
		return strings.Join(strings.Fields(strings.Join(strings.SplitN(out, "\n", 3)[:2], " ")), " ")
	}
	if want, got := header(psql(pgURL, `\dconfig`)), header(psql(duck, `\dconfig`)); got != want || want != "List of non-default configuration parameters Parameter | Value" {
		t.Errorf(`psql \dconfig: %q on DuckDB, %q on PostgreSQL`, got, want)
	}
	// PostgreSQL's own operator classes and families, text search parsers, dictionaries and
	// templates are listed there; DuckDB has none, and lists them under the same title and columns.
	for _, c := range []string{`\dAc`, `\dAf`, `\dAo`, `\dAp`, `\dFp`, `\dFd`, `\dFt`} {
		if want, got := header(psql(pgURL, c)), header(psql(duck, c)); got != want {
			t.Errorf("psql %s: %q on DuckDB, %q on PostgreSQL", c, got, want)
		}
	}
}
