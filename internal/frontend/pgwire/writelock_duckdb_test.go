package pgwire_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// answerOf is a statement's answer as the tests compare it: its SQLSTATE and message, or "ok".
func answerOf(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code + " " + pe.Message
	}
	if err != nil {
		return "error " + err.Error()
	}
	return "ok"
}

// blocked runs f on its own goroutine and reports its answer on the channel; the caller
// gives it a moment to reach its wait, so that a statement which does not wait (DuckDB's
// immediate conflict) shows before the holder lets go.
func blocked(f func() string) <-chan string {
	done := make(chan string, 1)
	go func() { done <- f() }()
	return done
}

// settle is how long a second writer is given to reach the server and start waiting: not a
// measured time, only a chance for a writer that does not wait to fail before the first ends.
const settle = 300 * time.Millisecond

// TestConcurrentWritersAsPostgreSQL: two clients writing one row on the embedded DuckDB get
// PostgreSQL's answers: the second waits for the first to end and then writes on what it
// committed (outside a transaction, in one, after reads in one), lock_timeout and
// statement_timeout end a wait with 55P03 and 57014, the client's cancel with 57014, FOR
// UPDATE waits and FOR UPDATE NOWAIT answers 55P03 at once, and a REPEATABLE READ transaction
// that read before the other's commit fails with PostgreSQL's 40001. Each case runs on real
// PostgreSQL and on the proxy, and the answers and the rows after are compared.
func TestConcurrentWritersAsPostgreSQL(t *testing.T) {
	pgURL := pgtest.NewDatabase(t)
	duckURL := memoryDuckProxy(t, "writers").URL()
	type steps func(t *testing.T, url string) []string
	cases := []struct {
		name string
		run  steps
	}{
		{"outside a transaction", func(t *testing.T, url string) []string {
			a, b := connect(t, url), connect(t, url)
			out := []string{answerOf(execSimple(a, "begin")), answerOf(execSimple(a, "update acct set n = n + 1 where id = 1"))}
			done := blocked(func() string { return answerOf(execSimple(b, "update acct set n = n * 10 where id = 1")) })
			time.Sleep(settle)
			out = append(out, answerOf(execSimple(a, "update acct set n = n + 2 where id = 1")), answerOf(execSimple(a, "commit")), <-done)
			return append(out, rowsText(a, "select n from acct where id = 1"))
		}},
		{"in a transaction", func(t *testing.T, url string) []string {
			a, b := connect(t, url), connect(t, url)
			out := []string{answerOf(execSimple(a, "begin")), answerOf(execSimple(a, "update acct set n = n + 1 where id = 1")), answerOf(execSimple(b, "begin"))}
			done := blocked(func() string { return answerOf(execSimple(b, "update acct set n = n * 10 where id = 1")) })
			time.Sleep(settle)
			out = append(out, answerOf(execSimple(a, "commit")), <-done, rowsText(b, "select n from acct where id = 1"),
				answerOf(execSimple(b, "update acct set n = n + 5 where id = 1")), answerOf(execSimple(b, "commit")))
			return append(out, rowsText(a, "select n from acct where id = 1"))
		}},
		{"reads first, read committed", func(t *testing.T, url string) []string {
			a, b := connect(t, url), connect(t, url)
			out := []string{answerOf(execSimple(a, "begin")), answerOf(execSimple(a, "update acct set n = n + 1 where id = 1")),
				answerOf(execSimple(b, "begin")), rowsText(b, "select n from acct where id = 1"), rowsText(b, "select count(*) from acct")}
			done := blocked(func() string { return answerOf(execSimple(b, "update acct set n = n * 10 where id = 1")) })
			time.Sleep(settle)
			out = append(out, answerOf(execSimple(a, "commit")), <-done, rowsText(b, "select n from acct where id = 1"), answerOf(execSimple(b, "commit")))
			return append(out, rowsText(a, "select n from acct where id = 1"))
		}},
		{"reads first, repeatable read", func(t *testing.T, url string) []string {
			a, b := connect(t, url), connect(t, url)
			out := []string{answerOf(execSimple(a, "begin")), answerOf(execSimple(a, "update acct set n = n + 1 where id = 1")),
				answerOf(execSimple(b, "begin isolation level repeatable read")), rowsText(b, "select n from acct where id = 1")}
			done := blocked(func() string { return answerOf(execSimple(b, "update acct set n = n * 10 where id = 1")) })
			time.Sleep(settle)
			out = append(out, answerOf(execSimple(a, "commit")), <-done, answerOf(execSimple(b, "rollback")))
			return append(out, rowsText(a, "select n from acct where id = 1"))
		}},
		{"for update", func(t *testing.T, url string) []string {
			a, b := connect(t, url), connect(t, url)
			out := []string{answerOf(execSimple(a, "begin")), rowsText(a, "select n from acct where id = 1 for update"), answerOf(execSimple(b, "begin"))}
			done := blocked(func() string { return rowsText(b, "select n from acct where id = 1 for update") })
			time.Sleep(settle)
			out = append(out, answerOf(execSimple(a, "update acct set n = 7 where id = 1")), answerOf(execSimple(a, "commit")), <-done,
				answerOf(execSimple(b, "update acct set n = n + 1 where id = 1")), answerOf(execSimple(b, "commit")))
			return append(out, rowsText(a, "select n from acct where id = 1"))
		}},
		{"two transactions interleaved by one client", func(t *testing.T, url string) []string {
			// PostgreSQL lets writers of different rows, and inserts, go on side by side: a client
			// that interleaves two transactions on one thread must not wait on itself forever.
			a, b := connect(t, url), connect(t, url)
			return []string{answerOf(execSimple(a, "begin")), answerOf(execSimple(a, "update acct set n = 10 where id = 1")),
				answerOf(execSimple(b, "begin")), answerOf(execSimple(b, "insert into acct values (3, 3)")),
				answerOf(execSimple(b, "update acct set n = 20 where id = 2")), answerOf(execSimple(a, "insert into acct values (4, 4)")),
				rowsText(a, "select count(*) from acct"), answerOf(execSimple(a, "commit")), answerOf(execSimple(b, "commit")),
				rowsText(a, "select id, n from acct order by id")}
		}},
		{"a plain insert waits for no one", func(t *testing.T, url string) []string {
			// PostgreSQL makes an INSERT wait only on a unique key another transaction wrote: a
			// lock_timeout shorter than any wait shows an insert that waited for a writer.
			a, b := connect(t, url), connect(t, url)
			opt := connect(t, url+"&options=-c%20lock_timeout%3D100")
			return []string{answerOf(execSimple(a, "begin")), answerOf(execSimple(a, "update acct set n = 11 where id = 1")),
				answerOf(execSimple(opt, "insert into acct values (5, 5)")),
				answerOf(execSimple(b, "begin")), answerOf(execSimple(b, "set local lock_timeout = '100ms'")),
				answerOf(execSimple(b, "insert into acct values (6, 6), (7, 7)")), answerOf(execSimple(b, "insert into acct select id + 10, n from acct where id = 2")),
				answerOf(execSimple(b, "commit")), answerOf(execSimple(a, "commit")),
				rowsText(a, "select id, n from acct order by id")}
		}},
		{"nowait", func(t *testing.T, url string) []string {
			a, b := connect(t, url), connect(t, url)
			return []string{answerOf(execSimple(a, "begin")), answerOf(execSimple(a, "update acct set n = 3 where id = 1")),
				answerOf(execSimple(b, "begin")), rowsText(b, "select n from acct where id = 1 for update nowait"), answerOf(execSimple(b, "rollback")),
				answerOf(execSimple(a, "rollback")), rowsText(b, "select n from acct where id = 1 for update nowait")}
		}},
		{"lock_timeout and statement_timeout", func(t *testing.T, url string) []string {
			a, b := connect(t, url), connect(t, url)
			opt := connect(t, url+"&options=-c%20lock_timeout%3D100")
			out := []string{answerOf(execSimple(a, "begin")), answerOf(execSimple(a, "update acct set n = 4 where id = 1")),
				answerOf(execSimple(b, "begin")), answerOf(execSimple(b, "set local lock_timeout = '100ms'")),
				answerOf(execSimple(b, "update acct set n = 5 where id = 1")), answerOf(execSimple(b, "rollback")),
				answerOf(execSimple(b, "begin")), answerOf(execSimple(b, "set local statement_timeout = 100")),
				answerOf(execSimple(b, "delete from acct where id = 1")), answerOf(execSimple(b, "rollback")),
				answerOf(execSimple(opt, "update acct set n = 6 where id = 1")),
				answerOf(execSimple(b, "begin")), answerOf(execSimple(b, "set local lock_timeout = 'soon'")), answerOf(execSimple(b, "rollback")),
				answerOf(execSimple(a, "commit"))}
			return append(out, rowsText(a, "select n from acct where id = 1"))
		}},
		{"cancel", func(t *testing.T, url string) []string {
			a, b := connect(t, url), connect(t, url)
			out := []string{answerOf(execSimple(a, "begin")), answerOf(execSimple(a, "update acct set n = 8 where id = 1"))}
			done := blocked(func() string { return answerOf(execSimple(b, "update acct set n = 9 where id = 1")) })
			time.Sleep(settle)
			if err := b.PgConn().CancelRequest(context.Background()); err != nil {
				t.Fatal(err)
			}
			out = append(out, <-done, answerOf(execSimple(a, "commit")))
			return append(out, rowsText(a, "select n from acct where id = 1"), rowsText(b, "select 1"))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			answers := map[string][]string{}
			for name, url := range map[string]string{"PostgreSQL": pgURL, "QueryFlux on DuckDB": duckURL} {
				setup := connect(t, url)
				for _, sql := range []string{"drop table if exists acct", "create table acct (id int primary key, n int)",
					"insert into acct values (1, 1), (2, 2)"} {
					if err := execSimple(setup, sql); err != nil {
						t.Fatalf("%s: %s: %v", name, sql, err)
					}
				}
				answers[name] = c.run(t, url)
			}
			want, got := answers["PostgreSQL"], answers["QueryFlux on DuckDB"]
			if strings.Join(want, "\n") != strings.Join(got, "\n") {
				t.Errorf("answers differ:\n  PostgreSQL:          %q\n  QueryFlux on DuckDB: %q", want, got)
			}
		})
	}
}

// execSimple runs sql in the simple protocol, as psql and pgbench do.
func execSimple(c *pgx.Conn, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	return err
}
