package mysqlwire

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// TestErrorNumbersOnPostgreSQLAsMariaDB: the errors ORMs branch on (Django's IntegrityError and
// OperationalError, SQLAlchemy's, Rails') come from PostgreSQL with MariaDB's number and
// SQLSTATE: an unknown column anywhere in a statement 1054 (a refusal the column cache reads as
// stale, then the statement's own error, not another statement's rows), a missing table 1146,
// a duplicate key 1062, NULL in a NOT NULL column 1048, a missing parent 1452, a parent row
// still referenced 1451, a syntax error 1064.
func TestErrorNumbersOnPostgreSQLAsMariaDB(t *testing.T) {
	ddl := []string{"create table ep (id int primary key, n int not null, u int unique)",
		"create table ec (id int primary key, pid int references ep (id))",
		"insert into ep values (1, 1, 1)", "insert into ec values (1, 1)"}
	pg := openDB(t, pgCluster(t, ddl...).addr, testUser, "", "public", "")
	maria, _ := newMariaDB(t)
	for _, s := range ddl {
		if _, err := maria.ExecContext(context.Background(), s); err != nil {
			t.Fatal(s, err)
		}
	}
	for _, s := range []string{
		"select nosuch from ep", "select * from ep where nosuch = 1", "select ep.nosuch from ep", "select id from ep order by nosuch",
		"update ep set nosuch = 1", "insert into ep (id, nosuch) values (9, 1)", "select * from nosuch_t",
		"insert into ep values (1, 2, 2)", "insert into ep values (2, 2, 1)", "update ep set u = 1 where id = 0",
		"insert into ep values (3, null, 3)", "update ep set n = null where id = 1", "insert into ec values (2, 99)",
		"update ec set pid = 98 where id = 1", "delete from ep where id = 1", "update ep set id = 5 where id = 1",
		"selec 1", "select * from ep where", "select 1 as still_usable",
	} {
		var got [2]string
		for i, db := range []querier{maria, pg} {
			_, err := db.ExecContext(context.Background(), s)
			var me *mysql.MySQLError
			if errors.As(err, &me) {
				got[i] = string(me.SQLState[:])
			}
			got[i] += " " + strconv.Itoa(int(errNumber(err)))
		}
		if got[0] != got[1] {
			t.Errorf("%s: MariaDB %s, PostgreSQL %s", s, got[0], got[1])
		}
	}
}
