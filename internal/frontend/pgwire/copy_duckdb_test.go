package pgwire_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestPgbenchOnDuckDB: pgbench as a user of `make run` runs it, against the embedded DuckDB
// through the proxy: -i with its default steps (a DROP of four tables at once, TRUNCATE of four,
// 100,000 rows by COPY FROM STDIN, VACUUM, ALTER TABLE ADD PRIMARY KEY), then its TPC-B
// transactions from four clients, without --max-tries: the second of two transactions that
// update the same row (at scale 1 every one updates the one branch) waits for the first, as
// on PostgreSQL, where DuckDB alone would fail it (40001). After the run the books balance as
// pgbench's own check wants them to.
func TestPgbenchOnDuckDB(t *testing.T) {
	if testing.Short() {
		t.Skip("pgbench runs for seconds")
	}
	d := duckProxy(t, poolModes[0])
	args := []string{"-h", d.Host, "-p", d.PortString(), "-U", d.User}
	if out, err := exec.Command("pgbench", append(append([]string{"-i", "-s", "1"}, args...), d.Database)...).CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i on DuckDB: %v\n%s", err, out)
	}
	const clients, perClient = 4, 20
	out, err := exec.Command("pgbench", append(append([]string{"-n", "-t", strconv.Itoa(perClient), "-c", strconv.Itoa(clients)}, args...), d.Database)...).CombinedOutput()
	if err != nil {
		t.Fatalf("pgbench on DuckDB: %v\n%s", err, out)
	}
	if m := regexp.MustCompile(`actually processed: (\d+)`).FindSubmatch(out); m == nil || string(m[1]) != strconv.Itoa(clients*perClient) {
		t.Fatalf("not every transaction went through:\n%s", out)
	}
	c := connect(t, d.URL())
	ctx := context.Background()
	var accounts, history int
	var a, b, tl, h int64
	err = c.QueryRow(ctx, `select (select count(*) from pgbench_accounts), (select count(*) from pgbench_history),
		(select sum(abalance) from pgbench_accounts), (select sum(bbalance) from pgbench_branches),
		(select sum(tbalance) from pgbench_tellers), (select sum(delta) from pgbench_history)`).Scan(&accounts, &history, &a, &b, &tl, &h)
	if err != nil {
		t.Fatal(err)
	}
	if accounts != 100000 || history != clients*perClient || a != h || b != h || tl != h {
		t.Fatalf("accounts %d, history %d (want 100000, %d); balances: accounts %d, branches %d, tellers %d, history %d",
			accounts, history, clients*perClient, a, b, tl, h)
	}
	_, err = c.Exec(ctx, "insert into pgbench_accounts (aid, bid, abalance) values (1, 1, 0)")
	if err == nil || !strings.Contains(err.Error(), "onstraint") {
		t.Fatalf("a second account 1 was taken (%v): ADD PRIMARY KEY made no key", err)
	}
}

// TestCopyFromClientOnDuckDB: what goes wrong in a COPY FROM STDIN ends it as PostgreSQL does,
// with nothing of it stored, and the connection goes on: a value DuckDB cannot read, a row too
// short or too long, the client's CopyFail, an unknown table (refused before any data), and a
// format that cannot be read (binary). One that goes right stores every row, across many
// CopyData messages and line ends that fall between them.
func TestCopyFromClientOnDuckDB(t *testing.T) {
	for _, mode := range poolModes {
		t.Run(mode, func(t *testing.T) {
			c := connect(t, duckProxy(t, mode).URL()).PgConn()
			ctx := context.Background()
			exec := func(sql string) string {
				rs, err := c.Exec(ctx, sql).ReadAll()
				if err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
				if len(rs) == 0 || len(rs[len(rs)-1].Rows) == 0 {
					return ""
				}
				return string(rs[len(rs)-1].Rows[0][0])
			}
			exec("create table t_copy (a int, b text)")
			for _, bad := range []struct{ name, data, sql, code, message string }{
				{"bad value", "1\tone\nx\ttwo\n", "copy t_copy from stdin", "22P02", "COPY t_copy"},
				{"short row", "1\tone\n2\n", "copy t_copy from stdin", "22P04", `line 2: missing data for column "b"`},
				{"long row", "1\tone\tuno\n", "copy t_copy from stdin", "22P04", "line 1: extra data after last expected column"},
				{"unterminated CSV", "1,\"one\n", "copy t_copy from stdin csv", "22P04", "unterminated CSV quoted field"},
				{"unknown table", "1\n", "copy t_nosuch from stdin", "42P01", "t_nosuch"},
				{"binary without its signature", "this is text, not binary COPY data\n", "copy t_copy from stdin (format binary)", "22P04", "signature"},
			} {
				_, err := c.CopyFrom(ctx, strings.NewReader(bad.data), bad.sql)
				var pe *pgconn.PgError
				if !errors.As(err, &pe) || pe.Code != bad.code || !strings.Contains(pe.Message, bad.message) {
					t.Errorf("%s: %v, want %s containing %q", bad.name, err, bad.code, bad.message)
				}
				if n := exec("select count(*) from t_copy"); n != "0" {
					t.Fatalf("%s: %s rows stored, want none", bad.name, n)
				}
			}
			_, err := c.CopyFrom(ctx, &failingReader{data: "1\tone\n"}, "copy t_copy from stdin")
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "57014" || !strings.Contains(pe.Message, "the client gave up") {
				t.Errorf("CopyFail: %v, want 57014 with the client's message", err)
			}
			if n := exec("select count(*) from t_copy"); n != "0" {
				t.Fatalf("after CopyFail: %s rows stored", n)
			}
			var data strings.Builder
			for i := range 20000 {
				fmt.Fprintf(&data, "%d\tline %d with a tab\\there\n", i, i)
			}
			tag, err := c.CopyFrom(ctx, &chunkedReader{data: data.String(), chunk: 777}, "copy t_copy (a, b) from stdin")
			if err != nil || tag.RowsAffected() != 20000 {
				t.Fatalf("20,000 rows: %v, %v", tag, err)
			}
			if got := exec("select count(*) || ' ' || sum(a) || ' ' || max(b) from t_copy where b like '%with a tab\there'"); got != "20000 199990000 line 9999 with a tab\there" {
				t.Fatalf("stored: %q", got)
			}
		})
	}
}

