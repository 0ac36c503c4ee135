package pgwire_test

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/testlong"
)

// deadlockCase is a run of clients, each a connection, whose waits make a cycle (or not): it
// answers what each statement answered, the waits' answers with their DETAIL and HINT.
type deadlockCase struct {
	name string
	run  func(t *testing.T, url string) []string
}

// TestDeadlockAsPostgreSQL: clients that wait for each other (two advisory locks taken in
// opposite orders, three in a ring, an advisory lock against a row's writer) get
// PostgreSQL's answers on the embedded DuckDB: deadlock_timeout after the first wait began,
// the first waiter is answered 40P01 "deadlock detected" with DETAIL naming each process, and
// its locks go to the others at once; a shorter deadlock_timeout (SET LOCAL, -c
// deadlock_timeout=) makes the later waiter the one answered; a long wait with no cycle is no
// deadlock. Compared with real PostgreSQL (pids and lock numbers written as names).
func TestDeadlockAsPostgreSQL(t *testing.T) {
	testlong.Skip(t, "TestDeadlockSmokeAsPostgreSQL")
	runDeadlockCases(t, []deadlockCase{
		{"two advisory locks", func(t *testing.T, url string) []string {
			return advisoryRing(t, []string{url, url}, nil)
		}},
		{"three advisory locks in a ring", func(t *testing.T, url string) []string {
			return advisoryRing(t, []string{url, url, url}, nil)
		}},
		{"the later waiter's shorter deadlock_timeout", func(t *testing.T, url string) []string {
			return advisoryRing(t, []string{url, url}, []string{"", "set local deadlock_timeout = '100ms'"})
		}},
		{"deadlock_timeout as a startup option", func(t *testing.T, url string) []string {
			return advisoryRing(t, []string{url, url + "&options=-c%20deadlock_timeout%3D100"}, nil)
		}},
		{"an advisory lock against a row's writer", func(t *testing.T, url string) []string {
			a, b := connect(t, url), connect(t, url)
			names := pidNames(a, b)
			out := []string{answerOf(execSimple(a, "begin")), answerOf(execSimple(a, "update acct set n = n + 1 where id = 1")),
				answerOf(execSimple(b, "begin")), answerOf(execSimple(b, "select pg_advisory_xact_lock(7)"))}
			doneA := blocked(func() string { return waitAnswer(a, "select pg_advisory_xact_lock(7)", names) })
			time.Sleep(settle)
			doneB := blocked(func() string { return waitAnswer(b, "update acct set n = n * 10 where id = 1", names) })
			out = append(out, <-doneA, <-doneB, answerOf(execSimple(b, "commit")), answerOf(execSimple(a, "commit")))
			return append(out, rowsText(a, "select n from acct where id = 1"))
		}},
		{"a long wait is no deadlock", func(t *testing.T, url string) []string {
			a, b := connect(t, url), connect(t, url)
			names := pidNames(a, b)
			out := []string{answerOf(execSimple(a, "begin")), answerOf(execSimple(b, "begin")),
				answerOf(execSimple(b, "select pg_advisory_xact_lock(3)")), answerOf(execSimple(b, "update acct set n = 5 where id = 2"))}
			doneA := blocked(func() string { return waitAnswer(a, "select pg_advisory_xact_lock(3)", names) })
			time.Sleep(1300 * time.Millisecond) // past deadlock_timeout: the check finds no cycle
			out = append(out, answerOf(execSimple(b, "commit")), <-doneA, answerOf(execSimple(a, "update acct set n = n + 1 where id = 2")),
				answerOf(execSimple(a, "commit")))
			return append(out, rowsText(a, "select n from acct where id = 2"))
		}},
	})
}

// TestDeadlockSmokeAsPostgreSQL: two advisory locks taken in opposite orders, the later
// waiter with a short deadlock_timeout (SET LOCAL): it is answered 40P01 as PostgreSQL
// answers it, and the other's wait is served before its ROLLBACK.
func TestDeadlockSmokeAsPostgreSQL(t *testing.T) {
	runDeadlockCases(t, []deadlockCase{{"two advisory locks, short deadlock_timeout", func(t *testing.T, url string) []string {
		return advisoryRing(t, []string{url, url}, []string{"", "set local deadlock_timeout = '100ms'"})
	}}})
}

