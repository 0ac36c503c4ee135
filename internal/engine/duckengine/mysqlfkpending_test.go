package duckengine_test

import "testing"

// TestMySQLPendingKeyHoldsNewRows: a key left pending by SET FOREIGN_KEY_CHECKS=1 over rows
// that break it (or over a key to a table that does not exist) refuses, as MariaDB's key
// does, a new row breaking it (1452) and a parent's row deleted or changed under a child
// (1451), the statement undone; the rows already broken are kept, updated and deleted, and a
// new row naming a parent, or NULL, is taken. A refusal inside a client's transaction fails
// it. The key's value decides: a broken row set to another missing parent is 1452 too.
func TestMySQLPendingKeyHoldsNewRows(t *testing.T) {
	runSteps(t, mysqlSession(t, open(t)), []struct{ sql, want string }{
		{"create table hp (id int primary key, v int)", ""},
		{"create table hc (id int primary key, pid int, name varchar(10), foreign key (pid) references hp (id))", ""},
		{"insert into hp values (1, 0), (2, 0)", ""},
		{"set foreign_key_checks = 0", ""},
		{"insert into hc values (1, 42, 'x'), (2, 1, 'y'), (3, 2, 'z')", ""},
		{"set foreign_key_checks = 1", ""},
		{"insert into hc values (4, 43, 'w')", "error: 23000: Cannot add or update a child row: a foreign key constraint fails (`main`.`hc`, CONSTRAINT `hc_ibfk_1` FOREIGN KEY (`pid`) REFERENCES `hp` (`id`)) (MySQL error 1452)"},
		{"insert into hc values (5, 42, 'w')", "error: 23000: Cannot add or update a child row"},
		{"insert into hc values (6, 1, 'v'), (7, null, 'n')", ""},
		{"update hc set name = 'q' where pid = 42", ""},
		{"update hc set pid = 44 where id = 1", "error: 23000: Cannot add or update a child row"},
		{"update hc set pid = 9 where id = 2", "error: 23000: Cannot add or update a child row"},
		{"delete from hp where id = 1", "error: 23000: Cannot delete or update a parent row: a foreign key constraint fails (`main`.`hc`, CONSTRAINT `hc_ibfk_1` FOREIGN KEY (`pid`) REFERENCES `hp` (`id`)) (MySQL error 1451)"},
		{"update hp set id = 7 where id = 2", "error: 23000: Cannot delete or update a parent row"},
		{"update hp set v = 5 where id = 2", ""},
		{"insert into hp values (3, 0)", ""},
		{"delete from hp where id = 3", ""},
		{"select id, pid, name from hc order by id", "1 42 q, 2 1 y, 3 2 z, 6 1 v, 7 (null) n"},
		{"select id, v from hp order by id", "1 0, 2 5"},
		{"begin", ""},
		{"insert into hc values (8, 1, 'a')", ""},
		{"insert into hc values (9, 45, 'b')", "error: 23000: Cannot add or update a child row"},
		{"rollback", ""},
		{"select count(*) from hc", "5"},
		{"delete from hc where pid = 42", ""},
		{"set foreign_key_checks = 1", ""},
		{"insert into hc values (10, 46, 'c')", "error: 23503: "},
		// a key to a table dropped with the checks off: every non-NULL key refused
		{"create table gp (id int primary key)", ""},
		{"create table gc (id int primary key, pid int, foreign key (pid) references gp (id))", ""},
		{"set foreign_key_checks = 0", ""},
		{"drop table gp", ""},
		{"set foreign_key_checks = 1", ""},
		{"insert into gc values (1, 5)", "error: 23000: Cannot add or update a child row"},
		{"insert into gc values (2, null)", ""},
		{"select id, pid from gc", "2 (null)"},
	})
}
