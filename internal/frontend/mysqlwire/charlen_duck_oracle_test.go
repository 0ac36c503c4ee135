package mysqlwire

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// TestCharLengthsOnDuckDBLikeMariaDB: a VARCHAR(n) / CHAR(n) column through the proxy on
// DuckDB takes, cuts or refuses a value as MariaDB does (strict mode, its default: 1406 "Data
// too long for column 'c' at row n", the row named), on every write path: INSERT VALUES (text
// and prepared), INSERT SET, REPLACE, UPDATE, ON DUPLICATE KEY UPDATE, INSERT ... SELECT, INSERT
// IGNORE, a transaction that goes on after the refusal, and sql_mode without the strict modes.
// Each exec step's error number, message and rows affected are compared (DuckDB stored every
// value whole).
func TestCharLengthsOnDuckDBLikeMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	conns := oneConnEach(t, maria, duck)
	compareMessages(t, conns[0], conns[1], []string{
		"exec create table cl (id int primary key, c varchar(3), d char(2), e text, f varchar(5), y year)",
		"exec insert into cl (id, c) values (1, 'abcd')",
		"exec insert into cl (id, c) values (1, 'ab'), (2, 'abc'), (3, 'abcd')",
		"exec insert into cl (id, c, e) values (1, 'abc  ', 'abcdefgh')",
		"exec insert into cl (id, d) values (2, 'abc')",
		"exec insert into cl (id, d) values (2, 'ab   ')",
		"exec insert into cl (id, f) values (3, 'ééééé'), (4, 'éééééé')",
		"exec insert into cl (id, f) values (3, 'ééééé')",
		"exec insert into cl (id, c) values (4, 12345)",
		"exec insert into cl (id, c) values (4, ?) <- abcd",
		"exec insert into cl (id, c, d) values (?, ?, ?) <- 4, abc, xyz",
		"exec insert into cl (id, c, d) values (?, ?, ?) <- 4, abc, xy",
		"exec insert into cl set id = 5, c = 'abcde'",
		"exec replace into cl (id, c) values (1, 'wxyz')",
		"exec update cl set c = concat(c, 'xx') where id > 0",
		"exec update cl set c = 'abcd' where false",
		"exec update cl set c = ? where id = ? <- abcd, 1",
		"exec insert into cl (id, c) select 5, 'ab' union all select 6, 'abcd'",
		"exec insert into cl (id, c, y) select 5, 'ab', 24 union all select 6, 'ab  ', '1999'",
		"exec insert into cl (id, c) values (1, 'a') on duplicate key update c = 'abcdef'",
		"exec insert into cl (id, c) values (1, 'a') on duplicate key update c = 'zz   '",
		"exec insert ignore into cl (id, c) values (7, 'wxyz')",
		"select id, c, d, e, f, y from cl order by id",
		"exec begin",
		"exec insert into cl (id, c) values (8, 'ok')",
		"exec insert into cl (id, c) values (9, 'too long')",
		"exec update cl set f = 'abcdef' where id = 8",
		"exec insert into cl (id, c) values (9, 'ok')",
		"exec commit",
		"select id, c, f from cl where id >= 8 order by id",
		"exec set sql_mode = ''",
		"exec insert into cl (id, c) values (10, 'ab'), (11, 'abcd')",
		"exec update cl set d = 'abcdef' where id = 10",
		"exec set sql_mode = 'TRADITIONAL'",
		"exec insert into cl (id, c) values (12, 'abcd')",
		"select id, c, d from cl where id >= 10 order by id",
	})
}

// TestShowGrantsAndInTransactionOnDuckDB: SHOW GRANTS (and FOR CURRENT_USER[()], FOR the
// client's own account) is one row, MariaDB's grant of everything to the account the proxy
// logs the client in as (DuckDB: 1235); another account is MariaDB's 1141; @@in_transaction is
// MariaDB's 1 between BEGIN (or a write with autocommit off) and COMMIT, 0 outside (DuckDB:
// 1105, an unknown variable).
func TestShowGrantsAndInTransactionOnDuckDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	conns := oneConnEach(t, maria, duck)
	want := "Grants for " + testUser + "@%=\"GRANT ALL PRIVILEGES ON *.* TO `" + testUser + "`@`%` WITH GRANT OPTION\" | "
	for _, q := range []string{"show grants", "SHOW GRANTS FOR CURRENT_USER", "show grants for current_user()", "show grants for " + testUser,
		"show grants for '" + testUser + "'@'%'"} {
		if got := dumpRows(t, conns[1], q); got != want {
			t.Errorf("%s:\n got %s\nwant %s", q, got, want)
		}
	}
	for _, q := range []string{"show grants for nobody@'%'", "show grants for '" + testUser + "'@'localhost'"} {
		for i, c := range conns {
			_, err := c.ExecContext(context.Background(), q)
			if errNumber(err) != 1141 || !strings.HasPrefix(err.Error(), "Error 1141 (42000): There is no such grant defined for user '") {
				t.Errorf("%s on %s: %v, want 1141", q, []string{"MariaDB", "DuckDB"}[i], err)
			}
		}
	}
	compareMessages(t, conns[0], conns[1], []string{
		"exec create table it (id int primary key)",
		"select @@in_transaction",
		"exec begin",
		"select @@in_transaction, @@session.in_transaction",
		"exec insert into it values (1)",
		"select @@in_transaction",
		"exec commit",
		"select @@in_transaction",
		"exec set autocommit = 0",
		"select @@in_transaction",
		"exec insert into it values (2)",
		"select @@in_transaction",
		"exec rollback",
		"select @@in_transaction",
		"exec set autocommit = 1",
		"exec start transaction",
		"select @@in_transaction",
		"exec rollback",
		"select @@in_transaction",
	})
}

// compareMessages is compareSteps with an exec step's error message compared too (but a
// duplicate key's).
func compareMessages(t *testing.T, maria, duck querier, steps []string) {
	t.Helper()
	for _, step := range steps {
		stmt, ok := strings.CutPrefix(step, "exec ")
		if !ok {
			compareSteps(t, maria, duck, []string{step})
			continue
		}
		var got [2]string
		for i, side := range []querier{maria, duck} {
			stmt, args := stepArgs(stmt)
			res, err := side.ExecContext(context.Background(), stmt, args...)
			var me *mysql.MySQLError
			switch {
			case err == nil:
				n, _ := res.RowsAffected()
				got[i] = fmt.Sprintf("OK, %d rows", n)
			case asMySQLError(err, &me) && me.Number == 1062: // DuckDB's words for the key, not MariaDB's
				got[i] = fmt.Sprintf("error %d", me.Number)
			case asMySQLError(err, &me):
				got[i] = fmt.Sprintf("error %d %s", me.Number, me.Message)
			default:
				got[i] = err.Error()
			}
		}
		if got[0] != got[1] {
			t.Errorf("%s:\n MariaDB %s\n DuckDB  %s", step, got[0], got[1])
		}
	}
}
