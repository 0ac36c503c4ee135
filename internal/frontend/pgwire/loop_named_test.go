//go:build linux

package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
	"github.com/queryflux/queryflux/internal/testlong"
)

// pgx's default mode (cache_statement) prepares each statement once under a name of its own,
// then binds and executes it by name: those statements run on the event loop (counted in
// LoopExecutes, never handed back to the goroutine) and answer what PostgreSQL answers, in
// both pool modes, in and out of transactions, errors included.
func TestEventLoopRelaysPgxNamedStatements(t *testing.T) {
	for _, mode := range poolModes {
		t.Run(mode, func(t *testing.T) {
			srv, proxyURL, direct, _ := loopServerDirect(t, mode, 4, pgwireTrustAll(), nil)
			ctx := context.Background()
			run := func(c *pgx.Conn) []string {
				var out []string
				query := func(sql string, args ...any) {
					rows, err := collectErr(c, sql, args)
					out = append(out, fmt.Sprintf("%v %v", rows, err))
				}
				for i := range 20 {
					query("select $1::int4 * 2 d, $2::text || '!' s, g from generate_series(1, 3) g", i, fmt.Sprint("x", i))
					query("select 100 / $1::int4 q", i%4) // a division by zero now and then
					query("select $1::int8 + 1", int64(i))
				}
				tx, err := c.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for i := range 5 {
					query("select $1::int4 + count(*)::int4 from pg_class where relname = 'no such'", i)
				}
				if err := tx.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				return out
			}
			want := run(connect(t, direct))
			before, paused := srv.LoopExecutes(), srv.LoopPauses()
			got := run(connect(t, proxyURL))
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("through the loop:\n%s\ndirect:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			// The first statement is the goroutine's: the loop takes a client once it has used
			// an engine connection.
			if n := srv.LoopExecutes() - before; n < 64 {
				t.Fatalf("the loop relayed %d Executes of 65 named statements, want at least 64", n)
			}
			if n := srv.LoopPauses() - paused; n != 0 {
				t.Fatalf("the loop handed the client back %d times, want none", n)
			}
		})
	}
}

// collectErr runs sql in pgx's cache_statement mode and returns its rows as text, or the
// SQLSTATE it failed with.
func collectErr(c *pgx.Conn, sql string, args []any) ([][]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rows, err := c.Query(ctx, sql, append([]any{pgx.QueryExecModeCacheStatement}, args...)...)
	if err != nil {
		return nil, sqlState(err)
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		row := make([]string, len(vals))
		for i, v := range vals {
			row[i] = normalize(v)
		}
		out = append(out, row)
	}
	return out, sqlState(rows.Err())
}

// sqlState is err's SQLSTATE (an error's text differs between the proxy and PostgreSQL only
// where the proxy says more).
func sqlState(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return errors.New("SQLSTATE " + pe.Code)
	}
	return err
}

// The JDBC driver's server-side prepared statements (past its prepareThreshold) run on the
// event loop and answer what PostgreSQL answers, in both pool modes.
func TestEventLoopRelaysJDBCNamedStatements(t *testing.T) {
	classpath := pgclienttest.JDBCClasspath(t, "NamedStatements.java")
	jdbc := func(pgURL string) string {
		u, _ := url.Parse(pgURL)
		return fmt.Sprintf("jdbc:postgresql://%s%s?user=%s&sslmode=disable", u.Host, u.Path, u.User.Username())
	}
	for i, mode := range poolModes {
		if !testlong.Sample(i+1, 2) { // make test: session mode here, transaction mode in the batch test
			continue
		}
		t.Run(mode, func(t *testing.T) {
			srv, proxyURL, direct, _ := loopServerDirect(t, mode, 4, pgwireTrustAll(), nil)
			run := func(url string) string {
				out, err := pgclienttest.Command(t, 2*time.Minute, nil, "java", "-cp", classpath, "NamedStatements", jdbc(url))
				if err != nil {
					t.Fatalf("java NamedStatements: %v\n%s", err, out)
				}
				return out
			}
			want := run(direct)
			if !strings.Contains(want, "case in transaction 9: 9;") || !strings.Contains(want, "case divide 4: error 22012") {
				t.Fatalf("directly on PostgreSQL:\n%s", want)
			}
			before := srv.LoopExecutes()
			if got := run(proxyURL); got != want {
				t.Fatalf("through the loop:\n%s\ndirect:\n%s", got, want)
			}
			// 50 statements, of which all but the first few run by name; before named
			// statements were relayed on the loop, the loop gave such a client up after four.
			if n := srv.LoopExecutes() - before; n < 45 {
				t.Fatalf("the loop relayed %d Executes of 50 JDBC statements, want at least 45", n)
			}
		})
	}
}

// A JDBC batch of 3000 inserts (PreparedStatement.executeBatch: the inserts' Binds and Executes
// written before their answers are read) runs on the event loop in both pool modes: the
// driver gets 3000 counts of one, every row lands, and the loop relays every Execute.
func TestEventLoopRelaysAJDBCBatch(t *testing.T) {
	const rows = 3000
	classpath := pgclienttest.JDBCClasspath(t, "BatchInsert.java")
	for i, mode := range poolModes {
		if !testlong.Sample(i, 2) {
			continue
		}
		t.Run(mode, func(t *testing.T) {
			srv, proxyURL, direct, _ := loopServerDirect(t, mode, 4, pgwireTrustAll(), nil)
			run := func(pgURL, table string) string {
				u, _ := url.Parse(pgURL)
				jdbc := fmt.Sprintf("jdbc:postgresql://%s%s?user=%s&sslmode=disable", u.Host, u.Path, u.User.Username())
				out, err := pgclienttest.Command(t, 2*time.Minute, nil, "java", "-cp", classpath, "BatchInsert", jdbc, table, fmt.Sprint(rows))
				if err != nil {
					t.Fatalf("java BatchInsert: %v\n%s", err, out)
				}
				return pgclienttest.Results(out)["batch"]
			}
			want := fmt.Sprintf("%d counts, %d of one; %d rows, ids summing to %d, %d values", rows, rows, rows, rows*(rows-1)/2, rows)
			if got := run(direct, "t_batch_direct"); got != want {
				t.Fatalf("directly on PostgreSQL: %q, want %q", got, want)
			}
			before := srv.LoopExecutes()
			if got := run(proxyURL, "t_batch_proxy"); got != want {
				t.Fatalf("through the loop: %q, want %q", got, want)
			}
			if n := srv.LoopExecutes() - before; n < rows {
				t.Fatalf("the loop relayed %d Executes of a batch of %d inserts", n, rows)
			}
		})
	}
}
