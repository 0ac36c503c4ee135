package pgwire_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestInformationSchemaAsPostgreSQL: information_schema lists the client's own tables, views,
// columns and constraints on the embedded DuckDB as on PostgreSQL, not the relations of the
// catalog the proxy keeps for PostgreSQL's pg_catalog (which a tool listing a schema's tables
// showed as the client's).
func TestInformationSchemaAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "infoschema").URL())
	ctx := context.Background()
	for _, c := range []*pgx.Conn{pg, duck} {
		for _, s := range []string{"create table accounts (id integer primary key, name text not null)",
			"create table entries (id integer primary key, account integer references accounts(id), amount numeric(12,2))",
			"create view names as select name from accounts"} {
			if _, err := c.Exec(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	list := func(c *pgx.Conn, sql string) string {
		rows, err := c.Query(ctx, sql)
		if err != nil {
			return "error " + err.Error()
		}
		defer rows.Close()
		var out []any
		for rows.Next() {
			v, err := rows.Values()
			if err != nil {
				return "error " + err.Error()
			}
			out = append(out, v)
		}
		return fmt.Sprint(out, rows.Err())
	}
	for _, sql := range []string{
		"select table_name, table_type from information_schema.tables where table_schema = current_schema() order by 1",
		"select table_name from information_schema.views where table_schema = current_schema()",
		"select table_name, column_name, is_nullable from information_schema.columns where table_schema = current_schema() order by 1, ordinal_position",
		"select table_name, constraint_type from information_schema.table_constraints where table_schema = current_schema() and constraint_type in ('PRIMARY KEY', 'FOREIGN KEY') order by 1, 2",
		"select count(*) from information_schema.schemata where schema_name = current_schema()",
		// Sequelize's foreign keys of a table: constraint_type unqualified across the views.
		`select kcu.column_name, ccu.table_name, ccu.column_name from information_schema.table_constraints as tc
			join information_schema.key_column_usage as kcu on tc.constraint_name = kcu.constraint_name
			join information_schema.constraint_column_usage as ccu on ccu.constraint_name = tc.constraint_name
			where constraint_type = 'FOREIGN KEY' and tc.table_name = 'entries'`,
		`select count(*) from INFORMATION_SCHEMA."tables" where table_name like 'pg\_%' and table_schema = current_schema()`,
	} {
		if want, got := list(pg, sql), list(duck, sql); want != got {
			t.Errorf("%s\n  PostgreSQL: %s\n  QueryFlux on DuckDB: %s", sql, want, got)
		}
	}
}

// TestInformationSchemaThroughPsycopgAndJDBC: the same information_schema, the client's own
// relations only and public its schema, through psycopg2, psycopg 3 (client-side and
// server-side parameters) and PostgreSQL's JDBC driver (plain and server-prepared statements),
// quoted names too ("information_schema"."tables", as TypeORM writes it), as on PostgreSQL
// (infoschema.py, InfoSchema.java).
func TestInformationSchemaThroughPsycopgAndJDBC(t *testing.T) {
	run := func(name string, args ...string) string {
		out, err := pgclienttest.Command(t, 2*time.Minute, nil, name, args...)
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return out
	}
	pgURL, duck := pgtest.NewDatabase(t), memoryDuckProxy(t, "infoschema")
	if want, got := run("/usr/bin/python3", "infoschema.py", pgURL), run("/usr/bin/python3", "infoschema.py", duck.Keywords()); got != want {
		t.Errorf("psycopg's information_schema:\nQueryFlux on DuckDB:\n%s\nPostgreSQL:\n%s", got, want)
	}
	classpath := pgclienttest.JDBCClasspath(t, "InfoSchema.java")
	u, err := url.Parse(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	pgJDBC := fmt.Sprintf("jdbc:postgresql://%s%s?user=%s&sslmode=disable", u.Host, u.Path, u.User.Username())
	if want, got := run("java", "-cp", classpath, "InfoSchema", pgJDBC), run("java", "-cp", classpath, "InfoSchema", duck.JDBC()); got != want {
		t.Errorf("JDBC's information_schema:\nQueryFlux on DuckDB:\n%s\nPostgreSQL:\n%s", got, want)
	}
}

// TestJDBCMetaDataAsPostgreSQL: PostgreSQL's JDBC driver's DatabaseMetaData (getTables,
// getColumns, getPrimaryKeys, getImportedKeys, getExportedKeys, getIndexInfo) reads a schema
// (serial and identity keys, a foreign key with an action, a two-column unique constraint, an
// index) on DuckDB as on PostgreSQL (MetaData.java): what IDEs, Hibernate's schema validation
// and Flyway read, a serial's COLUMN_DEF nextval('t_id_seq'::regclass) included (session 40).
func TestJDBCMetaDataAsPostgreSQL(t *testing.T) {
	classpath := pgclienttest.JDBCClasspath(t, "MetaData.java")
	pgURL, duck := pgtest.NewDatabase(t), memoryDuckProxy(t, "jdbcmeta")
	u, err := url.Parse(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	pgJDBC := fmt.Sprintf("jdbc:postgresql://%s%s?user=%s&sslmode=disable", u.Host, u.Path, u.User.Username())
	run := func(jdbc string) string {
		out, err := pgclienttest.Command(t, 2*time.Minute, nil, "java", "-cp", classpath, "MetaData", jdbc)
		if err != nil {
			t.Fatalf("MetaData %s: %v\n%s", jdbc, err, out)
		}
		return out
	}
	want, got := strings.Split(run(pgJDBC), "\n"), strings.Split(run(duck.JDBC()), "\n")
	for i := 0; i < max(len(want), len(got)); i++ {
		w, g := "", ""
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Errorf("line %d\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", i+1, w, g)
		}
	}
}
