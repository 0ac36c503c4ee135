package mysqlwire

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestMySQLTextComparesLikeMariaDB: text a MySQL client compares, sorts, groups, joins and
// matches on the embedded DuckDB answers what MariaDB's default collation (utf8mb4_general_ci)
// answers: WHERE name = 'ALICE' finds alice, ORDER BY and GROUP BY fold case, and so do IN,
// LIKE, < and a join; by bytes where MariaDB compares bytes: a BINARY column, a utf8mb4_bin
// one, LIKE BINARY (Django's contains), BINARY x and COLLATE utf8mb4_bin. Text protocol, and a
// prepared statement (go-sql-driver prepares one with parameters).
func TestMySQLTextComparesLikeMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	execBoth(t, maria, duck,
		"create table people (id int primary key, name varchar(20) not null, note text, tag varchar(10) binary, "+
			"code varchar(10) character set utf8mb4 collate utf8mb4_bin, email varchar(50))",
		"insert into people values (1, 'alice', 'x', 'ab', 'ab', 'a@x.org'), (2, 'ALICE', 'X', 'AB', 'AB', 'b@x.org'), (3, 'Bob', 'y', 'b', 'b', 'c@x.org')",
		"create table visits (person varchar(20), n int)",
		"insert into visits values ('Alice', 1), ('BOB', 2)",
		"create table raw (s varchar(10)) default charset=utf8mb4 collate=utf8mb4_bin",
		"insert into raw values ('a'), ('A')")
	for _, c := range []struct {
		q    string
		args []any
	}{
		{q: "select id from people where name = 'ALICE' order by id"},
		{q: "select id from people where name = ? order by id", args: []any{"Alice"}},
		{q: "select id from people where email = 'A@X.ORG'"},
		{q: "select name from people order by name, id"},
		{q: "select lower(name), count(*) from people group by name order by 1"},
		{q: "select count(*) from (select distinct name from people) d"},
		{q: "select id from people where name in ('ALICE', 'bob') order by id"},
		{q: "select id from people where note < 'Y' order by id"},
		{q: "select p.id, v.n from people p join visits v on v.person = p.name order by 1, 2"},
		{q: "select id from people where name like 'al%' order by id"},
		{q: "select id from people where tag = 'ab'"},
		{q: "select id from people where code = ? order by id", args: []any{"AB"}},
		{q: "select count(*) from raw where s = 'a'"},
		{q: "select id from people where name like binary 'al%'"},
		{q: "select id from people where people.name not like binary ? order by id", args: []any{"al%"}},
		{q: "select id from people where binary name = 'ALICE'"},
		{q: "select id from people where name = 'ALICE' collate utf8mb4_bin"},
		{q: "select id from people where `people`.`name` = binary 'alice'"},
		{q: "select id from people where name = 'ALICE' collate utf8mb4_general_ci order by id"},
	} {
		m, d := typedValues(t, maria, c.q, c.args...), typedValues(t, duck, c.q, c.args...)
		if m != d {
			t.Errorf("%s %v:\n MariaDB %s\n DuckDB  %s", c.q, c.args, m, d)
		}
	}
}

// TestMySQLTimesLikeMariaDB: a MySQL client's TIME column comes from the embedded DuckDB as
// MariaDB's TIME (12:34:56; DuckDB's has six digits, which a whole second went with), TIME(n)
// is created (DuckDB's TIME takes no precision); dt + INTERVAL n unit is MariaDB's DATETIME
// (DuckDB's TIMESTAMP_S + INTERVAL was a TIMESTAMP, six digits), a DATE's whole days a DATE;
// CONVERT_TZ with offsets ('+02:00') answers MariaDB's, and with named zones PostgreSQL's
// (this MariaDB has no time zone tables, so its answer there is NULL).
func TestMySQLTimesLikeMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	execBoth(t, maria, duck, "create table clock (id int primary key, t time, t6 time(6), d date, dt datetime)",
		"insert into clock values (1, '12:34:56', '12:34:56.5', '2024-03-04', '2024-03-04 10:11:12')")
	for _, c := range []struct {
		q         string
		binaryToo bool
	}{
		{q: "select t, t6 from clock"}, // a TIME's decimals are six here: go-sql-driver writes them all in the binary protocol
		{q: "select dt + interval 1 day, dt + interval 90 minute, dt - interval 1 second, d + interval 1 month, d - interval 2 day from clock", binaryToo: true},
		{q: "select date(dt) + interval 1 day, (dt) + interval '2' hour, cast(dt as date) - interval 1 week from clock", binaryToo: true},
		{q: "select convert_tz(dt, '+00:00', '+02:00'), convert_tz(dt, '-05:30', '+01:00'), convert_tz('2024-03-04 10:11:12', '+01:00', '-01:00') from clock", binaryToo: true},
	} {
		m, d := typedValues(t, maria, c.q), typedValues(t, duck, c.q)
		if m != d {
			t.Errorf("%s:\n MariaDB %s\n DuckDB  %s", c.q, m, d)
		}
		if c.binaryToo {
			q := c.q + " where id = ?"
			if m, d := typedValues(t, maria, q, 1), typedValues(t, duck, q, 1); m != d {
				t.Errorf("%s (binary):\n MariaDB %s\n DuckDB  %s", q, m, d)
			}
		}
	}
	pg, err := pgx.Connect(context.Background(), pgtest.ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(context.Background())
	for _, z := range [][2]string{{"UTC", "Europe/Paris"}, {"Europe/Paris", "America/New_York"}, {"Asia/Kolkata", "+00:00"}, {"+03:00", "Europe/Paris"}} {
		for _, at := range []string{"2024-01-15 10:11:12", "2024-07-04 23:30:00"} {
			var want string
			// PostgreSQL reads '+03:00' as POSIX's (the other way round): its zone there is the
			// offset's interval.
			from, to := pgZone(z[0]), pgZone(z[1])
			if err := pg.QueryRow(context.Background(), "select to_char(("+"$1::timestamp at time zone "+from+") at time zone "+to+", 'YYYY-MM-DD HH24:MI:SS')",
				at).Scan(&want); err != nil {
				t.Fatal(err)
			}
			var got string
			// (the datetime a parameter, DuckDB could not choose between the macro's overloads, as
			// for DATE_ADD(?, ...))
			if err := duck.QueryRow("select convert_tz('"+at+"', ?, ?)", z[0], z[1]).Scan(&got); err != nil || got != want {
				t.Errorf("convert_tz(%s, %s, %s): %q (%v), PostgreSQL %q", at, z[0], z[1], got, err, want)
			}
		}
	}
}

// pgZone writes a MySQL time zone as PostgreSQL's AT TIME ZONE reads it: a name quoted, an
// offset ('+03:00') as an interval (PostgreSQL's '+03:00' is POSIX's, west of Greenwich).
func pgZone(z string) string {
	if z[0] == '+' || z[0] == '-' {
		return "interval '" + z + "'"
	}
	return "'" + z + "'"
}
