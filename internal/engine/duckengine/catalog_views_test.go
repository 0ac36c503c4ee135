package duckengine

import (
	"context"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestCatalogDeclaredAnswers: what pg_constraint, pg_attribute and pg_class answer for a
// PostgreSQL client's declared constraint names, referential actions, deferral, storage and
// check counts, as PostgreSQL 16 answers them for the same tables.
func TestCatalogDeclaredAnswers(t *testing.T) {
	e := openDjango(t)
	for _, s := range []string{
		`CREATE TABLE chk (id serial PRIMARY KEY, a varchar(5) CHECK (a <> 'x'), n numeric(10,2), tags text[], b bytea, CONSTRAINT chk_u UNIQUE (a, n))`,
		`CREATE TABLE fkact (id int PRIMARY KEY, c int CONSTRAINT my_fk REFERENCES chk (id) ON DELETE CASCADE ON UPDATE SET NULL DEFERRABLE)`,
	} {
		drainRequest(t, e, s)
	}
	for sql, want := range map[string]string{
		`SELECT cl.relname, c.conname, c.contype, c.confupdtype, c.confdeltype, c.condeferrable, c.condeferred
			FROM pg_catalog.pg_constraint c JOIN pg_catalog.pg_class cl ON cl.oid = c.conrelid
			WHERE cl.relname IN ('chk', 'fkact') AND c.contype <> 'c' ORDER BY 1, 2`: "chk|chk_pkey|p| | |false|false\n" +
			"chk|chk_u|u| | |false|false\nfkact|fkact_pkey|p| | |false|false\nfkact|my_fk|f|n|c|true|false",
		`SELECT a.attname, a.attstorage FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
			WHERE c.relname = 'chk' AND a.attnum > 0 ORDER BY a.attnum`: "id|p\na|x\nn|m\ntags|x\nb|x",
		`SELECT relname, relchecks, relhastriggers FROM pg_catalog.pg_class WHERE relname IN ('chk', 'fkact', 'auth_group') ORDER BY 1`: "auth_group|0|true\nchk|1|true\nfkact|0|true",
		// Django's get_constraints on a table whose keys' names are DuckDB's and declared ones.
		strings.ReplaceAll(djangoIntrospection["constraints"], "'auth_user'", "'fkact'") + " ORDER BY 1": "fkact_pkey|['id']|p|<nil>|<nil>\nmy_fk|['c']|f|chk.id|<nil>",
		strings.ReplaceAll(djangoIntrospection["relations"], "'auth_user_groups'", "'fkact'"):            "c|chk|id",
		// pg_dump's: the functions given a row's unqualified oid answer that row's.
		`SELECT conname, pg_catalog.pg_get_constraintdef(oid), pg_catalog.pg_get_constraintdef(oid, true) FROM pg_catalog.pg_constraint
			WHERE conrelid IN (SELECT oid FROM pg_catalog.pg_class WHERE relname IN ('chk', 'fkact')) AND contype <> 'c' ORDER BY 1`: "chk_pkey|PRIMARY KEY (id)|PRIMARY KEY (id)\n" +
			"chk_u|UNIQUE (a, n)|UNIQUE (a, n)\nfkact_pkey|PRIMARY KEY (id)|PRIMARY KEY (id)\n" +
			"my_fk|FOREIGN KEY (c) REFERENCES chk(id) ON UPDATE SET NULL ON DELETE CASCADE DEFERRABLE|FOREIGN KEY (c) REFERENCES chk(id) ON UPDATE SET NULL ON DELETE CASCADE DEFERRABLE",
		`SELECT oid::regclass::text FROM pg_catalog.pg_class WHERE relname IN ('chk', 'fkact') ORDER BY 1`: "chk\nfkact",
		// Every column pg_attribute lists is of a relation pg_class lists (the client's database's).
		`SELECT count(*) FROM pg_catalog.pg_attribute a WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = a.attrelid)`: "0",
	} {
		if got := rowsText(t, e, sql); got != want {
			t.Errorf("%s\n got %q\nwant %q", sql, got, want)
		}
	}
}

func drainRequest(t *testing.T, e *Engine, sql string) {
	t.Helper()
	rows, err := e.Execute(context.Background(), &query.Request{SQL: sql, Protocol: query.ProtocolPostgres})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	rows.Close()
}

// rowsText is a PostgreSQL client's statement's rows: values by |, rows by newlines.
func rowsText(t *testing.T, e *Engine, sql string) string {
	t.Helper()
	ctx := context.Background()
	rows, err := e.Execute(ctx, &query.Request{SQL: sql, Protocol: query.ProtocolPostgres})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	var out []string
	for {
		b, err := rows.Next(ctx)
		if err != nil {
			break
		}
		for r := range int(b.NumRows()) {
			var cols []string
			for c := range int(b.NumCols()) {
				if b.Column(c).IsNull(r) {
					cols = append(cols, "<nil>")
				} else {
					cols = append(cols, b.Column(c).ValueStr(r))
				}
			}
			out = append(out, strings.Join(cols, "|"))
		}
	}
	return strings.Join(out, "\n")
}
