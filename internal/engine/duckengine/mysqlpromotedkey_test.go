package duckengine_test

import "testing"

// TestMySQLUniqueNotNullKeyIsPrimary: a table without a primary key has its first unique key
// whose columns are all NOT NULL taken as one (InnoDB), and MariaDB's SHOW COLUMNS and
// information_schema.COLUMNS say PRI for its columns (was UNI, or ” and MUL for a key of two
// columns); a later such key, a key with a nullable column, and any unique key of a table
// with a primary key stay UNI. MariaDB 10.11's answers, recorded.
func TestMySQLUniqueNotNullKeyIsPrimary(t *testing.T) {
	runSteps(t, mysqlSession(t, open(t)), []struct{ sql, want string }{
		{"create table u1 (code varchar(10) not null unique, name varchar(10))", ""},
		{"create table u3 (a int unique, b int not null, unique key (b))", ""},
		{"create table u4 (id int primary key, b int not null unique)", ""},
		{"create table u5 (a int not null, b int not null, unique key ab (a, b), c int not null unique)", ""},
		{"select table_name, column_name, column_key from information_schema.columns where table_schema = database() " +
			"and table_name in ('u1', 'u3', 'u4', 'u5') order by table_name, ordinal_position",
			"u1 code PRI, u1 name , u3 a UNI, u3 b PRI, u4 id PRI, u4 b UNI, u5 a PRI, u5 b PRI, u5 c UNI"},
		{"show columns from u1", "code varchar(10) NO PRI (null) , name varchar(10) YES  (null) "},
	})
}
