package mysqlwire

import (
	"context"
	"regexp"
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
	conns := oneConnEach(t, maria, duck)
	compareSteps(t, conns[0], conns[1], []string{
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
	})
}

// TestMySQLOnUpdateAndInlineIndexesOnDuckDBLikeMariaDB: a CREATE TABLE with ON UPDATE
// CURRENT_TIMESTAMP columns and inline KEY / INDEX definitions (named, unnamed, two tables with
// the same key name, as mariadb-dump writes `KEY user_id (user_id)`), then UPDATEs: one that
// changes nothing leaves the times alone, one that changes a row sets them (not the row it
// does not match, not a column it sets itself), and SHOW COLUMNS (MUL, Extra), SHOW INDEX, SHOW
// CREATE TABLE and information_schema.statistics as MariaDB answers them; DROP INDEX, and the
// table renamed (ALTER TABLE ... RENAME TO, RENAME TABLE) with its indexes, ALTER TABLE ADD INDEX /
// ADD KEY / DROP INDEX and ADD COLUMN ... AFTER (a Flyway-like script's). On DuckDB the
// columns were never set and the indexes not created.
func TestMySQLOnUpdateAndInlineIndexesOnDuckDBLikeMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	execBoth(t, maria, duck,
		"create table ou (id int primary key, c int, ts datetime not null default current_timestamp on update current_timestamp, "+
			"dt datetime(3) null on update current_timestamp(3), key by_c (c), index (ts), unique key (c, id))",
		"create table ou2 (id int primary key, c int, key by_c (c), key (c))",
		"insert into ou (id, c, ts, dt) values (1, 10, '2020-01-01 00:00:00', '2020-01-01 00:00:00'), (2, 20, '2020-01-01 00:00:00', null), "+
			"(3, 30, '2020-01-01 00:00:00', null)")
	const times = "select id, c, ts = '2020-01-01 00:00:00' as ts_kept, ts > now() - interval 1 hour as ts_now, " +
		"dt = '2020-01-01 00:00:00' as dt_kept, dt > now() - interval 1 hour as dt_now from ou order by id"
	compareSteps(t, maria, duck, []string{
		"exec update ou set c = c where id = 1",
		times,
		"exec update ou set c = 11 where id = 1",
		times,
		"exec update ou set c = 21, ts = '2021-01-01 00:00:00' where id = 2",
		// Row 1's times are the clock's, which MariaDB and DuckDB read a moment apart: times
		// compares them with the clock; the other rows' are the values written.
		times,
		"select id, c, ts, dt is not null as dt_set from ou where id <> 1 order by id",
		"show columns from ou",
		"show index from ou",
		"show index from ou2",
		"show create table ou",
		"show create table ou2",
		"select table_name, index_name, non_unique, seq_in_index, column_name, nullable, index_type from information_schema.statistics " +
			"where table_schema = database() order by table_name, index_name, seq_in_index",
		"exec drop index by_c on ou2",
		"exec create index by_x on ou2 (c)",
		"exec drop index by_x on ou2",
		"show index from ou2",
		"show index from ou",
		"exec alter table ou rename to ou3",
		"exec rename table ou3 to ou4",
		"show index from ou4",
		"exec insert into ou4 (id, c) values (4, 40)",
		"exec update ou4 set c = 41 where id = 4",
		"select id, c, ts > now() - interval 1 hour as ts_now from ou4 order by id",
		"exec alter table ou4 add index by_ts_c (ts, c)",
		"exec alter table ou4 drop index by_c",
		"exec alter table ou4 add key (dt)",
		"exec alter table ou4 add column extra int null after c",
		"show index from ou4",
		"select id, c, extra from ou4 order by id",
	})
}

// withoutCardinality is SHOW INDEX's rows without the Cardinality values (MariaDB's are
// statistics that it updates when it likes).
func withoutCardinality(rows string) string {
	return cardinality.ReplaceAllString(rows, "Cardinality=?")
}

var cardinality = regexp.MustCompile(`Cardinality=("[^"]*"|NULL)`)

