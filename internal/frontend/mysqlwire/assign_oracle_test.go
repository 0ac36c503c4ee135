package mysqlwire

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
)

// TestMySQLSelectAssignsVariablesOnDuckDBLikeMariaDB: a SELECT that assigns user variables,
// on one connection to MariaDB and one through the proxy to DuckDB, step by step: `@v := expr`
// in the select list (its column named as written, a later item reading the new value, the
// running count `@n := @n + 1`, the last row's value kept), SELECT ... INTO @a, @b (before FROM
// and at the end; no row leaves the variables; two rows are 1172, two columns into one
// variable 1222), the values read by a later SELECT and an UPDATE ... SET c = @v. On DuckDB
// each of these was DuckDB's syntax error (1064) or left the variable NULL.
func TestMySQLSelectAssignsVariablesOnDuckDBLikeMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	execBoth(t, maria, duck, "create table uv (id int primary key, c int, s varchar(20), p decimal(6,2))",
		"insert into uv values (1, 10, 'a', 1.50), (2, 20, 'b', null), (3, 30, 'c', 2.25)")
	maria.SetMaxIdleConns(0)
	duck.SetMaxIdleConns(0)
	ctx := context.Background()
	conns := [2]*sql.Conn{}
	for i, db := range []*sql.DB{maria, duck} {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	for _, step := range []string{
		"SELECT @v := 1",
		"SELECT @v, @v + 1",
		"SELECT @w := 5 + 2, @w * 2 AS twice",
		"SELECT @w",
		"exec SELECT c INTO @x FROM uv WHERE id = 2",
		"SELECT @x, @x * 2",
		"exec SELECT c, s, p INTO @c, @s, @p FROM uv WHERE id = 1",
		"SELECT @c, @s, @p",
		"exec SELECT c FROM uv WHERE id = 99 INTO @c",
		"SELECT @c",
		"exec SELECT c INTO @z FROM uv",
		"exec SELECT c, s INTO @z FROM uv WHERE id = 1",
		"SELECT @z",
		"exec SELECT max(c), min(s) INTO @m, @least FROM uv",
		"SELECT @m, @least",
		"exec SET @a = 1, @b = @a + 1",
		"SELECT @a, @b",
		"exec UPDATE uv SET c = @x WHERE id = 1",
		"SELECT * FROM uv ORDER BY id",
		"exec SET @n := 0",
		"SELECT id, @n := @n + 1 AS rn FROM uv ORDER BY id",
		"SELECT @n",
		"SELECT id, @n := @n + 1 AS rn FROM uv ORDER BY id DESC",
		"SELECT @n",
		"SELECT @s := s FROM uv ORDER BY id",
		"SELECT @s",
		"SELECT s, @q := p FROM uv WHERE id < 3 ORDER BY id",
		"SELECT @q",
		"SELECT @e := NULL",
		"SELECT @e",
		"SELECT @none := c FROM uv WHERE id = 99",
		"SELECT @none",
		"exec UPDATE uv SET s = @s, c = @n WHERE id = 2",
		"SELECT * FROM uv ORDER BY id",
		"SELECT id FROM uv WHERE c >= @m - 10 ORDER BY id",
	} {
		var got [2]string
		for i, c := range conns {
			if stmt, ok := strings.CutPrefix(step, "exec "); ok {
				res, err := c.ExecContext(ctx, stmt)
				n := int64(-1)
				if err == nil {
					n, _ = res.RowsAffected()
				}
				got[i] = fmt.Sprintf("error %d, %d rows", errNumber(err), n)
				continue
			}
			got[i] = dumpRows(t, c, step)
		}
		if got[0] != got[1] {
			t.Errorf("%s:\n MariaDB %s\n DuckDB  %s", step, got[0], got[1])
		}
	}
}
