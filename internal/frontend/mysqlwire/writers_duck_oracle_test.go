package mysqlwire

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/frontend/pgwire"
)

// duckForMySQLAndPostgres serves one in-memory DuckDB through a core on both wires: a MySQL
// client pool and a PostgreSQL connection string.
func duckForMySQLAndPostgres(t *testing.T) (*sql.DB, string) {
	t.Helper()
	eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	fx := serveCore(t, "duck", eng, coreSetup{})
	srv := pgwire.NewServer(fx.core, pgwire.Options{TrustUsers: []string{"*"}})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return openDB(t, fx.addr, testUser, "", "duck", ""), "postgres://" + testUser + "@" + l.Addr().String() + "/duck?sslmode=disable"
}

// writer is one client of a writers' scenario: a MySQL connection or a PostgreSQL one.
type writer interface {
	exec(ctx context.Context, stmt string) string
}

type myWriter struct{ c *sql.Conn }

// exec answers "ok n" (rows affected) or the error as a kind both wires share.
func (w myWriter) exec(ctx context.Context, stmt string) string {
	if strings.HasPrefix(strings.ToLower(stmt), "select") {
		var v sql.NullString
		if err := w.c.QueryRowContext(ctx, stmt).Scan(&v); err != nil {
			return errKind(err)
		}
		return "row " + v.String
	}
	r, err := w.c.ExecContext(ctx, stmt)
	if err != nil {
		return errKind(err)
	}
	n, _ := r.RowsAffected()
	return fmt.Sprintf("ok %d", n)
}

type pgWriter struct{ c *pgx.Conn }

func (w pgWriter) exec(ctx context.Context, stmt string) string {
	if strings.HasPrefix(strings.ToLower(stmt), "select") {
		var v any
		if err := w.c.QueryRow(ctx, stmt).Scan(&v); err != nil {
			return errKind(err)
		}
		if v == nil {
			return "row "
		}
		return fmt.Sprint("row ", v)
	}
	tag, err := w.c.Exec(ctx, stmt)
	if err != nil {
		return errKind(err)
	}
	return fmt.Sprintf("ok %d", tag.RowsAffected())
}

// errKind names an error as both wires have it: MariaDB's lock wait timeout (1205) is
// PostgreSQL's 55P03, a deadlock (1213) its 40001 / 40P01; the rest by number or SQLSTATE and
// message.
func errKind(err error) string {
	var pe *pgconn.PgError
	switch n := errNumber(err); {
	case n == 1205:
		return "lock wait timeout: " + err.Error()
	case n == 1213:
		return "deadlock: " + err.Error()
	case errors.As(err, &pe) && pe.Code == "55P03":
		return "lock wait timeout"
	case errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01"):
		return "deadlock"
	}
	return "error " + err.Error()
}

// writersStep is one statement of a scenario: by client a or b; bg runs it in the background
// (its answer read at a later "wait" step of the same client).
type writersStep struct {
	who  string
	stmt string
	bg   bool
}

// runWriters runs steps with the two clients: the answers, one per step (a background step's
// "started", its "wait" step the statement's answer and whether it was still waiting when the
// step after it began).
func runWriters(ctx context.Context, clients map[string]writer, steps []writersStep) []string {
	var out []string
	pending := map[string]chan string{}
	for i, s := range steps {
		c := clients[s.who]
		switch {
		case s.stmt == "wait":
			out = append(out, s.who+" wait: "+<-pending[s.who])
		case s.bg:
			ch := make(chan string, 1)
			pending[s.who] = ch
			go func() { ch <- c.exec(ctx, s.stmt) }()
			// The next step only when the statement waits (or is done): it has reached the
			// server and asked for its lock by then, which 300 ms of nothing answered shows.
			time.Sleep(300 * time.Millisecond)
			select {
			case a := <-ch:
				ch <- a
				out = append(out, fmt.Sprintf("%d %s: %s: answered at once", i, s.who, s.stmt))
			default:
				out = append(out, fmt.Sprintf("%d %s: %s: waits", i, s.who, s.stmt))
			}
		default:
			out = append(out, fmt.Sprintf("%d %s: %s: %s", i, s.who, s.stmt, c.exec(ctx, s.stmt)))
		}
	}
	return out
}

