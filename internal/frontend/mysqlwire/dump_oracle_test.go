package mysqlwire

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/mytest"
)

// dumpSchema is a MariaDB database as applications have them: tables that reference tables
// later in name order (a dump creates books before publishers), AUTO_INCREMENT, text with
// quotes, backslashes, NULLs and unicode, numbers, dates, times, a unique key and plain
// indexes, a cascading key, and a view.
var dumpSchema = []string{
	"create table publishers (id int auto_increment primary key, name varchar(100) not null unique, country char(2)) auto_increment=10",
	"create table authors (id int auto_increment primary key, name varchar(100) not null, bio text, born date, key by_name (name))",
	"create table books (id int auto_increment primary key, author_id int not null, publisher_id int, title varchar(200) not null, " +
		"price decimal(10,2), rating double, in_print tinyint(1) not null default 1, added datetime not null, cover blob, " +
		"unique key title_author (title, author_id), key by_price (price), " +
		"constraint books_author foreign key (author_id) references authors (id) on delete cascade, " +
		"foreign key (publisher_id) references publishers (id))",
	"create table reviews (id bigint unsigned auto_increment primary key, book_id int not null, body mediumtext, stars smallint, " +
		"foreign key (book_id) references books (id))",
	"insert into publishers (name, country) values ('Penguin', 'GB'), ('O''Reilly', 'US'), ('Zoë Éditions', null)",
	`insert into authors (name, bio, born) values ('O''Brien', 'wrote "things"\nand C:\\temp\\x', '1950-03-04'), ` +
		`('Zoë 🚀', null, null), ('plain', '', '2001-12-31')`,
	"insert into books (author_id, publisher_id, title, price, rating, in_print, added, cover) values " +
		"(1, 10, 'First', 12.50, 4.25, 1, '2024-03-04 10:11:12', x'00ff10'), (1, 11, 'Second; with semicolon', null, null, 0, '2020-01-01 00:00:00', null), " +
		"(2, null, 'Ünïcode ✓', 0.99, -1e10, 1, '1999-12-31 23:59:59', '')",
	"insert into reviews (book_id, body, stars) values (1, 'good', 5), (3, 'it''s\\tfine', null), (3, null, 1)",
	"create view book_list as select b.id, b.title, a.name as author, p.name as publisher from books b join authors a on a.id = b.author_id " +
		"left join publishers p on p.id = b.publisher_id",
}

// dumpTableReads are every table's rows; dumpReads the view's too: what the tests compare after a restore.
var (
	dumpTableReads = []string{"select * from publishers order by id", "select * from authors order by id",
		"select * from books order by id", "select * from reviews order by id"}
	dumpReads = append(dumpTableReads[:len(dumpTableReads):len(dumpTableReads)], "select * from book_list order by id")
)

