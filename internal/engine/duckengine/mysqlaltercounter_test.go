package duckengine_test

import "testing"

// TestMySQLCounterAfterDropAndAlter: a table's AUTO_INCREMENT counter as MariaDB keeps it
// (MariaDB 10.11's ids, recorded): a table dropped and created again IF NOT EXISTS
// (Sequelize's sync({force})) starts at 1, or at its AUTO_INCREMENT=n (went on from the
// dropped table's); ALTER TABLE t AUTO_INCREMENT = n sets the next id, up or down but past
// the largest id (was 1064), and is taken for a table without such a column; TRUNCATE sets
// it back to 1.
func TestMySQLCounterAfterDropAndAlter(t *testing.T) {
	runSteps(t, mysqlSession(t, open(t)), []struct{ sql, want string }{
		{"create table if not exists aip (id int auto_increment primary key, v int)", ""},
		{"insert into aip (v) values (1), (2), (3)", ""},
		{"drop table if exists aip", ""},
		{"create table if not exists aip (id int auto_increment primary key, v int)", ""},
		{"insert into aip (v) values (9)", ""},
		{"select id, v from aip", "1 9"},
		{"drop table aip", ""},
		{"create table if not exists aip (id int auto_increment primary key, v int) auto_increment = 50", ""},
		{"insert into aip (v) values (10)", ""},
		{"create table if not exists aip (id int auto_increment primary key, v int)", ""},
		{"insert into aip (v) values (11)", ""},
		{"select id, v from aip order by id", "50 10, 51 11"},
		{"alter table aip auto_increment = 100", ""},
		{"insert into aip (v) values (12)", ""},
		{"alter table aip auto_increment=20", ""},
		{"insert into aip (v) values (13)", ""},
		{"delete from aip where id > 51", ""},
		{"alter table `aip` auto_increment 5", ""},
		{"insert into aip (v) values (14)", ""},
		{"select id, v from aip order by id", "50 10, 51 11, 52 14"},
		{"truncate table aip", ""},
		{"insert into aip (v) values (15)", ""},
		{"select id, v from aip order by id", "1 15"},
		{"create table plain (a int)", ""},
		{"alter table plain auto_increment = 7", ""},
		{"alter table nothere auto_increment = 7", "error: "},
	})
}
