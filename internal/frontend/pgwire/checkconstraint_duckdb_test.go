package pgwire_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestAddCheckConstraintAsPostgreSQL: ALTER TABLE ... ADD [CONSTRAINT c] CHECK (...) (Django's
// AddConstraint(CheckConstraint), Rails' add_check_constraint) and DROP CONSTRAINT of a check
// (RemoveConstraint) as on PostgreSQL 15, on a table another table's key references: later
// writes refused with 23514, rows already there that the check refuses failing the ALTER
// (23514, nothing changed), a name given twice 42710, the names in pg_constraint, and a
// dropped check no longer enforced. Each ALTER was DuckDB's 0A000 and DROP CONSTRAINT 42704.
func TestAddCheckConstraintAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "addcheck").URL())
	execBoth(t, pg, duck, "create table ck_t (id serial primary key, n numeric(10,2), s text)",
		"create table ck_c (id int primary key, t int references ck_t(id) on delete cascade)",
		"insert into ck_t (n, s) values (1.5, 'a'), (3, 'bb')", "insert into ck_c values (10, 1), (20, 2)")
	state := func(c *pgx.Conn) string {
		return tablesText(c, "select n, s from ck_t order by n, s", "select * from ck_c order by id",
			"select conname from pg_constraint where contype = 'c' and conrelid = 'ck_t'::regclass order by 1")
	}
	sameSteps(t, pg, duck, state,
		oracleStep{"alter table ck_t add constraint ck_t_n_pos check (n > 0)", nil},
		oracleStep{"insert into ck_t (n) values (-1)", nil},
		oracleStep{"insert into ck_t (n, s) values (2, 'c')", nil},
		oracleStep{"alter table ck_t add check (length(s) < 5)", nil},
		oracleStep{"insert into ck_t (n, s) values (1, 'toolong')", nil},
		oracleStep{"update ck_t set n = -n where s = 'a'", nil},
		oracleStep{"alter table ck_t add constraint ck_t_n_pos check (n > 1)", nil},
		oracleStep{"alter table ck_t add constraint ck_t_big check (n > 2)", nil},
		oracleStep{"delete from ck_t where s = 'a'", nil},
		oracleStep{"alter table ck_t drop constraint ck_t_n_pos", nil},
		oracleStep{"insert into ck_t (n, s) values (-1, 'd')", nil},
		oracleStep{"alter table ck_t drop constraint ck_t_s_check", nil},
		oracleStep{"insert into ck_t (n, s) values (5, 'toolong')", nil},
		oracleStep{"alter table ck_t drop constraint ck_t_s_check", nil},
		oracleStep{"alter table ck_nope add check (1 > 0)", nil},
	)
}
