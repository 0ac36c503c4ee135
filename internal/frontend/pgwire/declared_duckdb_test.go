package pgwire_test

import (
	"testing"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestDeclaredTypesAsPostgreSQL: what a PostgreSQL client declared in CREATE TABLE (varchar(n)
// beside text, char(n), jsonb beside json, timestamp(3), arrays) and its constraints' names and
// referential actions read back from information_schema.columns, regtype, pg_attribute
// (format_type) and pg_constraint on the embedded DuckDB as on PostgreSQL 15, which ORMs compare
// with their entities at start; a rolled-back CREATE TABLE leaves no declaration behind; 't'::regclass
// alone prints the name.
func TestDeclaredTypesAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "declared").URL())
	setup := []string{
		`create table dt_parent (id serial, code varchar(12) not null, constraint "PK_dt_parent" primary key (id),
			constraint "UQ_dt_code" unique (code))`,
		`create table "dt_child" ("id" SERIAL NOT NULL, "name" character varying NOT NULL, "short" varchar(50), "flag" char(3),
			"body" text, "small" int2, "big" bigint, "price" numeric(10,2), "amount" numeric, "ratio" real,
			"score" double precision, "ok" boolean DEFAULT true, "day" date, "at" time, "stamp" timestamp(3), "placed" timestamp with time zone NOT NULL DEFAULT now(),
			"span" interval, "uid" uuid, "doc" json, "meta" jsonb, "bin" bytea, "nums" integer[], "tags" character varying(20)[],
			"qty" integer NOT NULL DEFAULT 1, "parentId" integer,
			CONSTRAINT "PK_dt_child" PRIMARY KEY ("id"))`,
		`ALTER TABLE "dt_child" ADD CONSTRAINT "FK_dt_child_parent" FOREIGN KEY ("parentId") REFERENCES "dt_parent"("id") ON DELETE NO ACTION ON UPDATE NO ACTION`,
		`create table dt_other (id integer primary key, parent integer constraint dt_other_parent references dt_parent (id) on delete cascade on update set null)`,
		"begin", "create table dt_gone (a varchar(5))", "rollback", "create table dt_gone (a text)",
	}
	execBoth(t, pg, duck, setup...)
	sameRows(t, pg, duck,
		`select table_name, column_name, data_type, udt_schema, udt_name, character_maximum_length, numeric_precision,
			numeric_scale, datetime_precision, is_nullable from information_schema.columns where table_schema = 'public'
			and table_name like 'dt%' order by table_name, ordinal_position`,
		// TypeORM's loadTables: a column's default and its type by regtype.
		`SELECT column_name, column_default, ('"' || "udt_schema" || '"."' || "udt_name" || '"')::"regtype"::text AS "regtype"
			FROM "information_schema"."columns" WHERE ("table_schema" = 'public' AND "table_name" = 'dt_child')
			AND column_name IN ('id', 'name', 'short', 'flag', 'meta', 'placed', 'nums', 'tags', 'qty') ORDER BY ordinal_position`,
		`select c.relname, a.attname, format_type(a.atttypid, a.atttypmod) from pg_attribute a join pg_class c on c.oid = a.attrelid
			where c.relname in ('dt_child', 'dt_gone') and a.attnum > 0 order by c.relname, a.attnum`,
		`select t.relname, c.conname, c.contype::text, c.confdeltype::text, c.confupdtype::text from pg_constraint c join pg_class t on t.oid = c.conrelid
			where t.relname like 'dt%' order by t.relname, c.conname`,
		// TypeORM's index listing leaves out the indexes named as a constraint: a key's index
		// is named as its constraint.
		`select t.relname, i.relname from pg_index x join pg_class t on t.oid = x.indrelid join pg_class i on i.oid = x.indexrelid
			where t.relname like 'dt%' order by 1, 2`,
		`select 'dt_child'::regclass`,
		`select 'dt_child'::regclass as t, 1`,
		`select 'dt_missing'::regclass`,
		`select count(*) from pg_class where oid = 'dt_child'::regclass`)
}
