package pgwire_test

import (
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
	psql := func(url string, commands ...string) string { return psqlCommands(t, url, commands...) }
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

// psqlCommands is what psql (no psqlrc, stopping at an error) prints for commands on url.
func psqlCommands(t *testing.T, url string, commands ...string) string {
	t.Helper()
	args := []string{"-X", "-v", "ON_ERROR_STOP=1", url}
	for _, c := range commands {
		args = append(args, "-c", c)
	}
	return pgTool(t, "psql", args...)
}

// TestPsqlListsCastsOnDuckDBAsPostgreSQL: psql's \dC on the embedded DuckDB lists the casts
// PostgreSQL 15 lists between the types a client sees here (90 of its 229), each row as
// PostgreSQL prints it: source and target type, the function or "(binary coercible)" / "(with
// inout)", and whether it is implicit (it listed none: pg_cast was empty).
func TestPsqlListsCastsOnDuckDBAsPostgreSQL(t *testing.T) {
	pg, duck := psqlCommands(t, pgtest.NewDatabase(t), `\dC`), psqlCommands(t, memoryDuckProxy(t, "casts").URL(), `\dC`)
	listed := map[string]bool{}
	for _, line := range strings.Split(pg, "\n") {
		listed[strings.Join(strings.Fields(line), " ")] = true
	}
	var rows int
	for _, line := range strings.Split(duck, "\n") {
		if !strings.Contains(line, "|") {
			continue
		}
		rows++
		if !listed[strings.Join(strings.Fields(line), " ")] {
			t.Errorf("psql \\dC on DuckDB lists %q, which PostgreSQL does not", line)
		}
	}
	if rows < 91 || !strings.Contains(duck, "List of casts") {
		t.Errorf("psql \\dC on DuckDB: %d rows, want the header and 90:\n%s", rows, duck)
	}
	for _, want := range []string{"bigint | integer | int4 | in assignment", "character varying | text | (binary coercible) | yes",
		"timestamp without time zone | date | date | in assignment", "integer | boolean | bool | no"} {
		if !listed[want] || !strings.Contains(strings.Join(strings.Fields(duck), " "), want) {
			t.Errorf("psql \\dC: %q on PostgreSQL %v, on DuckDB:\n%s", want, listed[want], duck)
		}
	}
}