// TestMySQLCaselessKeysOnDuckDBLikeMariaDB: a UNIQUE key and a PRIMARY KEY over text columns
// compare without regard to case, as under MariaDB's utf8mb4_general_ci: 'a@X.org' after
// 'A@x.org' is 1062, INSERT IGNORE leaves it out, ON DUPLICATE KEY UPDATE updates the row it
// matches in another case, an UPDATE into another row's value in another case is 1062, and a
// two-column key with a text column too; SHOW INDEX lists the keys as MariaDB's. DuckDB's keys
// compared bytes: both rows went in. An UPDATE to the same value in another case is a change
// (1 row), as MariaDB compares the row's bytes.
func TestMySQLCaselessKeysOnDuckDBLikeMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	execBoth(t, maria, duck,
		"create table ck (id int auto_increment primary key, email varchar(100) not null unique, name varchar(50))",
		"create table pk (code varchar(10) primary key, v int)",
		"create table ck2 (a varchar(10), b int, unique key (a, b))")
	compareSteps(t, maria, duck, []string{
		"exec insert into ck (email, name) values ('A@x.org', 'one')",
		"exec insert into ck (email, name) values ('a@X.org', 'two')",
		"exec insert ignore into ck (email, name) values ('a@x.ORG', 'three')",
		"exec insert into ck (email, name) values ('a@x.org', 'four') on duplicate key update name = values(name)",
		"select * from ck order by id",
		"exec update ck set email = 'A@X.ORG' where id = 1",
		"exec insert into ck (email, name) values ('b@x.org', 'five')",
		"exec update ck set email = 'a@x.org' where email = 'b@x.org'",
		"select * from ck order by id",
		"select name from ck where email = 'a@x.org'",
		"exec insert into pk values ('X1', 1), ('x1', 2)",
		"exec insert into pk values ('X1', 1)",
		"exec insert into pk values ('x1', 2)",
		"select * from pk",
		"exec insert into ck2 values ('A', 1), ('a', 2)",
		"exec insert into ck2 values ('a', 1)",
		"select count(*) from ck2",
		"show index from ck",
		"show index from pk",
		"show index from ck2",
	})
}

// TestMySQLAssignmentsOutsideTheSelectListOnDuckDB: MySQL 5's ranking idiom, a derived table
// that sets the counter (`FROM t, (SELECT @rn := 0) r` with `@rn := @rn + 1` in the list),
// ranks as on MariaDB, the variables set once before the rows; an assignment anywhere else
// (WHERE, ORDER BY, inside an expression of an UPDATE's SET, INSERT ... VALUES, a subquery,
// inside an expression) is refused with 1235 naming where it is, rather than DuckDB's syntax
// error at ":=" (1064).
func TestMySQLAssignmentsOutsideTheSelectListOnDuckDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	execBoth(t, maria, duck, "create table ra (id int primary key, score int, name varchar(20))",
		"insert into ra values (1, 10, 'a'), (2, 30, 'b'), (3, 20, 'c')")
	conns := oneConnEach(t, maria, duck)
	compareSteps(t, conns[0], conns[1], []string{
		"select @rn := @rn + 1 as rnk, ra.* from ra, (select @rn := 0) r order by score desc",
		"select @rn",
		"select ra.id, @x, @y from ra cross join (select @x := 'hi', @y := 5) init order by id",
		"select @x, @y",
		"select * from (select @z := 7) z",
		"select @z + 1",
		"select @rn := @rn + 1 as rnk, name from ra cross join (select @rn := 10) as r order by name",
	})
	for stmt, place := range map[string]string{
		"select id from ra where (@n := @n + 1) > 1":     "WHERE",
		"update ra set score = (@v := score + 1) * 2":    "an UPDATE's SET",
		"select id from ra order by (@w := id)":          "ORDER BY",
		"select (select @q := 5)":                        "a subquery",
		"insert into ra values (4, @m := 44, 'd')":       "INSERT ... VALUES",
		"select 1 + (@k := 2)":                           "an expression of the select list",
		"insert into ra select 5, @j := 1, 'e'":          "the select list of INSERT ... SELECT",
		"select id from ra where id in (select @s := 1)": "a subquery",
	} {
		_, err := conns[1].ExecContext(context.Background(), stmt)
		if errNumber(err) != 1235 || !strings.Contains(err.Error(), ":= ...) in "+place+"'") {
			t.Errorf("%s: %v, want 1235 naming %s", stmt, err, place)
		}
	}
}
