package pgwire_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/testlong"
)

// An application's first day on the embedded default reads as on PostgreSQL: appflow.js (node-
// postgres's Pool) and appflow.py (psycopg2) print the same lines against a real PostgreSQL
// database and through QueryFlux on DuckDB.
func TestNodePostgresAppFlowOnDuckDB(t *testing.T) {
	sameOnDuckDB(t, "node", "appflow.js")
}

func TestPsycopg2AppFlowOnDuckDB(t *testing.T) {
	sameOnDuckDB(t, "/usr/bin/python3", "appflow.py")
}

// sameOnDuckDB runs script with interpreter against PostgreSQL and through QueryFlux on DuckDB,
// its one argument the database's URL, and compares what it printed.
func sameOnDuckDB(t *testing.T, interpreter, script string) {
	sameOn(t, duckProxy(t, "transaction").URL(), interpreter, script)
}

// sameOn is sameOnDuckDB with the proxy's URL given (one to an empty database: memoryDuckProxy).
func sameOn(t *testing.T, duck, interpreter, script string) {
	want, err := pgclienttest.Command(t, time.Minute, nil, interpreter, script, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatalf("%s on PostgreSQL: %v\n%s", script, err, want)
	}
	got, err := pgclienttest.Command(t, time.Minute, nil, interpreter, script, duck)
	if err != nil {
		t.Fatalf("%s on DuckDB: %v\n%s", script, err, got)
	}
	if got != want {
		t.Errorf("%s on DuckDB:\n%s\non PostgreSQL:\n%s", script, got, want)
	}
}

// TestTypeORMAppFlowOnDuckDB: TypeORM's PostgreSQL driver synchronises a schema (a foreign key
// added after its table, a unique column, jsonb), saves, finds with a relation, runs a
// transaction and the query builder, then starts again with dropSchema over the tables and
// their foreign key (DROP TABLE ... CASCADE of a referenced table), as on PostgreSQL
// (typeorm_flow.js).
func TestTypeORMAppFlowOnDuckDB(t *testing.T) {
	testlong.Skip(t, "TestKnexFlowOnDuckDB") // a Node ORM's migrations and flow on DuckDB
	sameOnDuckDB(t, "node", "typeorm_flow.js")
}

// TestSequelizeFlowOnDuckDB: Sequelize's sync({force: true}) of two models with a unique
// column, indexes and an association's foreign key (ON DELETE SET NULL ON UPDATE CASCADE) reads
// its indexes back (showIndex: int2vector and name[] as text) and runs through; creates (a
// bulk INSERT of date literals with a blank before the offset), a duplicate and an orphan
// refused, an include, an update, and the second start's sync() finding everything, as on
// PostgreSQL (sequelize_flow.js).
func TestSequelizeFlowOnDuckDB(t *testing.T) {
	testlong.Skip(t, "TestKnexFlowOnDuckDB") // a Node ORM's migrations and flow on DuckDB
	sameOnDuckDB(t, "node", "sequelize_flow.js")
}

// TestKnexFlowOnDuckDB: Knex's migrations (createTable with increments, a foreign key, an index
// and a unique column; an alterTable adding a NOT NULL column with a default and an index), a
// seed, a join, a group, an increment, refusals, transactions, and knex.migrate.rollback of each
// batch (dropIndex, dropColumn, dropTable) run as on PostgreSQL (knex_flow.js).
func TestKnexFlowOnDuckDB(t *testing.T) {
	if _, err := os.Stat(filepath.Join(pgclienttest.Dir(), "node_modules", "knex")); err != nil {
		t.Fatalf("knex is not installed in %s (make test-deps runs npm ci there): %v", pgclienttest.Dir(), err)
	}
	sameOnDuckDB(t, "node", "knex_flow.js")
}

// TestDjangoMigrateOnDuckDB: Django 3.2's migrate of its contrib apps, the ORM over what it
// made, inspectdb and admin's migrations undone, as on PostgreSQL (django_migrate.py): it
// stopped at the first foreign key (DEFERRABLE INITIALLY DEFERRED), then at a
// varchar_pattern_ops index, the ALTER of django_content_type (indexed, referenced), its DROP
// COLUMN ... CASCADE and auth_user.username's varchar(30) to varchar(150) on a unique column;
// inspectdb failed on the two-array unnest(i.indkey, i.indoption) WITH ORDINALITY.
func TestDjangoMigrateOnDuckDB(t *testing.T) {
	sameOn(t, memoryDuckProxy(t, "django").URL(), frontendtest.PythonWith(t, "django, psycopg2"), "django_migrate.py")
}