func runDeadlockCases(t *testing.T, cases []deadlockCase) {
	pgURL := pgtest.NewDatabase(t)
	duckURL := memoryDuckProxy(t, "deadlock").URL()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			answers := map[string][]string{}
			for _, side := range []struct{ name, url string }{{"PostgreSQL", pgURL}, {"QueryFlux on DuckDB", duckURL}} {
				setup := connect(t, side.url)
				for _, sql := range []string{"drop table if exists acct", "create table acct (id int primary key, n int)",
					"insert into acct values (1, 1), (2, 2)"} {
					if err := execSimple(setup, sql); err != nil {
						t.Fatalf("%s: %s: %v", side.name, sql, err)
					}
				}
				answers[side.name] = c.run(t, side.url)
			}
			want, got := answers["PostgreSQL"], answers["QueryFlux on DuckDB"]
			if strings.Join(want, "\n") != strings.Join(got, "\n") {
				t.Errorf("answers differ:\n  PostgreSQL:          %q\n  QueryFlux on DuckDB: %q", want, got)
			}
		})
	}
}

// advisoryRing: client i (of len(urls)) takes advisory lock i in a transaction (after its
// set, if any), then each in turn, settle apart, waits for lock i+1, the last for lock 0.
func advisoryRing(t *testing.T, urls, sets []string) []string {
	conns := make([]*pgx.Conn, len(urls))
	for i, u := range urls {
		conns[i] = connect(t, u)
	}
	names := pidNames(conns...)
	var out []string
	for i, c := range conns {
		out = append(out, answerOf(execSimple(c, "begin")))
		if i < len(sets) && sets[i] != "" {
			out = append(out, answerOf(execSimple(c, sets[i])))
		}
		out = append(out, answerOf(execSimple(c, "select pg_advisory_xact_lock("+strconv.Itoa(i+1)+")")))
	}
	done := make([]<-chan string, len(conns))
	for i, c := range conns {
		if i > 0 {
			time.Sleep(settle)
		}
		stmt := "select pg_advisory_xact_lock(" + strconv.Itoa((i+1)%len(conns)+1) + ")"
		done[i] = blocked(func() string { return waitAnswer(c, stmt, names) })
	}
	// The first to wait is answered first (served or deadlock); then, around the ring
	// backwards, each is served once the next has committed.
	out = append(out, <-done[0])
	for i := len(conns) - 1; i > 0; i-- {
		out = append(out, <-done[i], answerOf(execSimple(conns[i], "commit")))
	}
	return append(out, answerOf(execSimple(conns[0], "commit")))
}

// pidNames names each connection's backend pid A, B, C, ... for answers compared across
// servers.
func pidNames(conns ...*pgx.Conn) map[string]string {
	names := map[string]string{}
	for i, c := range conns {
		names[strconv.Itoa(int(c.PgConn().PID()))] = string(rune('A' + i))
	}
	return names
}

var (
	processRE     = regexp.MustCompile(`[Pp]rocess (\d+)`)
	transactionRE = regexp.MustCompile(`transaction \d+`)
	advisoryTagRE = regexp.MustCompile(`advisory lock \[\d+,`)
)

// waitAnswer runs a statement that may wait and answers what it answered: "ok", or its
// SQLSTATE, message, DETAIL and HINT with each pid written as its name (a transaction's
// number and the database's oid as words). A failed transaction is left for the caller's
// COMMIT: PostgreSQL lets a deadlocked transaction's locks go at the error.
func waitAnswer(c *pgx.Conn, sql string, names map[string]string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return answerOf(err)
	}
	detail := processRE.ReplaceAllStringFunc(pe.Detail, func(m string) string {
		pid := processRE.FindStringSubmatch(m)[1]
		return m[:len(m)-len(pid)] + names[pid]
	})
	detail = advisoryTagRE.ReplaceAllString(transactionRE.ReplaceAllString(detail, "transaction N"), "advisory lock [db,")
	return pe.Code + " " + pe.Message + " DETAIL " + detail + " HINT " + pe.Hint
}
