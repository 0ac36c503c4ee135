package mysqlwire

import "testing"

// TestUserVariablesInATransactionOnDuckDBLikeMariaDB: user variables written (SET @x, an
// UPDATE's @c := ...) and read by a transaction's writes, then a refused statement and a
// ROLLBACK TO SAVEPOINT: through the proxy on DuckDB the rows, the variables and COMMIT are
// MariaDB's. DuckDB failed the whole transaction at the refusal after the first write naming a
// variable (every later statement 1105, COMMIT 1213, nothing committed).
func TestUserVariablesInATransactionOnDuckDBLikeMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	conns := oneConnEach(t, maria, duck)
	compareMessages(t, conns[0], conns[1], []string{
		"exec create table uv (id int primary key, n int, s varchar(10))",
		"exec begin",
		"exec insert into uv values (1, 1, 'a')",
		"exec set @x = 5, @s = 'five'",
		"exec insert into uv values (2, @x, @s)",
		"exec insert into uv values (2, 2, 'b')",
		"exec set @x = 7",
		"exec insert into uv (id, n, s) values (3, @x, ?) <- seven",
		"exec update uv set n = (@c := n + 10) where id = 1",
		"exec insert into uv values (3, 3, 'c')",
		"select @x, @s, @c",
		"exec set @c = 100",
		"exec savepoint a",
		"exec insert into uv values (4, @c, @s)",
		"exec set @c = 200",
		"exec insert into uv values (5, @c, 'e')",
		"exec rollback to savepoint a",
		"select @x, @s, @c",
		"exec insert into uv values (1, 0, 'dup')",
		"exec commit",
		"select id, n, s from uv order by id",
		"exec set autocommit = 0",
		"exec set @y = 1",
		"exec insert into uv values (10, @y, 'y')",
		"exec set @y = @y + 1",
		"exec insert into uv values (11, @y, 'y')",
		"exec insert into uv values (10, 0, 'dup')",
		"exec commit",
		"exec set autocommit = 1",
		"select id, n, s from uv where id >= 10 order by id",
		"select @y",
	})
}
