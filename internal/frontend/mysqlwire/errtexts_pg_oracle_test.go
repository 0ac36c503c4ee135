package mysqlwire

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/testlong"
)

// TestErrorTextsOnPostgreSQLAsMariaDB: PostgreSQL's refusals reach a MySQL client in MariaDB's
// words as well as with its number and SQLSTATE, which clients and ORMs read (Django and Rails
// read 1062's entry and key; Laravel a foreign key's constraint): 1054 naming the column as
// written and its clause, 1146 the table with its database, 1062 the entry and key (PRIMARY,
// a key PostgreSQL named by its first column, a named one by its name), 1048 the column, 1364
// for a NOT NULL column with no default an INSERT leaves out or gives DEFAULT (PostgreSQL's
// 23502 for both), 1451 and 1452 the foreign key as SHOW CREATE TABLE writes it.
func TestErrorTextsOnPostgreSQLAsMariaDB(t *testing.T) {
	ddl := []string{"create table ep (id int primary key, n int not null, u int unique, a int, b int, nd int not null default 7)",
		"create unique index ab_pair on ep (a, b)",
		"create table ec (id int primary key, pid int, foreign key (pid) references ep (id))",
		"create table ed (id int primary key, pid int, constraint ed_parent foreign key (pid) references ep (id) on delete cascade, k int not null)",
		"insert into ep values (1, 1, 1, 1, 1, 1)", "insert into ec values (1, 1)"}
	pg := openDB(t, pgCluster(t, ddl...).addr, testUser, "", "public", "")
	maria, db := newMariaDB(t)
	for _, s := range ddl {
		if _, err := maria.ExecContext(context.Background(), s); err != nil {
			t.Fatal(s, err)
		}
	}
	for i, s := range []string{
		"select nosuch from ep", "select * from ep where NoSuch = 1", "select ep.nosuch from ep", "select id from ep order by nosuch",
		"select id from ep group by nosuch", "select id from ep group by id having nosuch > 1", "select ep.id from ep join ec on ep.id = nosuch",
		"select id from ep where id in (select nosuch from ec)", "select id from ep where exists (select 1 from ec where nosuch = 1)",
		"select count(*) from ep where ep.id = ec.id", "select `nosuch` from `ep`",
		"update ep set nosuch = 1", "update ep set n = nosuch", "delete from ep where nosuch = 1",
		"insert into ep (id, nosuch) values (9, 1)", "insert into ep (id, n) values (nosuch, 1)",
		"select * from nosuch_t", "select * from NoSuch_T", "insert into nosuch_t values (1)",
		"insert into ep values (1, 2, 2, 2, 2, 2)", "insert into ep values (2, 2, 1, 2, 2, 2)", "insert into ep values (3, 3, 3, 1, 1, 3)",
		"update ep set u = 1 where id = 0",
		"insert into ep (id, n) values (3, null)", "update ep set n = null where id = 1",
		"insert into ep (id) values (4)", "insert into ep (id, u) values (4, 4), (5, 5)", "insert into ep (id, n) values (4, default)",
		"insert into ep (id) select 4", "insert into ed (id, pid) values (1, 1)",
		"insert into ec values (2, 99)", "update ec set pid = 98 where id = 1", "delete from ep where id = 1", "update ep set id = 5 where id = 1",
		"insert into ed values (1, 99, 1)",
		"select 1 as still_usable",
	} {
		if !testlong.Sample(i, 2) {
			continue
		}
		var got [2]string
		for i, db := range []querier{maria, pg} {
			_, err := db.ExecContext(context.Background(), s)
			var me *mysql.MySQLError
			if errors.As(err, &me) {
				got[i] = me.Error()
			}
		}
		got[0] = strings.ReplaceAll(got[0], db, "public")
		if got[0] != got[1] {
			t.Errorf("%s:\n MariaDB    %s\n PostgreSQL %s", s, got[0], got[1])
		}
	}
}
