package duckengine

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestAddForeignKeyAsPostgreSQL: a PostgreSQL client's ALTER TABLE ... ADD FOREIGN KEY on an
// unreferenced table adds a key that holds (an orphan row is refused, 23503) and keeps the
// table's indexes and rows (an orphan among them fails the statement, 23503, as PostgreSQL's
// validation); on a table that is referenced it is refused (0A000) and nothing changes. A referential action (DuckDB has none) is left out, there and in CREATE TABLE.
func TestAddForeignKeyAsPostgreSQL(t *testing.T) {
	runStates(t, openMemory(t), []struct{ sql, want string }{
		{"create table parents (id integer primary key)", ""},
		{"create table kids (id integer primary key, parent integer, name text unique)", ""},
		{"create index kids_name_idx on kids (name)", ""},
		{`ALTER TABLE "kids" ADD CONSTRAINT "FK_1" FOREIGN KEY ("parent") REFERENCES "parents"("id") ON DELETE NO ACTION ON UPDATE NO ACTION`, ""},
		{"insert into parents values (1)", ""},
		{"insert into kids values (1, 1, 'a')", ""},
		{"insert into kids values (2, 7, 'b')", "23503"},
		{"insert into kids values (3, 1, 'a')", "23505"},
		// The table's own index is there again (an error names it otherwise).
		{"select error('kids_name_idx lost') from duckdb_indexes() where index_name = 'kids_name_idx' having count(*) <> 1", ""},
		{"create table pets (id integer, kid integer)", ""},
		{"insert into pets values (1, 1)", ""},
		{"alter table pets add foreign key (kid) references kids (id)", ""}, // its rows kept, checked against the key
		{"insert into pets values (2, 99)", "23503"},
		{"select error('pets lost its row') from pets having count(*) <> 1", ""},
		{"create table strays (id integer, kid integer)", ""},
		{"insert into strays values (1, 42)", ""},
		{"alter table strays add foreign key (kid) references kids (id)", "23503"}, // an orphan: PostgreSQL's validation fails
		{"alter table parents add foreign key (id) references kids (id)", "0A000"}, // it is referenced
		{"create table toys (id integer, kid integer)", ""},
		// A referential action DuckDB lacks is left out: the key holds, and a delete PostgreSQL
		// would cascade is refused; as in CREATE TABLE.
		{"alter table toys add foreign key (kid) references kids (id) on delete cascade on update set null", ""},
		{"insert into toys values (1, 99)", "23503"},
		{"insert into toys values (1, 1)", ""},
		{"delete from kids where id = 1", "23503"},
		{`create table "Toy Box" (id serial primary key, kid integer REFERENCES kids (id) ON DELETE SET NULL ON UPDATE CASCADE, ` +
			`other integer, FOREIGN KEY (other) REFERENCES parents (id) ON DELETE SET DEFAULT (other) ON UPDATE NO ACTION)`, ""},
		{`insert into "Toy Box" (kid, other) values (99, 1)`, "23503"},
		{`insert into "Toy Box" (kid, other) values (1, 99)`, "23503"},
		{`insert into "Toy Box" (kid, other) values (1, 1)`, ""},
		{"alter table no_such_table add foreign key (kid) references kids (id)", "42P01"},
	})
}

// runStates runs each statement as a PostgreSQL client's and checks how it ended: "" (done, its
// rows read) or the error's SQLSTATE.
func runStates(t *testing.T, e query.Engine, cases []struct{ sql, want string }) {
	t.Helper()
	for _, c := range cases {
		rows, err := e.Execute(context.Background(), &query.Request{SQL: c.sql, Protocol: query.ProtocolPostgres})
		for err == nil {
			_, err = rows.Next(context.Background())
		}
		if rows != nil {
			_ = rows.Close()
		}
		var qe *query.Error
		got := err.Error()
		switch {
		case errors.Is(err, io.EOF):
			got = ""
		case errors.As(err, &qe):
			got = qe.Code
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.sql, got, c.want)
		}
	}
}

