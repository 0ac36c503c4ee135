package duckengine_test

import (
	"testing"

	"github.com/queryflux/queryflux/internal/engine/duckengine"
)

func TestMySQLRefusedWriteUndoneAlone(t *testing.T) {
	runSteps(t, mysqlSession(t, open(t)), []struct{ sql, want string }{
		{"create table up (id int primary key, code varchar(5) unique, n int not null, c int check (c > 0))", ""},
		{"create table uc (id int primary key, pid int, foreign key (pid) references up (id))", ""},
		{"create table ai (id int auto_increment primary key, code varchar(5) unique)", ""},
		{"insert into up values (1, 'a', 1, 1)", ""},
		{"begin", ""},
		{"insert into up values (2, 'b', 2, 2)", ""},
		{"insert into up values (2, 'x', 2, 2)", "error: 23"},
		{"insert into up values (3, 'c', 3, 3)", ""},
		{"insert into up values (4, 'a', 4, 4)", "error: 23"},
		{"insert into up values (5, 'e', null, 5)", "error: 23"},
		{"insert into up values (6, 'f', 6, -1)", "error: "},
		{"insert into uc values (1, 99)", "error: 23"},
		{"insert into uc values (2, 3)", ""},
		{"update up set id = 9 where id = 3", "error: 23"},
		{"delete from up where id = 3", "error: 23"},
		{"update up set n = 10 where id = 2", ""},
		{"insert into ai (code) values ('p')", ""},
		{"insert into ai (code) values ('p')", "error: 23"},
		{"insert into ai (code) values ('q')", ""},
		{"commit", ""},
		{"select id, code, n, c from up order by id", "1 a 1 1, 2 b 10 2, 3 c 3 3"},
		{"select id, pid from uc order by id", "2 3"},
		{"select id, code from ai order by id", "1 p, 3 q"},
	})
}

// TestMySQLUndoKeepsUserVariables: a kept write that reads or assigns a user variable runs
// again, at a refusal's undo, with the values it first ran with, and the variables keep the
// values they had before the undo (MariaDB's are not transactional either): MariaDB 10.11's
// answers, recorded. The refusal after `@x` failed the whole transaction (25P02).
func TestMySQLUndoKeepsUserVariables(t *testing.T) {
	runSteps(t, mysqlSession(t, open(t)), []struct{ sql, want string }{
		{"create table uv (id int primary key, n int)", ""},
		{"begin", ""},
		{"insert into uv values (1, 1)", ""},
		{"insert into uv values (1, 1)", "error: 23"},
		{"set @x = 5", ""},
		{"insert into uv values (2, @x)", ""},
		{"insert into uv values (2, 2)", "error: 23"},
		{"set @x = 7", ""},
		{"insert into uv values (3, @x)", ""},
		{"update uv set n = (@c := n + 10) where id = 1", ""},
		{"insert into uv values (3, 3)", "error: 23"},
		{"set @c = 100", ""},
		{"insert into uv values (3, 3)", "error: 23"},
		{"select @x, @c", "7 100"},
		{"insert into uv values (4, @c), (1, 0)", "error: 23"},
		{"commit", ""},
		{"select id, n from uv order by id", "1 11, 2 5, 3 7"},
	})
}

// TestMySQLUndoLostAfterRandomValues: a statement whose values differ each run (RAND()) cannot
// be run again as it ran: a refusal after it fails the whole transaction, as before, rather
// than write other values.
func TestMySQLUndoLostAfterRandomValues(t *testing.T) {
	runSteps(t, mysqlSession(t, open(t)), []struct{ sql, want string }{
		{"create table uv (id int primary key, n int)", ""},
		{"begin", ""},
		{"insert into uv values (1, 1)", ""},
		{"insert into uv values (1, 1)", "error: 23"},
		{"insert into uv values (2, floor(rand()))", ""},
		{"insert into uv values (2, 2)", "error: 23"},
		{"insert into uv values (3, 3)", "error: 25P02"},
		{"rollback", ""},
		{"begin", ""},
		{"insert into uv values (4, 4)", ""},
		{"insert into uv values (4, 4)", "error: 23"},
		{"commit", ""},
		{"select id, n from uv order by id", "4 4"},
	})
}

// TestMySQLUndoBoundedByKeptStatements: past stmtLogMax kept writes a refusal fails the whole
// transaction, as before, rather than stall while they run again.
func TestMySQLUndoBoundedByKeptStatements(t *testing.T) {
	defer duckengine.SetStmtLogMax(3)()
	runSteps(t, mysqlSession(t, open(t)), []struct{ sql, want string }{
		{"create table kb (id int primary key)", ""},
		{"begin", ""},
		{"insert into kb values (1)", ""},
		{"insert into kb values (2)", ""},
		{"insert into kb values (3)", ""},
		{"insert into kb values (3)", "error: 23"},
		{"insert into kb values (4)", ""},
		{"insert into kb values (4)", "error: 23"},
		{"insert into kb values (5)", "error: 25P02"},
		{"commit", ""},
		{"select count(*) from kb", "0"},
	})
}
