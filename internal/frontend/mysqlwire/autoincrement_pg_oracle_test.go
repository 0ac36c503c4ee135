package mysqlwire

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/testlong"
)

// TestAutoIncrementOnPostgreSQLLikeMariaDB: random sequences of INSERTs into a table whose key
// is a SERIAL on PostgreSQL and an AUTO_INCREMENT on MariaDB (ids given below, at and far
// above the counter, NULL, 0, DEFAULT, the column left out, the column list left out; one row
// or several; as text or as a prepared statement's parameters) get through the proxy on
// PostgreSQL what they get from MariaDB: each statement's OK packet (insert id, rows),
// LAST_INSERT_ID() after it, and the ids in the table. Before: NULL was 23502 (a NOT NULL
// violation), 0 was stored as 0, an id given did not move the sequence, so the next generated
// one collided with it (23505), and an INSERT that named the column gave no insert id.
//
// A multi-row INSERT with a generated row after an id given after a generated row is left
// out: InnoDB takes a new reservation there when the id given ran past its first one, which
// the proxy, taking each generated id from the sequence, does not copy.
func TestAutoIncrementOnPostgreSQLLikeMariaDB(t *testing.T) {
	testlong.RapidChecks(t, 10, 100)
	maria, _ := newMariaDB(t)
	f, pool := pgClusterPool(t)
	pg := openDB(t, f.addr, testUser, "", "public", "")
	ctx := context.Background()
	tables := 0
	rapid.Check(t, func(rt *rapid.T) {
		conns := map[string]*sql.Conn{}
		for name, db := range map[string]*sql.DB{"MariaDB": maria, "PostgreSQL": pg} {
			c, err := db.Conn(ctx)
			if err != nil {
				rt.Fatal(err)
			}
			conns[name] = c
		}
		defer func() {
			for _, c := range conns {
				_ = c.Raw(func(any) error { return driver.ErrBadConn }) // a session of its own each check
				c.Close()
			}
		}()
		tables++
		table := fmt.Sprintf("ai%d", tables)
		mcreate := "CREATE TABLE " + table + " (id INT NOT NULL AUTO_INCREMENT, v INT, PRIMARY KEY (id))"
		pcreate := []string{"CREATE TABLE " + table + " (id SERIAL PRIMARY KEY, v INT)"}
		if start := rapid.SampledFrom([]int{0, 1, 50}).Draw(rt, "start"); start > 0 {
			mcreate += " AUTO_INCREMENT=" + strconv.Itoa(start)
			pcreate = append(pcreate, fmt.Sprintf("ALTER SEQUENCE %s_id_seq RESTART WITH %d", table, start))
		}
		history := []string{mcreate}
		if _, err := conns["MariaDB"].ExecContext(ctx, mcreate); err != nil {
			rt.Fatalf("MariaDB: %s: %v", mcreate, err)
		}
		for _, s := range pcreate {
			if _, err := pool.Exec(ctx, s); err != nil {
				rt.Fatalf("PostgreSQL: %s: %v", s, err)
			}
		}
		used := map[int64]bool{}
		for range rapid.IntRange(1, 8).Draw(rt, "statements") {
			st := aiStatement{params: rapid.Bool().Draw(rt, "params")}
			omit := rapid.IntRange(0, 5).Draw(rt, "omit") == 0
			generated, past := false, false
			for range rapid.IntRange(1, 4).Draw(rt, "rows") {
				if past {
					break // no generated row after an id given after a generated one
				}
				r := aiRow{kind: rapid.SampledFrom([]string{"null", "0", "default", "explicit", "explicit"}).Draw(rt, "kind")}
				if omit {
					r.kind = "omit"
				}
				if r.kind == "explicit" {
					r.id = rapid.OneOf(rapid.Int64Range(1, 80), rapid.Int64Range(100000, 300000)).Draw(rt, "id")
					if used[r.id] {
						r.kind = "null" // a duplicate fails the statement where InnoDB wrote some rows already
					}
					used[r.id] = true
					past = generated
				}
				generated = generated || r.kind != "explicit"
				st.rows = append(st.rows, r)
			}
			text, args := st.sql(table)
			if !omit && rapid.Bool().Draw(rt, "no column list") {
				text = strings.Replace(text, " (id, v) VALUES", " VALUES", 1)
			}
			var got, errs []string
			for _, name := range []string{"MariaDB", "PostgreSQL"} {
				c := conns[name]
				res, err := c.ExecContext(ctx, text, args...)
				if err != nil {
					got, errs = append(got, "error"), append(errs, name+": "+err.Error())
					continue
				}
				got = append(got, insertSeen(ctx, rt, c, name, table, res, used))
			}
			if got[0] != got[1] {
				rt.Fatalf("%s\n%s %v:\nMariaDB:    %s\nPostgreSQL: %s\n%s", strings.Join(history, "\n"), text, args, got[0], got[1], strings.Join(errs, "\n"))
			}
			if got[0] == "error" {
				return
			}
			history = append(history, fmt.Sprintf("%s %v: %s", text, args, got[0]))
		}
	})
}