// failingReader gives its data, then fails: pgconn sends CopyFail with the error.
type failingReader struct {
	data string
	done bool
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.done {
		return 0, errors.New("the client gave up")
	}
	r.done = true
	return copy(p, r.data), nil
}

// chunkedReader gives data chunk bytes at a time, so rows straddle CopyData messages.
type chunkedReader struct {
	data  string
	chunk int
}

func (r *chunkedReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.chunk)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestPgxCopyFromOnDuckDB: pgx's CopyFrom writes the binary format, each value in the binary
// form of the type our row description gave. The same rows (every type pgbench and ORMs load,
// NULL in each, an empty string) copied through the proxy into DuckDB and into PostgreSQL read
// back the same, and a binary COPY TO STDOUT of them is byte for byte PostgreSQL's.
func TestPgxCopyFromOnDuckDB(t *testing.T) {
	ctx := context.Background()
	rows := [][]any{
		{int32(1), "héllo\ttab\\", []byte{0, 1, 255}, time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC), time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC), -1.5, true, "12.34", ""},
		{int32(2), nil, nil, nil, nil, nil, nil, nil, nil},
	}
	for i := 3; i < 1000; i++ {
		rows = append(rows, []any{int32(i), fmt.Sprintf("row %d\n", i), []byte(fmt.Sprint(i)), time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i), time.Unix(int64(i)*3600, 0).UTC(), float64(i) / 7, i%2 == 0, fmt.Sprintf("%d.%02d", i, i%100), "x"})
	}
	cols := []string{"i", "s", "b", "d", "ts", "f", "ok", "n", "e"}
	read := func(url string) (string, []byte) {
		c := connect(t, url)
		if _, err := c.Exec(ctx, "create table t_pgx_copy (i int, s text, b bytea, d date, ts timestamptz, f double precision, ok boolean, n numeric(10,2), e text)"); err != nil {
			t.Fatal(err)
		}
		n, err := c.CopyFrom(ctx, pgx.Identifier{"t_pgx_copy"}, cols, pgx.CopyFromRows(rows))
		if err != nil || n != int64(len(rows)) {
			t.Fatalf("CopyFrom: %d rows, %v", n, err)
		}
		rs, err := c.Query(ctx, "select i, s, b, d, ts, f, ok, n::text, e, e is null from t_pgx_copy order by i")
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		for rs.Next() {
			v, err := rs.Values()
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&text, "%v;", v)
		}
		if err := rs.Err(); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if _, err := c.PgConn().CopyTo(ctx, &out, "copy (select i, s, b, d, f, ok, e from t_pgx_copy order by i) to stdout (format binary)"); err != nil {
			t.Fatal(err)
		}
		return text.String(), out.Bytes()
	}
	wantText, wantBinary := read(pgProxy(t, poolModes[0]).URL())
	for _, mode := range poolModes {
		text, bin := read(duckProxy(t, mode).URL())
		if text != wantText {
			t.Errorf("%s: DuckDB holds\n%.600s\nPostgreSQL\n%.600s", mode, text, wantText)
		}
		if !bytes.Equal(bin, wantBinary) {
			t.Errorf("%s: binary COPY TO STDOUT differs from PostgreSQL's (%d against %d bytes)", mode, len(bin), len(wantBinary))
		}
	}
}
