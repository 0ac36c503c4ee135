package pgwire_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestDeferredKeysCheckedAtCommitAsPostgreSQL: keys declared DEFERRABLE INITIALLY DEFERRED
// (Django's), or DEFERRABLE and deferred by SET CONSTRAINTS, are checked at COMMIT (or at SET
// CONSTRAINTS ... IMMEDIATE), as on PostgreSQL 15: fixtures loaded child-first (Django's
// loaddata, then its check_constraints) commit; a row left referencing nothing is 23503 at
// COMMIT, the transaction rolled back. A key that is not deferrable is checked at once.
func TestDeferredKeysCheckedAtCommitAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "deferred").URL())
	tables := []string{"select id from df_author order by id", "select id, author_id from df_book order by id",
		"select id, book_id from df_review order by id", "select id, author_id from df_note order by id",
		"select id, author_id from df_later order by id"}
	state := func(c *pgx.Conn) string { return tablesText(c, tables...) }
	execBoth(t, pg, duck,
		`create table df_author (id integer primary key, name text)`,
		`create table df_book (id integer primary key, author_id integer references df_author (id) deferrable initially deferred, title text)`,
		`create table df_review (id integer primary key, book_id integer not null, stars int)`,
		`alter table df_review add constraint df_review_book_fk foreign key (book_id) references df_book (id) deferrable initially deferred`,
		`create index df_review_book on df_review (book_id)`,
		`create table df_note (id integer primary key, author_id integer references df_author (id))`, // not deferrable
		`create table df_later (id integer primary key, author_id integer references df_author (id) deferrable)`,
		`insert into df_author values (1, 'ann')`,
		`insert into df_book values (1, 1, 'one')`,
	)
	sameSteps(t, pg, duck, state, // loaddata: children first, then what they reference, then the check
		oracleStep{"begin", nil},
		oracleStep{`INSERT INTO "df_review" ("id", "book_id", "stars") VALUES ($1, $2, $3)`, []any{1, 2, 5}},
		oracleStep{`INSERT INTO "df_book" ("id", "author_id", "title") VALUES ($1, $2, $3)`, []any{2, 2, "two"}},
		oracleStep{`UPDATE "df_book" SET "title" = $1 WHERE "id" = $2`, []any{"deux", 2}},
		oracleStep{`INSERT INTO "df_author" ("id", "name") VALUES ($1, $2)`, []any{2, "bob"}},
		oracleStep{"SET CONSTRAINTS ALL IMMEDIATE", nil},
		oracleStep{"SET CONSTRAINTS ALL DEFERRED", nil},
		oracleStep{"select count(*) from df_review", nil},
		oracleStep{"commit", nil},
		oracleStep{"insert into df_review values (2, 2, 4)", nil}, // the key is back
		oracleStep{"insert into df_review values (3, 9, 4)", nil},
	)
	sameSteps(t, pg, duck, state, // a row left referencing nothing: 23503 at COMMIT, rolled back
		oracleStep{"begin", nil},
		oracleStep{"insert into df_book values (3, 3, 'three'), (4, 1, 'four')", nil},
		oracleStep{"insert into df_review values (4, 3, 1)", nil},
		oracleStep{"commit", nil},
		oracleStep{"begin", nil},
		oracleStep{"insert into df_book (id, author_id) select 5, 7", nil},
		oracleStep{"SET CONSTRAINTS ALL IMMEDIATE", nil},
		oracleStep{"select 1", nil},
		oracleStep{"commit", nil},
	)
	sameSteps(t, pg, duck, state, // DEFERRABLE INITIALLY IMMEDIATE: deferred by SET CONSTRAINTS only; NOT DEFERRABLE: never
		oracleStep{"begin", nil},
		oracleStep{"insert into df_later values (1, 3)", nil},
		oracleStep{"rollback", nil},
		oracleStep{"begin", nil},
		oracleStep{"set constraints all deferred", nil},
		oracleStep{"insert into df_later values (1, 3)", nil},
		oracleStep{"insert into df_author values (3, 'cid')", nil},
		oracleStep{"commit", nil},
		oracleStep{"begin", nil},
		oracleStep{"set constraints all deferred", nil},
		oracleStep{"insert into df_note values (1, 4)", nil},
		oracleStep{"rollback", nil},
		oracleStep{"begin", nil},
		oracleStep{"set constraints df_book_author_id_fkey immediate", nil},
		oracleStep{"insert into df_book values (6, 4, 'six')", nil},
		oracleStep{"rollback", nil},
	)
	sameSteps(t, pg, duck, state, // outside a transaction a deferred key is checked as the statement ends
		oracleStep{"insert into df_book values (7, 8, 'seven')", nil},
		oracleStep{"set constraints all deferred", nil},
		oracleStep{"insert into df_book values (7, 1, 'seven')", nil},
	)
	keys := "select conname, condeferrable, condeferred, pg_get_constraintdef(oid) from pg_constraint where contype = 'f' and conname like 'df%' order by conname"
	if want, got := rowsText(pg, keys), rowsText(duck, keys); want != got {
		t.Errorf("%s\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", keys, want, got)
	}
	// a transaction whose rows reference rows that are there sets nothing aside (the tables keep their oids)
	oids := "select relname, oid from pg_class where relname in ('df_book', 'df_review') order by relname"
	before := rowsText(duck, oids)
	sameSteps(t, pg, duck, state,
		oracleStep{"begin", nil},
		oracleStep{`INSERT INTO "df_book" ("id", "author_id", "title") VALUES ($1, $2, $3)`, []any{8, 1, "eight"}},
		oracleStep{`UPDATE "df_book" SET "author_id" = $1, "title" = $2 WHERE "id" = $3`, []any{2, "huit", 8}},
		oracleStep{`INSERT INTO "df_review" ("id", "book_id", "stars") SELECT $1::int, $2::int, $3::int`, []any{9, 8, 3}},
		oracleStep{"commit", nil},
	)
	if after := rowsText(duck, oids); after != before {
		t.Errorf("the tables were created again: %s, then %s", before, after)
	}
	// a row whose values call nextval() is not probed (the probe would take a number too)
	execBoth(t, pg, duck, `create sequence df_seq start 100`)
	sameSteps(t, pg, duck, state,
		oracleStep{"begin", nil},
		oracleStep{"insert into df_book values (nextval('df_seq'), 1, 'nine')", nil},
		oracleStep{"commit", nil},
		oracleStep{"select nextval('df_seq')", nil},
	)
	t.Log(state(pg))
}