// TestWritersWaitOnDuckDBLikeMariaDB: two clients writing one row of the embedded DuckDB, MySQL
// with MySQL or with PostgreSQL, get what two MariaDB clients get: the second waits for the
// first's transaction and then writes the row as committed (it failed at once with DuckDB's
// conflict, 1213 or 40001); innodb_lock_wait_timeout ends a wait with 1205, the statement alone
// refused; a writer of another row goes on; a transaction that read, or wrote other rows,
// before another client committed the row it then updates runs on (it met DuckDB's conflict).
// Each scenario runs on MariaDB with two MySQL clients, and through the proxy with the clients
// named; the answers of each step and the rows after are compared.
func TestWritersWaitOnDuckDBLikeMariaDB(t *testing.T) {
	maria, _ := newMariaDB(t)
	duck, pgURL := duckForMySQLAndPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	setup := []string{"create table w (id int primary key, v int)", "insert into w values (1, 0), (2, 0), (3, 0), (4, 0)"}
	type scenario struct {
		name  string
		kinds string // a's and b's wire through the proxy: m MySQL, p PostgreSQL
		steps []writersStep
	}
	bumps := func(a, b string) []writersStep {
		return []writersStep{
			{"a", "begin", false}, {"a", "update w set v = v + 1 where id = 1", false},
			{"b", "begin", false}, {"b", "update w set v = v * 10 where id = 1", true},
			{"a", "update w set v = v + 2 where id = 1", false}, {"a", "commit", false},
			{"b", "wait", false}, {"b", "select v from w where id = 1", false}, {"b", "commit", false},
			{a, "select v from w where id = 1", false}, {b, "select v from w where id = 1", false},
		}
	}
	scenarios := []scenario{
		{"mysql waits for mysql", "mm", bumps("a", "b")},
		{"postgres waits for mysql", "mp", bumps("a", "b")},
		{"mysql waits for postgres", "pm", bumps("a", "b")},
		{"autocommit mysql waits for postgres", "pm", []writersStep{
			{"a", "begin", false}, {"a", "update w set v = v + 1 where id = 2", false},
			{"b", "update w set v = v * 10 where id = 2", true},
			{"a", "commit", false}, {"b", "wait", false}, {"b", "select v from w where id = 2", false},
		}},
		{"select for update holds", "mp", []writersStep{
			{"a", "begin", false}, {"a", "select v from w where id = 3 for update", false},
			{"b", "begin", false}, {"b", "update w set v = v + 1 where id = 3", true},
			{"a", "update w set v = 100 where id = 3", false}, {"a", "commit", false},
			{"b", "wait", false}, {"b", "commit", false}, {"a", "select v from w where id = 3", false},
		}},
		{"lock wait timeout", "mm", []writersStep{
			{"a", "begin", false}, {"a", "update w set v = v + 1 where id = 4", false},
			{"b", "set innodb_lock_wait_timeout = 1", false}, {"b", "select @@innodb_lock_wait_timeout", false},
			{"b", "begin", false}, {"b", "insert into w values (10, 0)", false},
			{"b", "update w set v = 5 where id = 4", false},  // 1205: the statement alone
			{"b", "update w set v = 7 where id = 10", false}, // another row: goes on
			{"b", "select v from w where id = 4", false},
			{"b", "commit", false}, {"a", "commit", false},
			{"a", "select v from w where id = 10", false}, {"a", "select v from w where id = 4", false},
		}},
		{"a read before another's commit", "mp", []writersStep{
			{"a", "begin", false}, {"a", "select v from w where id = 2", false},
			{"b", "update w set v = v + 1 where id = 2", false},
			{"a", "update w set v = v + 10 where id = 2", false}, {"a", "commit", false},
			{"a", "select v from w where id = 2", false},
		}},
		{"a write before another's commit", "mp", []writersStep{
			{"a", "begin", false}, {"a", "insert into w values (20, 1)", false},
			{"b", "update w set v = v + 1 where id = 3", false},
			{"a", "update w set v = v + 10 where id = 3", false}, {"a", "commit", false},
			{"a", "select v from w where id = 3", false}, {"a", "select v from w where id = 20", false},
		}},
	}
	for i, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			var answers [2][]string
			for side := range 2 {
				clients := map[string]writer{}
				for j, who := range []string{"a", "b"} {
					if side == 1 && sc.kinds[j] == 'p' {
						c, err := pgx.Connect(ctx, pgURL)
						if err != nil {
							t.Fatal(err)
						}
						t.Cleanup(func() { c.Close(context.Background()) })
						clients[who] = pgWriter{c}
						continue
					}
					db := maria
					if side == 1 {
						db = duck
					}
					c, err := db.Conn(ctx)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { c.Close() })
					clients[who] = myWriter{c}
				}
				table := fmt.Sprintf("w%d", i)
				var steps []writersStep
				for _, s := range setup {
					steps = append(steps, writersStep{"a", strings.Replace(s, " w ", " "+table+" ", 1), false})
				}
				for _, s := range sc.steps {
					s.stmt = strings.Replace(s.stmt, " w ", " "+table+" ", 1)
					steps = append(steps, s)
				}
				answers[side] = runWriters(ctx, clients, steps)
			}
			if m, d := strings.Join(answers[0], "\n"), strings.Join(answers[1], "\n"); m != d {
				t.Errorf("MariaDB:\n%s\nthrough the proxy (%s):\n%s", m, sc.kinds, d)
			}
		})
	}
}