// TestMariaDBDumpRestoresOntoDuckDB: a mariadb-dump file of a real MariaDB database, piped
// through the mariadb CLI into the proxy's MySQL port, restores onto the embedded DuckDB and
// reads back as MariaDB's: every table's rows, the view's, the foreign keys (an orphan row is
// 1452 on both), the unique key (1062 on both) and the AUTO_INCREMENT counters (the next id).
// The dump stopped at its first user variable (SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT),
// then at the session variables set with them, and its tables reference tables created after
// them (FOREIGN_KEY_CHECKS=0).
func TestMariaDBDumpRestoresOntoDuckDB(t *testing.T) {
	maria, text := dumpedMariaDB(t)
	for _, want := range []string{"SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT", "FOREIGN_KEY_CHECKS=0", "LOCK TABLES", "DEFINER="} {
		if !strings.Contains(text, want) {
			t.Fatalf("the dump has no %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "CREATE TABLE `books`") > strings.Index(text, "CREATE TABLE `publishers`") {
		t.Fatal("the dump creates publishers before books: nothing references a later table")
	}
	addr := duckServer(t)
	restoreThrough(t, addr, text)
	duck := openDB(t, addr, testUser, "", "duck", "")
	for _, q := range dumpReads {
		m, d := dumpRows(t, maria, q), dumpRows(t, duck, q)
		if m != d {
			t.Errorf("%s:\n MariaDB %s\n DuckDB  %s", q, m, d)
		}
	}
	for _, s := range []string{
		"insert into books (author_id, title, added) values (99, 'orphan', now())",
		"insert into reviews (book_id) values (42)",
		"insert into publishers (name) values ('Penguin')",
		"insert into books (author_id, title, added) values (1, 'First', now())",
	} {
		_, merr := maria.Exec(s)
		_, derr := duck.Exec(s)
		if errNumber(merr) != errNumber(derr) || merr == nil {
			t.Errorf("%s: MariaDB %v, DuckDB %v", s, merr, derr)
		}
	}
	for _, table := range []string{"publishers", "authors", "books"} {
		s := "insert into " + table + " (name) values ('next')"
		if table == "books" {
			s = "insert into books (author_id, title, added) values (2, 'next', '2024-01-01')"
		}
		m, merr := maria.Exec(s)
		d, derr := duck.Exec(s)
		if merr != nil || derr != nil {
			t.Fatalf("%s: MariaDB %v, DuckDB %v", s, merr, derr)
		}
		mid, _ := m.LastInsertId()
		did, _ := d.LastInsertId()
		if mid != did {
			t.Errorf("%s: MariaDB's id %d, DuckDB's %d", s, mid, did)
		}
	}
}

// dumpedMariaDB creates dumpSchema in a new MariaDB database and dumps it with mariadb-dump.
func dumpedMariaDB(t *testing.T) (*sql.DB, string) {
	t.Helper()
	if _, err := exec.LookPath("mariadb-dump"); err != nil {
		t.Skip("mariadb-dump not installed")
	}
	dsn, name := mytest.NewDatabase(t)
	maria, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { maria.Close() })
	for _, s := range dumpSchema {
		if _, err := maria.Exec(s); err != nil {
			t.Fatalf("MariaDB: %s: %v", s, err)
		}
	}
	cfg, _ := mysql.ParseDSN(dsn)
	host, port, _ := net.SplitHostPort(cfg.Addr)
	args := []string{"-h", host, "-P", port, "--protocol=tcp", "--skip-ssl", "-u", cfg.User}
	if cfg.Passwd != "" {
		args = append(args, "-p"+cfg.Passwd)
	}
	return maria, dumpWith(t, append(args, name))
}

// dumpWith runs mariadb-dump with args and returns the dump.
func dumpWith(t *testing.T, args []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, "mariadb-dump", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mariadb-dump: %v\n%s", err, stderr.String())
	}
	return string(out)
}

// duckServer serves a new in-memory DuckDB through a core: the MySQL port's address.
func duckServer(t *testing.T) string {
	t.Helper()
	eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return serveCore(t, "duck", eng, coreSetup{}).addr
}

// restoreThrough pipes a dump through the mariadb CLI into the proxy at addr (database duck).
func restoreThrough(t *testing.T, addr, text string) {
	t.Helper()
	cli, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skip("mariadb CLI not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	host, port, _ := net.SplitHostPort(addr)
	restore := exec.CommandContext(ctx, cli, "-h", host, "-P", port, "--protocol=tcp", "--skip-ssl", "-u", testUser, "duck")
	restore.Stdin = strings.NewReader(text)
	if out, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("restoring the dump through the proxy: %v\n%s", err, out)
	}
}

