package duckengine_test

import "testing"

// TestMySQLYearColumns: YEAR and YEAR(4) columns (was 1105, no such type) hold MariaDB's
// years: '2024', 2024, 24 and '24' are 2024, '69' 2069, 70 1970, the number 0 is 0 and the
// string '0' 2000; SHOW COLUMNS and information_schema.COLUMNS say year(4), DATA_TYPE year,
// no NUMERIC_PRECISION. MariaDB 10.11's answers, recorded.
func TestMySQLYearColumns(t *testing.T) {
	runSteps(t, mysqlSession(t, open(t)), []struct{ sql, want string }{
		{"create table yr (id int primary key, a year, b year(4) not null default 2000)", ""},
		{"insert into yr values (1, '2024', 24), (2, 2024, '24'), (3, 0, '0'), (4, '69', 70), (5, '1901', 2155), (6, null, 1999)", ""},
		{"insert into yr (b, id, a) values (99, 7, '1')", ""},
		{"select id, a, b from yr order by id", "1 2024 2024, 2 2024 2024, 3 0 2000, 4 2069 1970, 5 1901 2155, 6 (null) 1999, 7 2001 1999"},
		{"select a + 0, a = 2024 from yr where id = 1", "2024 true"},
		{"show columns from yr", "id int(11) NO PRI (null) , a year(4) YES  (null) , b year(4) NO  2000 "},
		{"select column_name, data_type, column_type, numeric_precision, numeric_scale from information_schema.columns " +
			"where table_schema = database() and table_name = 'yr' order by ordinal_position",
			"id int int(11) 10 0, a year year(4) (null) (null), b year year(4) (null) (null)"},
		{"alter table yr add column c year", ""},
		{"show columns from yr like 'c'", "c year(4) YES  (null) "},
	})
}
