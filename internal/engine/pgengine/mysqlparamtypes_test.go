package pgengine

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestUntypedParamIsFoundWithoutWords: the parameter a MySQL client's statement failed on
// (PostgreSQL could not type it, or pgx could not encode the client's value as the type
// PostgreSQL gave it) is found by asking PostgreSQL, on the pool and on a pinned connection,
// whatever language the server's messages are in; a failure that is not a parameter's names none.
func TestUntypedParamIsFoundWithoutWords(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, "create table gs (id int primary key, v text)"); err != nil {
		t.Fatal(err)
	}
	pinned, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pinned.Release()
	for _, c := range []struct {
		sql  string
		args []any
		want int
	}{
		{"select concat(v, $1) from gs", []any{"x"}, 1},                                              // 42P18
		{"select id from gs where id = $1 and v like concat('%', $2, '%')", []any{int64(1), "b"}, 2}, // 42P18, the second
		{"select $1 is null, concat($2, 'a')", []any{"a", int64(2)}, 1},                              // 42P18, the first of two
		{"select $1", []any{int64(5)}, 1},                                                            // text, given a number: pgx refuses
		{"select id from gs where id = $1 and v = $2", []any{int64(1), 2.5}, 2},                      // v's text, given a double
		{"select id from gs where id = $1", []any{"x"}, 0},                                           // PostgreSQL's 22P02: no parameter's fault
		{"select nosuch from gs where id = $1", []any{int64(1)}, 0},                                  // 42703
		{"select id from gs where id = $1", []any{int64(1)}, 0},                                      // runs
	} {
		for name, db := range map[string]querier{"pool": pool, "pinned": pinned} { //determinism:ok each case is checked alone
			rows, err := db.Query(ctx, c.sql, c.args...)
			if err == nil {
				for rows.Next() {
				}
				rows.Close()
				err = rows.Err()
			}
			if c.want != 0 && err == nil {
				t.Fatalf("%s %q: ran", name, c.sql)
			}
			if got := untypedParam(ctx, db, c.sql, c.args, err); got != c.want {
				t.Errorf("%s %q %v (%v): parameter %d, want %d", name, c.sql, c.args, err, got, c.want)
			}
		}
	}
	// Other words (a server's lc_messages, another pgx): the same answers.
	reworded := &pgconn.PgError{Severity: "FEHLER", Code: "42P18", Message: "konnte Datentyp von Parameter nicht ermitteln"}
	if got := untypedParam(ctx, pool, "select 1 + $1, concat(v, $2) from gs", []any{int64(1), "x"}, reworded); got != 2 {
		t.Errorf("42P18 in other words: parameter %d, want 2", got)
	}
	if got := untypedParam(ctx, pool, "select $1, $2", []any{"a", int64(2)}, errors.New("kodieren fehlgeschlagen")); got != 2 {
		t.Errorf("an encode failure in other words: parameter %d, want 2", got)
	}
}