// TestDumpThroughTheProxyRoundTrips: mariadb-dump through the proxy dumps the embedded DuckDB
// (it stopped at its SET @@SQL_MODE of the empty mode, then at information_schema.columns' GENERATION_EXPRESSION
// and information_schema.triggers), and that dump restores onto another DuckDB through the
// proxy: MariaDB's database, restored onto one DuckDB, dumped from it and restored onto a
// second, reads back as MariaDB's: the tables, the view (it was dumped as its stand-in table
// only: SHOW CREATE TABLE of a view answered a table's columns), the foreign keys and the
// AUTO_INCREMENT counters (SHOW CREATE TABLE wrote neither).
func TestDumpThroughTheProxyRoundTrips(t *testing.T) {
	maria, text := dumpedMariaDB(t)
	first := duckServer(t)
	restoreThrough(t, first, text)
	// a counter past the table's last id (a row added and deleted): only AUTO_INCREMENT=n keeps it
	for _, db := range []*sql.DB{maria, openDB(t, first, testUser, "", "duck", "")} {
		for _, s := range []string{"insert into authors (name) values ('gone')", "delete from authors where name = 'gone'"} {
			if _, err := db.Exec(s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	host, port, _ := net.SplitHostPort(first)
	again := dumpWith(t, []string{"-h", host, "-P", port, "--protocol=tcp", "--skip-ssl", "-u", testUser, "duck"})
	second := duckServer(t)
	restoreThrough(t, second, again)
	duck := openDB(t, second, testUser, "", "duck", "")
	for _, q := range dumpReads {
		if m, d := dumpRows(t, maria, q), dumpRows(t, duck, q); m != d {
			t.Errorf("%s:\n MariaDB %s\n DuckDB  %s", q, m, d)
		}
	}
	// The foreign keys, the unique key and the AUTO_INCREMENT counters came through the second
	// dump (SHOW CREATE TABLE's CONSTRAINT ... FOREIGN KEY and AUTO_INCREMENT=n).
	for _, s := range []string{
		"insert into books (author_id, title, added) values (99, 'orphan', now())",
		"insert into reviews (book_id) values (42)",
		"insert into publishers (name) values ('Penguin')",
	} {
		_, merr := maria.Exec(s)
		_, derr := duck.Exec(s)
		if errNumber(merr) != errNumber(derr) || merr == nil {
			t.Errorf("%s: MariaDB %v, DuckDB %v", s, merr, derr)
		}
	}
	for _, s := range []string{"insert into publishers (name) values ('next')", "insert into authors (name) values ('next')"} {
		m, merr := maria.Exec(s)
		d, derr := duck.Exec(s)
		if merr != nil || derr != nil {
			t.Fatalf("%s: MariaDB %v, DuckDB %v", s, merr, derr)
		}
		mid, _ := m.LastInsertId()
		if did, _ := d.LastInsertId(); mid != did {
			t.Errorf("%s: MariaDB's id %d, DuckDB's %d", s, mid, did)
		}
	}
}

// errNumber is a MySQL error's number, 0 for none.
func errNumber(err error) uint16 {
	if me, ok := err.(*mysql.MySQLError); ok {
		return me.Number
	}
	if err != nil {
		return 1
	}
	return 0
}

// querier is a *sql.DB or a *sql.Conn.
type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
}

// oneConnEach is one connection to MariaDB and one to DuckDB, for steps that keep session
// state (user variables); idle pools are off, so a connection closed is a client gone.
func oneConnEach(t *testing.T, maria, duck *sql.DB) [2]*sql.Conn {
	t.Helper()
	var conns [2]*sql.Conn
	for i, db := range []*sql.DB{maria, duck} {
		db.SetMaxIdleConns(0)
		c, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns[i] = c
	}
	return conns
}

// compareSteps runs each step on MariaDB and on DuckDB and reports where they differ: a step
// "exec <statement>" by its error number and rows affected, any other by its rows (dumpRows;
// SHOW INDEX's Cardinality left out, the database's name in db.table written db).
func compareSteps(t *testing.T, maria, duck querier, steps []string) {
	t.Helper()
	sides := []querier{maria, duck}
	var dbs [2]string
	for i, side := range sides {
		dbs[i] = strings.Trim(strings.TrimSuffix(strings.TrimPrefix(dumpRows(t, side, "select database() as db"), "db="), " | "), `"`)
	}
	for _, step := range steps {
		var got [2]string
		for i, side := range sides {
			got[i] = strings.ReplaceAll(stepAnswer(t, side, step), dbs[i]+".", "db.")
		}
		if got[0] != got[1] {
			t.Errorf("%s:\n MariaDB %s\n DuckDB  %s", step, got[0], got[1])
		}
	}
}

// stepAnswer is what side answers step (compareSteps): an "exec <statement>" its error number
// and rows affected, any other its rows (dumpRows, SHOW INDEX's Cardinality left out).
func stepAnswer(t *testing.T, side querier, step string) string {
	t.Helper()
	stmt, ok := strings.CutPrefix(step, "exec ")
	if !ok {
		return withoutCardinality(dumpRows(t, side, step))
	}
	stmt, args := stepArgs(stmt)
	res, err := side.ExecContext(context.Background(), stmt, args...)
	n := int64(-1)
	if err == nil {
		n, _ = res.RowsAffected()
	}
	return fmt.Sprintf("error %d, %d rows", errNumber(err), n)
}

// stepArgs splits an exec step "statement <- a, b" into the statement and its arguments, sent
// as a prepared statement's (go-sql-driver prepares a statement with arguments on the server):
// an integer as an int64, anything else as text.
func stepArgs(step string) (string, []any) {
	stmt, list, ok := strings.Cut(step, " <- ")
	if !ok {
		return step, nil
	}
	var args []any
	for _, a := range strings.Split(list, ", ") {
		if n, err := strconv.ParseInt(a, 10, 64); err == nil {
			args = append(args, n)
		} else {
			args = append(args, a)
		}
	}
	return stmt, args
}

// dumpRows is every row of q, its values as text ("NULL" for NULL), one line.
func dumpRows(t *testing.T, db querier, q string, args ...any) string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var b strings.Builder
	for rows.Next() {
		vals, err := rawRow(rows, len(cols))
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		for i, v := range vals {
			if v == nil {
				fmt.Fprintf(&b, "%s=NULL ", cols[i])
			} else {
				fmt.Fprintf(&b, "%s=%q ", cols[i], v)
			}
		}
		b.WriteString("| ")
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return b.String()
}

// TestMySQLUserVariablesOnDuckDBLikeMariaDB: user variables and the session variables a dump
// sets, on one connection to MariaDB and one through the proxy to DuckDB, step by step: SET
// of several (=, :=), reads of them (names in any case, one never set is NULL), arithmetic on
// them, a subquery's value, @@foreign_key_checks kept and set back from a user variable, a
// value a switch does not take (1231 on both), and another client's connection that never sees them.
func TestMySQLUserVariablesOnDuckDBLikeMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	execBoth(t, maria, duck, "create table uv (id int primary key, name varchar(20))", "insert into uv values (1, 'one'), (11, 'eleven')")
	conns := oneConnEach(t, maria, duck)
	ctx := context.Background()
	compareSteps(t, conns[0], conns[1], []string{
		"exec SET @a = 1, @b = 'x', @c := 2.5",
		"SELECT @a + 1, @b, @c, @unset, @A, @`b`",
		"exec SET @a = @a + 10",
		"SELECT @a, name FROM uv WHERE id = @a",
		"exec SET @n = (SELECT count(*) FROM uv), @s = concat(@b, 'y')",
		"SELECT @n, @s",
		"SELECT @@foreign_key_checks, @@unique_checks, @@session.sql_notes",
		"exec SET @OLD_FOREIGN_KEY_CHECKS=@@FOREIGN_KEY_CHECKS, FOREIGN_KEY_CHECKS=0",
		"exec SET @OLD_UNIQUE_CHECKS=@@UNIQUE_CHECKS, UNIQUE_CHECKS=OFF",
		"SELECT @OLD_FOREIGN_KEY_CHECKS, @@FOREIGN_KEY_CHECKS, @OLD_UNIQUE_CHECKS, @@unique_checks",
		"exec SET FOREIGN_KEY_CHECKS=@OLD_FOREIGN_KEY_CHECKS, UNIQUE_CHECKS=@OLD_UNIQUE_CHECKS",
		"SELECT @@FOREIGN_KEY_CHECKS, @@unique_checks",
		"exec SET @x = 1, unique_checks = 'maybe'",
		"SELECT @x",
		"exec SET @y = 5, @z = @y, @a = @a + 1",
		"SELECT @y, @z, @a",
		"exec SET @k = 0, foreign_key_checks = @k",
	})
	seen := func(when string) {
		for i, db := range []*sql.DB{maria, duck} {
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := dumpRows(t, c, "SELECT @a, @b, @@foreign_key_checks"); got != `@a=NULL @b=NULL @@foreign_key_checks="1" | ` {
				t.Errorf("%s, another client (%d) sees %s", when, i, got)
			}
			c.Close()
		}
	}
	for _, step := range []string{"SET @a = 5, @b = 'x'", "SET @k = 0", "SET foreign_key_checks = @k"} {
		for _, c := range conns {
			if _, err := c.ExecContext(ctx, step); err != nil {
				t.Fatalf("%s: %v", step, err)
			}
		}
	}
	seen("while the first is connected")
	for _, c := range conns {
		c.Close()
	}
	for round := range 3 {
		seen(fmt.Sprintf("after it disconnected (round %d)", round))
	}
}

// TestMySQLLiteralComparisonsLikeMariaDB: two string literals compare without regard to case,
// as in MariaDB's connection collation (utf8mb4_general_ci): SELECT 'a' = 'A' is 1 (DuckDB
// compared bytes: 0); a _binary or BINARY one, or one with a _bin COLLATE, by bytes on both.
func TestMySQLLiteralComparisonsLikeMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	for _, expr := range []string{
		"'a' = 'A'", "'a'='A'", "'a' <> 'A'", "'a' != 'A'", "'abc' < 'ABD'", "'ABC' >= 'abc'", "'a' = 'b'", `"x" = 'X'`,
		"'O\\'Brien' = 'o\\'brien'", "'a' = 'A' and 'B' = 'b'", "_binary'a' = 'A'", "binary 'a' = 'A'", "'a' = 'A' collate utf8mb4_bin",
		"'a' = 'a'", "'é' = 'É'",
	} {
		q := "select " + expr + " as v"
		if m, d := dumpRows(t, maria, q), dumpRows(t, duck, q); m != d {
			t.Errorf("%s: MariaDB %s, DuckDB %s", expr, m, d)
		}
	}
}
