package duckengine_test

import "testing"

// TestMySQLCharLengths: a VARCHAR(n) / CHAR(n) column refuses a longer value in strict mode
// (MariaDB's 1406, naming the row it was in), cuts one longer only by trailing spaces, and cuts
// any longer one without strict mode or with IGNORE. MariaDB 10.11's answers, recorded.
func TestMySQLCharLengths(t *testing.T) {
	runSteps(t, mysqlSession(t, open(t)), []struct{ sql, want string }{
		{"create table cl (id int primary key, c varchar(3), d char(2), e text, y year)", ""},
		{"insert into cl (id, c) values (1, 'abcd')", "error: 22001: Data too long for column 'c' at row 1"},
		{"insert into cl (id, c) values (1, 'ab'), (2, 'abc'), (3, 'abcd')", "error: 22001: Data too long for column 'c' at row 3"},
		{"insert into cl (id, c, e) values (1, 'abc  ', 'abcdefgh')", ""},
		{"insert into cl (id, d) values (2, 'abc')", "error: 22001: Data too long for column 'd' at row 1"},
		{"insert into cl (id, d) values (2, 'ab   ')", ""},
		{"insert into cl set id = 3, c = 'abcde'", "error: 22001: Data too long for column 'c' at row 1"},
		{"replace into cl (id, c) values (1, 'wxyz')", "error: 22001: Data too long for column 'c' at row 1"},
		{"update cl set c = concat(c, 'xx') where id > 0", "error: 22001: Data too long for column 'c' at row 1"},
		{"update cl set c = 'abcd' where false", ""},
		{"insert into cl (id, c) select 3, 'ab' union all select 4, 'abcd'", "error: 22001: Data too long for column 'c' at row 2"},
		{"insert into cl select 3, 'ab', 'cd', 'ef', 24 union all select 4, 'ab  ', 'cd', '', '2000'", ""},
		{"insert into cl (id, c) values (1, 'a') on duplicate key update c = 'abcdef'", "error: 22001: Data too long for column 'c' at row 1"},
		{"insert into cl (id, c) values (1, 'a') on duplicate key update c = 'zz   '", ""},
		{"insert ignore into cl (id, c) values (5, 'wxyz')", ""},
		{"set sql_mode = ''", ""},
		{"insert into cl (id, c) values (6, 'ab'), (7, 'abcd')", ""},
		{"set sql_mode = 'traditional'", ""},
		{"insert into cl (id, c) values (8, 'abcd')", "error: 22001: Data too long for column 'c' at row 1"},
		{"select id, c, d, e, y from cl order by id", "1 zz  (null) abcdefgh (null), 2 (null) ab (null) (null), 3 ab cd ef 2024, 4 ab  cd  2000, 5 wxy (null) (null) (null), 6 ab (null) (null) (null), 7 abc (null) (null) (null)"},
	})
}
