package duckengine_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// TestReadOnlyFileIsSharedAndKeepsItsCatalog: a database file opened with access_mode
// READ_ONLY (so that several workers can open one file) answers from its tables and from the
// catalog its PostgreSQL clients' CREATE TABLEs wrote (declared types, constraint names), also
// when the file predates a column of that catalog (constraints.deferral, which a read-only file
// cannot be given); writes are refused, and the configuration is locked as on any file.
// DuckDB refused the option outright ("Cannot launch in-memory database in read-only mode").
func TestReadOnlyFileIsSharedAndKeepsItsCatalog(t *testing.T) {
	for _, old := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "shop.duckdb")
		rw := openFile(t, path, nil)
		pgRun(t, rw, "CREATE TABLE t (id integer, name varchar(20), CONSTRAINT t_key PRIMARY KEY (id))")
		pgRun(t, rw, "INSERT INTO t VALUES (1, 'a')")
		if old {
			pgRun(t, rw, `ALTER TABLE shop.queryflux_pg.constraints DROP COLUMN deferral`)
		}
		rw.Close()
		readOnly := map[string]string{"access_mode": "READ_ONLY"}
		a, b := openFile(t, path, readOnly), openFile(t, path, readOnly)
		for name, e := range map[string]query.Engine{"first": a, "second": b} {
			if got := pgValue(t, e, "SELECT count(*) FROM t"); got != "1" {
				t.Errorf("old %v, %s reader: %s rows, want 1", old, name, got)
			}
			if got := pgValue(t, e, "SELECT current_database()"); got != "shop" {
				t.Errorf("old %v, %s reader: current_database() %q, want shop (as read-write)", old, name, got)
			}
			if got := pgValue(t, e, "SELECT character_maximum_length FROM information_schema.columns WHERE table_name = 't' AND column_name = 'name'"); got != "20" {
				t.Errorf("old %v, %s reader: varchar(20)'s length %q, want 20", old, name, got)
			}
			if got := pgValue(t, e, "SELECT conname FROM pg_constraint WHERE contype = 'p'"); got != "t_key" {
				t.Errorf("old %v, %s reader: the primary key's name %q, want t_key", old, name, got)
			}
			var qe *query.Error
			if err := pgErr(e, "INSERT INTO t VALUES (2, 'b')"); !errors.As(err, &qe) || qe.Code != sqlstate.ReadOnlySQLTransaction {
				t.Errorf("old %v, %s reader: an INSERT: %v, want refused as read-only (25006)", old, name, err)
			}
			var access, locked string
			err := e.(*duckengine.Engine).DB().QueryRow("SELECT current_setting('enable_external_access')::text, "+
				"current_setting('lock_configuration')::text").Scan(&access, &locked)
			if err != nil || access != "false" || locked != "true" {
				t.Errorf("old %v, %s reader: external access %s, configuration locked %s (%v); want false, true as on any file",
					old, name, access, locked, err)
			}
		}
		a.Close()
		b.Close()
	}
}

func openFile(t *testing.T, path string, options map[string]string) query.Engine {
	t.Helper()
	e, err := duckengine.Open(engine.Spec{Name: "file", Kind: duckengine.Kind, Endpoint: path, Options: options})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func pgErr(e query.Engine, sql string) error {
	rows, err := e.Execute(context.Background(), &query.Request{SQL: sql, Protocol: query.ProtocolPostgres})
	if err == nil {
		err = rows.Close()
	}
	return err
}

func pgRun(t *testing.T, e query.Engine, sql string) {
	t.Helper()
	if err := pgErr(e, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func pgValue(t *testing.T, e query.Engine, sql string) string {
	t.Helper()
	rows, err := e.Execute(context.Background(), &query.Request{SQL: sql, Protocol: query.ProtocolPostgres})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	b, err := rows.Next(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return b.Column(0).ValueStr(0)
}
