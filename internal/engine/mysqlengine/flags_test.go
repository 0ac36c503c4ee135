package mysqlengine

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestClientFlagsPickTheConnection: a statement runs on a connection opened with its client's
// CLIENT_FOUND_ROWS and CLIENT_IGNORE_SPACE, by every way the engine runs one (Execute, a
// pinned session, QueryRaw, ExecuteRaw, a loop connection), and requests of every flag set in
// turn never get one another's pooled connections: an UPDATE that changes nothing counts the
// row it matched only under FOUND_ROWS, and count (*) parses only under IGNORE_SPACE, as on
// MariaDB itself.
func TestClientFlagsPickTheConnection(t *testing.T) {
	e, name := openTestEngine(t)
	exec(t, e, "CREATE TABLE f (id INT PRIMARY KEY, v INT)")
	exec(t, e, "INSERT INTO f VALUES (1, 1)")
	ctx := context.Background()
	const update = "UPDATE f SET v = v WHERE id = 1"
	paths := map[string]func(q *query.Request) (affected uint64, err error){
		"Execute": func(q *query.Request) (uint64, error) {
			rows, err := e.Execute(ctx, q)
			if err != nil {
				return 0, err
			}
			return drainCount(rows)
		},
		"session": func(q *query.Request) (uint64, error) {
			s, err := e.OpenSession(ctx, q)
			if err != nil {
				return 0, err
			}
			defer s.Close()
			rows, err := s.Execute(ctx, q)
			if err != nil {
				return 0, err
			}
			return drainCount(rows)
		},
		"QueryRaw": func(q *query.Request) (uint64, error) {
			r, err := e.QueryRaw(ctx, q)
			if err != nil {
				return 0, err
			}
			n := r.Result().AffectedRows
			return n, r.Close()
		},
		"ExecuteRaw": func(q *query.Request) (uint64, error) {
			r, err := e.ExecuteRaw(ctx, q, StmtParams{})
			if err != nil {
				return 0, err
			}
			n := r.Result().AffectedRows
			return n, r.Close()
		},
		"loop": func(q *query.Request) (uint64, error) {
			lc := e.TakeLoopConn(q)
			if lc == nil {
				var err error
				if lc, err = e.OpenLoopConn(ctx, q); err != nil {
					return 0, err
				}
			}
			defer lc.Release(true)
			res, err := lc.c.Execute(q.SQL) // the loop relays the packets go-mysql reads here
			if err != nil {
				return 0, err
			}
			return res.AffectedRows, nil
		},
	}
	for path, run := range paths {
		t.Run(path, func(t *testing.T) {
			for round := range 3 { // later rounds take pooled connections
				for _, foundRows := range []bool{true, false} {
					for _, ignoreSpace := range []bool{true, false} {
						req := func(sql string) *query.Request {
							return &query.Request{SQL: sql, Database: name, FoundRows: foundRows, IgnoreSpace: ignoreSpace}
						}
						where := fmt.Sprintf("round %d, FoundRows %v, IgnoreSpace %v", round, foundRows, ignoreSpace)
						n, err := run(req(update))
						if want := map[bool]uint64{true: 1, false: 0}[foundRows]; err != nil || n != want {
							t.Errorf("%s: %s: %d rows, %v; want %d", where, update, n, err, want)
						}
						_, err = run(req("SELECT count (*) FROM f"))
						if parsed := err == nil; parsed != ignoreSpace {
							t.Errorf("%s: count (*): %v", where, err)
						}
					}
				}
			}
		})
	}
}

// drainCount reads rows to their end and closes them; n is the count of an "UPDATE n" tag.
func drainCount(rows query.Rows) (n uint64, err error) {
	defer rows.Close()
	for err == nil {
		_, err = rows.Next(context.Background())
	}
	if err != io.EOF {
		return 0, err
	}
	fmt.Sscanf(rows.Tag(), "UPDATE %d", &n)
	return n, nil
}

// TestLoadsLocalFile: only a LOAD DATA or LOAD XML ... LOCAL INFILE gets a connection the
// server may ask for the client's file on; comments and line breaks between the words as
// clients write them.
func TestLoadsLocalFile(t *testing.T) {
	for sql, want := range map[string]bool{
		"LOAD DATA LOCAL INFILE 'x' INTO TABLE t":                   true,
		"load data low_priority local infile '/tmp/a' into table t": true,
		"/* tag */ LOAD XML LOCAL\n  INFILE 'x.xml' INTO TABLE t":   true,
		"LOAD DATA LOCAL /* c */ INFILE 'x' INTO TABLE t":           true,
		"LOAD DATA INFILE 'x' INTO TABLE t":                         false,
		"SELECT 'LOAD DATA LOCAL INFILE'":                           false,
		"LOAD DATA INFILE 'local' INTO TABLE t":                     false,
		"INSERT INTO t VALUES ('load data local infile')":           false,
	} {
		if got := LoadsLocalFile(sql); got != want {
			t.Errorf("LoadsLocalFile(%q) = %v, want %v", sql, got, want)
		}
	}
}

// TestCollationIndexIsTheFirstOfItsID: the table CollationIndex reads answers, for every id, the
// index of the first carried collation with that id, 0 for one not carried.
func TestCollationIndexIsTheFirstOfItsID(t *testing.T) {
	for id := range 256 {
		want := 0
		for i, c := range Collations {
			if c.ID == uint8(id) {
				want = i
				break
			}
		}
		if got := CollationIndex(uint8(id)); got != want {
			t.Fatalf("CollationIndex(%d) = %d, want %d", id, got, want)
		}
	}
}
