package pgwire_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestDeferredKeyDeleteAsPostgreSQL: a DELETE of a referenced row while the key referencing it
// is deferred is checked at COMMIT, as on PostgreSQL 15 (Django's delete() that fixes the
// referencing rows after it): the rows fixed, or deleted, before COMMIT commit; a row left
// referencing nothing is 23503 at COMMIT; a key with ON DELETE CASCADE acts at once, deferred
// or not. An INSERT probed for its deferred keys whose values call a function of the client's
// that takes a sequence's value takes one, as the client asked.
func TestDeferredKeyDeleteAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "deferreddelete").URL())
	state := func(c *pgx.Conn) string {
		return tablesText(c, "select id from dd_parent order by id", "select id, parent_id from dd_child order by id",
			"select id, parent_id from dd_act order by id")
	}
	execBoth(t, pg, duck,
		`create table dd_parent (id int primary key)`,
		`create table dd_child (id int primary key, parent_id int references dd_parent (id) deferrable initially deferred)`,
		`create table dd_act (id int primary key, parent_id int references dd_parent (id) on delete cascade deferrable initially deferred)`,
		`insert into dd_parent values (1), (2), (3), (4), (5)`,
		`insert into dd_child values (1, 1), (2, 2), (3, 4)`,
		`insert into dd_act values (1, 3)`,
		`create sequence dd_s`)
	// a function of the client's: DuckDB's is a macro
	if _, err := pg.Exec(context.Background(), `create function dd_next() returns bigint language sql as $$ select nextval('dd_s') $$`); err != nil {
		t.Fatal(err)
	}
	if _, err := duck.Exec(context.Background(), `create macro dd_next() as nextval('dd_s')`); err != nil {
		t.Fatal(err)
	}
	sameSteps(t, pg, duck, state,
		oracleStep{"begin", nil},
		oracleStep{"insert into dd_child values (dd_next() + 100, 5)", nil},
		oracleStep{"commit", nil},
		oracleStep{"select nextval('dd_s')", nil},
		oracleStep{"begin", nil},
		oracleStep{"delete from dd_parent where id = 1", nil},
		oracleStep{"update dd_child set parent_id = 2 where parent_id = 1", nil},
		oracleStep{"commit", nil},
		oracleStep{"begin", nil},
		oracleStep{"delete from dd_parent where id = $1", []any{2}},
		oracleStep{"select count(*) from dd_child", nil},
		oracleStep{"commit", nil},
		oracleStep{"begin", nil},
		oracleStep{"delete from dd_parent where id = 3", nil},
		oracleStep{"select count(*) from dd_act", nil},
		oracleStep{"commit", nil},
		oracleStep{"begin", nil},
		oracleStep{"delete from dd_parent p where p.id = 2", nil},
		oracleStep{"delete from dd_child where parent_id = 2", nil},
		oracleStep{"commit", nil},
		oracleStep{"begin", nil},
		oracleStep{"delete from dd_parent", nil},
		oracleStep{"set constraints all immediate", nil},
		oracleStep{"rollback", nil},
		oracleStep{"begin", nil},
		oracleStep{"delete from dd_parent where id = 5", nil},
		oracleStep{"delete from dd_child where parent_id = 5", nil},
		oracleStep{"commit", nil},
		oracleStep{"delete from dd_parent where id = 4", nil}, // outside a transaction: checked as it ends
	)
}
