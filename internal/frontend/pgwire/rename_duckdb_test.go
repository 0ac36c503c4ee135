package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestRenamesAndDuplicatesAsPostgreSQL: a migration's renames (RENAME COLUMN, RENAME TO) on the
// embedded DuckDB keep what the client declared (varchar(12), numeric(10,2), jsonb, the key's
// name t_pkey) and the table's indexes, and a name given twice (a named UNIQUE constraint, a
// table, an index, a sequence, a schema) is refused with PostgreSQL's SQLSTATE (42P07, 42P06),
// each statement's outcome and the catalog read back the same as on PostgreSQL 15 (pgx).
func TestRenamesAndDuplicatesAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "renames").URL())
	ctx := context.Background()
	outcome := func(c *pgx.Conn, sql string) string {
		tag, err := c.Exec(ctx, sql)
		var pe *pgconn.PgError
		if errors.As(err, &pe) {

			return "error " + pe.Code
		} else if err != nil {
			return "error " + err.Error()
		}
		return tag.String()
	}
	for _, sql := range []string{
		"create table rn_u (id int primary key, a int, b text)",
		"alter table rn_u add constraint rn_u_a_uq unique (a)",
		"alter table rn_u add constraint rn_u_a_uq unique (a)",
		"alter table rn_u add constraint rn_u_a_uq unique (b)",
		"alter table rn_u add unique (b)",
		"create table rn_u (id int)",
		"create index rn_u_b on rn_u (b)",
		"create index rn_u_b on rn_u (a)",
		"create sequence rn_s",
		"create sequence rn_s",
		"create schema rn_sch",
		"create schema rn_sch",
		"create table rn_t (id serial primary key, code varchar(12), price numeric(10,2), meta jsonb)",
		"insert into rn_t (code, price, meta) values ('x', 1.5, '{}')",
		"create index rn_t_code on rn_t (code)",
		"alter table rn_t add column tag varchar(7)",
		"alter table rn_t add column if not exists tag text",
		"alter table rn_t rename column code to kode",
		"alter table rn_t rename to rn_t2",
		`alter table "rn_t2" rename "meta" to doc`,
		"insert into rn_t2 (kode, price, tag, doc) values ('y', 2, 'z', '[]')",
		"begin",
		"alter table rn_t2 rename column tag to label",
		"rollback",
	} {
		want, got := outcome(pg, sql), outcome(duck, sql)
		if want != got {
			t.Errorf("%s\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", sql, want, got)
		}
	}
	list := func(c *pgx.Conn, sql string) string {
		rows, err := c.Query(ctx, sql, pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			return "error " + err.Error()
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			v, err := rows.Values()
			if err != nil {
				return "error " + err.Error()
			}
			out = append(out, fmt.Sprint(v))
		}
		if err := rows.Err(); err != nil {
			return "error " + err.Error()
		}
		return fmt.Sprint(out)
	}
	for _, sql := range []string{
		`select table_name, column_name, data_type, udt_name, character_maximum_length, numeric_precision, numeric_scale, column_default
			from information_schema.columns where table_schema = 'public' and table_name like 'rn_t%' order by ordinal_position`,
		`select a.attname, format_type(a.atttypid, a.atttypmod) from pg_attribute a join pg_class c on c.oid = a.attrelid
			where c.relname = 'rn_t2' and a.attnum > 0 order by a.attnum`,
		`select c.conname, c.contype::text from pg_constraint c join pg_class t on t.oid = c.conrelid where t.relname like 'rn_t%' order by 1`,
		`select tablename, indexname, indexdef from pg_indexes where tablename like 'rn_t%' order by 2`,
		`select kode, price, tag, doc::text from rn_t2 order by id`,
	} {
		want, got := list(pg, sql), list(duck, sql)
		if want != got {
			t.Errorf("%s\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", sql, want, got)
		}
		t.Logf("%s\n  %s", sql, want)
	}
}