// TestDropReferencedTableCascade: DROP TABLE t CASCADE of a table other tables' foreign keys
// reference drops those keys, their tables' rows, keys to others and indexes kept, then t, as
// PostgreSQL does (TypeORM's dropSchema, Sequelize's sync({force: true})); a referencing table
// that is itself referenced is refused (0A000) and nothing changes.
func TestDropReferencedTableCascade(t *testing.T) {
	runStates(t, openMemory(t), []struct{ sql, want string }{
		{"create table owners (id integer primary key)", ""},
		{"create table parents (id serial primary key, name text unique)", ""},
		{"create table kids (id serial primary key, parent integer references parents (id), owner integer references owners (id), name text)", ""},
		{"create index kids_name_idx on kids (name)", ""},
		{"insert into owners values (1)", ""},
		{"insert into parents (name) values ('p')", ""},
		{"insert into kids (parent, owner, name) values (1, 1, 'k')", ""},
		{`DROP TABLE IF EXISTS "public"."parents" CASCADE;`, ""},
		{"select error('parents kept') from duckdb_tables() where table_name = 'parents'", ""},
		{"select error('kids lost a row, a value or its index') where (select count(*) from kids where parent = 1 and owner = 1 and name = 'k') <> 1" +
			" or (select count(*) from duckdb_indexes() where index_name = 'kids_name_idx') <> 1", ""},
		{"insert into kids (parent, owner, name) values (99, 1, 'k2')", ""},      // the key to parents went
		{"insert into kids (parent, owner, name) values (1, 99, 'k3')", "23503"}, // the one to owners holds
		{"insert into kids (name) values ('k4') returning id", ""},
		{"select error('the sequence restarted') from kids where id = 1 having count(*) <> 1", ""},
		{"create table toys (id integer, kid integer references kids (id))", ""},
		{"drop table owners cascade", "0A000"}, // kids, referenced by toys, cannot be created again
		{"insert into kids (parent, owner, name) values (1, 99, 'k5')", "23503"},
		{"drop table if exists nothing_here cascade", ""},
	})
}

// TestCreateTableIfNotExistsFreshSequence: CREATE TABLE IF NOT EXISTS with a serial column after
// its table was dropped numbers from 1, as PostgreSQL's (whose sequence went with the table);
// while the table exists, it changes nothing (Sequelize's sync({force: true}), then sync()).
func TestCreateTableIfNotExistsFreshSequence(t *testing.T) {
	create := `CREATE TABLE IF NOT EXISTS public."notes" ("id" SERIAL, "body" VARCHAR(255), PRIMARY KEY ("id"))`
	runStates(t, openMemory(t), []struct{ sql, want string }{
		{create, ""},
		{"insert into notes (body) values ('a'), ('b')", ""},
		{`DROP TABLE IF EXISTS "notes" CASCADE`, ""},
		{create, ""},
		{"insert into notes (body) values ('c')", ""},
		{create, ""},
		{"insert into notes (body) values ('d')", ""},
		{"select error('numbered on') from notes having string_agg(id || body, ',' order by id) <> '1c,2d'", ""},
	})
}

// TestAddNotNullColumnAsPostgreSQL: ALTER TABLE ... ADD COLUMN ... NOT NULL DEFAULT (Knex's
// alterTable with notNullable().defaultTo()) on a table with rows and indexes adds the column,
// its rows given the default, that refuses NULL, the indexes kept; ADD [CONSTRAINT] UNIQUE is the
// unique index that enforces it; DROP COLUMN drops the column's indexes and keeps the others.
func TestAddNotNullColumnAsPostgreSQL(t *testing.T) {
	runStates(t, openMemory(t), []struct{ sql, want string }{
		{"create table posts (id serial primary key, title text, other text)", ""},
		{"create index posts_title_index on posts (title)", ""},
		{"insert into posts (title) values ('a'), ('b')", ""},
		{`alter table "posts" add column "likes" integer not null default '0'`, ""},
		{"insert into posts (title, likes) values ('c', NULL)", "23502"},
		{"select error('a row lost its default') from posts where likes <> 0 or likes is null", ""},
		{"select error('the index went') having (select count(*) from duckdb_indexes() where index_name = 'posts_title_index') <> 1", ""},
		{`alter table posts add constraint "posts_other_unique" unique ("other")`, ""},
		{"insert into posts (title, other) values ('d', 'x'), ('e', 'x')", "23505"},
		{"create index posts_likes on posts (title, likes)", ""},
		{`alter table "posts" drop column "likes"`, ""}, // and its index, as PostgreSQL's
		{"select error('indexes: ' || string_agg(index_name, ',' order by index_name)) from duckdb_indexes() where table_name = 'posts' having string_agg(index_name, ',' order by index_name) <> 'posts_other_unique,posts_title_index'", ""},
		{"alter table posts drop column if exists other;", ""},
		{"insert into posts (title) values ('f')", ""},
	})
}
