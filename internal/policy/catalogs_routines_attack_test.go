package policy

import (
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestShowsOfEveryDatabaseNameEveryDatabase: bob (limited to pub on the MariaDB group) listed
// priv's routines with SHOW PROCEDURE STATUS WHERE db = 'priv' (a string, not a name, so no
// catalog was named), and every database's with no filter at all; SHOW OPEN TABLES and MariaDB's
// TABLE_STATISTICS list every database's tables, SHOW PROCEDURE CODE priv.p a routine's code. A
// SHOW that lists every database's objects names every database, unless its WHERE pins the
// column of databases to one literal (or DATABASE()) with nothing ORed: then it names that one.
// alice, denied hr only, may list every database but hr. The information_schema views of
// routines and parameters stay refused to a rule that does not list information_schema.
func TestShowsOfEveryDatabaseNameEveryDatabase(t *testing.T) {
	c := mustCompile(t, catalogRulesConfig())
	refused := []struct{ user, sql string }{
		{"bob", "show procedure status"}, {"bob", "show function status"}, {"bob", "SHOW PACKAGE STATUS"}, {"bob", "show package body status"},
		{"bob", "show procedure status like '%'"}, {"bob", "show procedure status where db = 'priv'"},
		{"bob", "show function status where Db = 'PRIV'"}, {"bob", "show procedure status where `Db` = 'priv'"},
		{"bob", "show procedure status where db = 'pub' or 1"}, {"bob", "show procedure status where db = 'pub' || true"},
		{"bob", "show procedure status where db = 'pub' xor 1"}, {"bob", "show procedure status where db = 'pub' and name = 'x' or 1"},
		{"bob", "show procedure status where db like 'p%'"}, {"bob", "show procedure status where db in ('pub', 'priv')"},
		{"bob", "show procedure status where db <> 'pub'"}, {"bob", "show procedure status where db = 'pub' | 1"},
		{"bob", `show procedure status where db = 'pub\' or 1 -- '`}, {"bob", "show procedure status where 'priv' = db"},
		{"bob", "show procedure status where name = 'p'"}, {"bob", "select 1; show function status"},
		{"bob", "/*!50000 show procedure status */"}, {"bob", "execute immediate 'show procedure status'"},
		{"bob", "show open tables"}, {"bob", "show open tables where `Database` = 'priv'"}, {"bob", "show open tables from priv"},
		{"bob", "show table_statistics"}, {"bob", "show index_statistics"},
		{"bob", "show procedure code priv.p"}, {"bob", "show function code `priv`.f"},
		{"bob", "select * from information_schema.routines where routine_schema = 'priv'"},
		{"bob", "select * from information_schema.parameters"}, {"bob", "show create procedure priv.p"},
		{"alice", "show function status"}, {"alice", "show procedure status where db = 'HR'"}, {"alice", "show open tables"},
	}
	for _, a := range refused {
		if err := c.Check(&query.Request{User: a.user, Database: "pub", SQL: a.sql}, "maria"); code(err) != query.CodeAccessDenied {
			t.Errorf("%s in pub: %q: %v, want access denied", a.user, a.sql, err)
		}
	}
	allowed := []struct{ user, sql string }{
		{"bob", "show procedure status where db = 'pub'"}, {"bob", "SHOW FUNCTION STATUS WHERE Db = 'pub' AND Name LIKE 'f%'"},
		{"bob", "show procedure status where `Db` = 'pub' and (name = 'a' || name = 'b')"}, // the OR is refused: conservative
		{"bob", "show procedure status where db = database()"}, {"bob", "show procedure status where 'pub' = db"},
		{"bob", "show open tables from pub"}, {"bob", "show open tables in pub like 't%'"}, {"bob", "show open tables where `Database` = 'pub'"},
		{"bob", "show procedure code pub.p"}, {"bob", "show procedure code p"}, {"bob", "show table status"}, {"bob", "show triggers"},
		{"bob", "show events"}, {"bob", "show create procedure pub.p"}, {"bob", "show status like 'Threads%'"},
		{"alice", "show function status where db = 'sales'"},
	}
	for i, a := range allowed {
		err := c.Check(&query.Request{User: a.user, Database: "pub", SQL: a.sql}, "maria")
		if i == 2 { // an OR anywhere unpins: refused, which costs a client only a wider filter
			if code(err) != query.CodeAccessDenied {
				t.Errorf("%s in pub: %q: %v, want access denied (an OR unpins)", a.user, a.sql, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s in pub: %q: %v, want it allowed", a.user, a.sql, err)
		}
	}
}
