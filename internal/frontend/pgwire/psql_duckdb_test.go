package pgwire_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestPsqlDescribesKeysOnDuckDBAsPostgreSQL: psql's \d of tables with keys, indexes and a
// foreign key lists on DuckDB what it lists on PostgreSQL 15: each index with its method and
// columns ("btree (id)"; before, nothing after PRIMARY KEY, and a CREATE INDEX's own text), the
// foreign keys and the tables referencing this one (before, no such sections: psql asks only
// for a table with triggers, and then ran pg_partition_ancestors, which DuckDB lacked), a check
// constraint as PostgreSQL writes it (DuckDB's text: CHECK((n > 0))). The columns are left
// out: DuckDB keeps no varchar (it is text).
func TestPsqlDescribesKeysOnDuckDBAsPostgreSQL(t *testing.T) {
	pgURL := pgtest.NewDatabase(t)
	duck := duckProxy(t, "transaction")
	describe := func(url string) string {
		args := []string{"-X", "-v", "ON_ERROR_STOP=1", url,
			"-c", "create table dk_parent (id integer primary key, code varchar unique, n integer)",
			"-c", "create table dk_child (id integer primary key, pid integer references dk_parent (id), code varchar references dk_parent (code), n integer check (n > 0))",
			"-c", "create index dk_child_pid_n on dk_child (pid, n)",
			"-c", "create unique index dk_child_n on dk_child (n)",
			"-c", `\d dk_child`, "-c", `\d dk_parent`}
		cmd := exec.Command("psql", args...)
		cmd.Env = append(cmd.Environ(), "PGCONNECT_TIMEOUT=10")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("psql on %s: %v\n%s", url, err, out)
		}
		// The sections after the columns, but for the check constraints.
		var kept []string
		keep := false
		for _, line := range strings.Split(string(out), "\n") {
			switch {
			case strings.HasPrefix(line, "Indexes:"), strings.HasPrefix(line, "Check constraints:"), strings.HasPrefix(line, "Foreign-key constraints:"), strings.HasPrefix(line, "Referenced by:"):
				keep = true
			case !strings.HasPrefix(line, "    "):
				keep = false
			}
			if keep {
				kept = append(kept, line)
			}
		}
		return strings.Join(kept, "\n")
	}
	want, got := describe(pgURL), describe(duck.URL())
	if got != want {
		t.Errorf("psql's \\d differs.\nPostgreSQL:\n%s\nDuckDB:\n%s", want, got)
	}
	if !strings.Contains(want, "Referenced by:") {
		t.Errorf("nothing to compare: PostgreSQL's \\d lists no references:\n%s", want)
	}
}

// TestPsqlDescribesTableAndIndexOnDuckDBAsPostgreSQL: psql's \d+ of a table (each column's
// storage, no "Replica Identity: ???", the access method) and \d of its key constraints'
// indexes (their columns) read on DuckDB as on PostgreSQL, in schema public.
func TestPsqlDescribesTableAndIndexOnDuckDBAsPostgreSQL(t *testing.T) {
	describe := func(url string) string {
		cmd := exec.Command("psql", "-X", "-v", "ON_ERROR_STOP=1", url,
			"-c", "create table dt_item (id integer primary key, name text not null unique, qty integer default 0, price numeric(8,2), tags text[])",
			"-c", `\d+ dt_item`, "-c", `\d dt_item_pkey`, "-c", `\d dt_item_name_key`)
		cmd.Env = append(cmd.Environ(), "PGCONNECT_TIMEOUT=10")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("psql on %s: %v\n%s", url, err, out)
		}
		return string(out)
	}
	want, got := describe(pgtest.NewDatabase(t)), describe(duckProxy(t, "transaction").URL())
	if got != want {
		t.Errorf("psql's \\d+ and \\d of an index differ.\nPostgreSQL:\n%s\nDuckDB:\n%s", want, got)
	}
}

// TestPsqlListsCatalogObjectsOnDuckDBAsPostgreSQL: psql 15's \dy \dc \do \des \drds print on
// DuckDB what they print on an empty PostgreSQL database (each failed: no pg_event_trigger,
// pg_conversion, ...), and \dC \dL \dF the same title and columns: PostgreSQL lists its
// built-in casts, plpgsql and its text search configurations there, which DuckDB has none of.
func TestPsqlListsCatalogObjectsOnDuckDBAsPostgreSQL(t *testing.T) {
	run := func(url, command string) string {
		cmd := exec.Command("psql", "-X", "-v", "ON_ERROR_STOP=1", url, "-c", command)
		cmd.Env = append(cmd.Environ(), "PGCONNECT_TIMEOUT=10")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "error " + err.Error() + ": " + string(out)
		}
		return string(out)
	}
	pgURL, duckURL := pgtest.NewDatabase(t), duckProxy(t, "transaction").URL()
	for _, c := range []string{`\dy`, `\dc`, `\do`, `\des`, `\drds`, `\dC`, `\dL`, `\dF`, `\df+`} {
		want, got := run(pgURL, c), run(duckURL, c)
		if c == `\dC` || c == `\dL` || c == `\dF` { // the title and the column names, whatever their width
			want, got = heading(want), heading(got)
		}
		if got != want {
			t.Errorf("psql's %s differs.\nPostgreSQL:\n%s\nDuckDB:\n%s", c, want, got)
		}
	}
}

// heading is psql's title and column names in out, blanks collapsed.
func heading(out string) string {
	lines := strings.SplitN(out, "\n", 3)
	if len(lines) < 3 {
		return out
	}
	return strings.Join(strings.Fields(lines[0]+" "+lines[1]), " ")
}

// TestPsqlShowsFunctionsOnDuckDBAsPostgreSQL: psql's \sf looks a function up by name
// ('name'::regproc) and prints pg_get_functiondef: a missing function fails as on PostgreSQL 15
// (same message), and now()'s definition begins as PostgreSQL's (its name, result type and
// language; it failed on 'now'::oid).
func TestPsqlShowsFunctionsOnDuckDBAsPostgreSQL(t *testing.T) {
	run := func(url, command string) string {
		cmd := exec.Command("psql", "-X", url, "-c", command)
		cmd.Env = append(cmd.Environ(), "PGCONNECT_TIMEOUT=10")
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	pgURL, duckURL := pgtest.NewDatabase(t), duckProxy(t, "transaction").URL()
	for _, c := range []string{`\sf qf_no_such_function`, `\sf public.qf_no_such_function`, `\sf now`, `\sf pg_catalog.now()`} {
		want, got := run(pgURL, c), run(duckURL, c)
		if lines := strings.SplitAfterN(want, "\n", 4); len(lines) == 4 {
			want = strings.Join(lines[:3], "") // the name, result and language
			got = strings.Join(strings.SplitAfterN(got, "\n", 4)[:min(3, len(strings.SplitAfterN(got, "\n", 4)))], "")
		}
		if got != want {
			t.Errorf("psql's %s differs.\nPostgreSQL:\n%s\nDuckDB:\n%s", c, want, got)
		}
	}
}
