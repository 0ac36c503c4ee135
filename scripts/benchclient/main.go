// Command benchclient measures a MySQL-protocol server for scripts/bench-proxy.sh: per-query
// latency of one client (p50, p99) and the throughput of several clients, with one query.
// (PostgreSQL is measured with pgbench; MariaDB ships no per-query latency tool.)
//
// determinism: outside the simulator (a benchmark client)
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/go-sql-driver/mysql"
)

func main() {
	dsn := flag.String("dsn", "", "go-sql-driver/mysql DSN")
	q := flag.String("query", "SELECT 1", "the query (rows of any number of columns; one column is read with QueryRow)")
	clients := flag.Int("c", 1, "concurrent clients")
	dur := flag.Duration("d", 5*time.Second, "duration")
	flag.Parse()
	db, err := sql.Open("mysql", *dsn)
	if err != nil {
		fail(err)
	}
	db.SetMaxOpenConns(*clients)
	db.SetMaxIdleConns(*clients)
	if err := db.Ping(); err != nil {
		fail(err)
	}
	cols, err := columns(db, *q)
	if err != nil {
		fail(err)
	}
	run := func(conn *sql.Conn) error { // one statement: one row of one column, as SELECT 1
		var v any
		return conn.QueryRowContext(context.Background(), *q).Scan(&v)
	}
	if cols != 1 {
		run = func(conn *sql.Conn) error { return readAll(conn, *q, cols) }
	}
	var (
		mu    sync.Mutex
		lats  []time.Duration
		n     atomic.Int64
		wg    sync.WaitGroup
		first error
	)
	end := time.Now().Add(*dur)
	for range *clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := db.Conn(context.Background())
			if err != nil {
				mu.Lock()
				first = err
				mu.Unlock()
				return
			}
			defer conn.Close()
			var local []time.Duration
			for time.Now().Before(end) {
				t0 := time.Now()
				if err := run(conn); err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
					return
				}
				local = append(local, time.Since(t0))
				n.Add(1)
			}
			mu.Lock()
			lats = append(lats, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if first != nil {
		fail(first)
	}
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	pct := func(p float64) float64 {
		if len(lats) == 0 {
			return 0
		}
		return float64(lats[int(float64(len(lats)-1)*p)].Microseconds())
	}
	// p50_us p99_us qps
	fmt.Printf("%.0f %.0f %.0f\n", pct(0.50), pct(0.99), float64(n.Load())/dur.Seconds())
}

// columns is how many columns q's rows have.
func columns(db *sql.DB, q string) (int, error) {
	rows, err := db.Query(q)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	return len(cols), err
}

// readAll runs q and reads its rows, of cols columns each, to the end.
func readAll(conn *sql.Conn, q string, cols int) error {
	rows, err := conn.QueryContext(context.Background(), q)
	if err != nil {
		return err
	}
	defer rows.Close()
	vals := make([]sql.RawBytes, cols)
	dest := make([]any, cols)
	for i := range vals {
		dest[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
	}
	return rows.Err()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchclient:", err)
	os.Exit(1)
}
