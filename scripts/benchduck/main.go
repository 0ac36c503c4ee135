// Command benchduck measures how a large DuckDB result travels through the daemon: for each of
// the PostgreSQL, MySQL and Trino HTTP frontends it starts `queryflux serve` with an embedded
// in-memory DuckDB cluster, reads a generated result of -rows rows, and prints the time to the
// first row, the time to the last, and how much the daemon's resident memory grew (its peak
// VmRSS, sampled every millisecond, over its VmRSS before the first run).
//
//	go build -o bin/queryflux ./cmd/queryflux && go run ./scripts/benchduck -bin bin/queryflux
//
// determinism: outside the simulator (a benchmark client)
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	_ "github.com/trinodb/trino-go-client/trino"
)

func main() {
	bin := flag.String("bin", "bin/queryflux", "the queryflux binary")
	n := flag.Int("rows", 2_000_000, "rows in the result")
	rounds := flag.Int("rounds", 3, "runs per frontend (the median is printed)")
	flag.Parse()
	q := fmt.Sprintf("SELECT i, 'row number ' || i AS s, i * 0.5 AS h FROM range(%d) t(i)", *n)
	wires := []struct {
		name string
		open func(d *daemon) (reader, error)
	}{
		{"postgres", openPG},
		{"mysql", openMySQL},
		{"trino", openTrino},
	}
	fmt.Printf("%-9s %12s %12s %14s %8s\n", "wire", "first_row_ms", "last_row_ms", "rss_growth_mb", "rows")
	for _, w := range wires {
		if err := measure(*bin, w.name, w.open, q, *rounds); err != nil {
			fail(fmt.Errorf("%s: %w", w.name, err))
		}
	}
	fmt.Printf("query: %s\n", q)
	fmt.Printf("each wire: a fresh daemon, one connection opened and warmed with SELECT 1 before the clock starts; "+
		"medians of %d runs; rss growth = peak VmRSS over the runs (sampled every ms) - VmRSS after the warm-up\n", *rounds)
}

// reader runs q on an open connection, calling first at its first row; it returns the rows read.
type reader func(q string, first func()) (int, error)

func measure(bin, name string, open func(*daemon) (reader, error), q string, rounds int) error {
	d, err := start(bin)
	if err != nil {
		return err
	}
	defer d.stop()
	read, err := open(d)
	if err != nil {
		return err
	}
	if _, err := read("SELECT 1, 'a', 0.5", func() {}); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	base := d.rss()
	var peak atomic.Int64
	stop := d.sampleRSS(&peak)
	var firsts, lasts []float64
	rows := 0
	for range rounds {
		t0 := time.Now()
		var first time.Duration
		got, err := read(q, func() { first = time.Since(t0) })
		last := time.Since(t0)
		if err != nil {
			stop()
			return err
		}
		rows = got
		firsts = append(firsts, ms(first))
		lasts = append(lasts, ms(last))
	}
	stop()
	fmt.Printf("%-9s %12.1f %12.1f %14.1f %8d\n", name, median(firsts), median(lasts), float64(peak.Load()-base)/(1<<20), rows)
	return nil
}

type daemon struct {
	cmd              *exec.Cmd
	dir              string
	pg, mysql, trino int
}

func start(bin string) (*daemon, error) {
	dir, err := os.MkdirTemp("", "benchduck")
	if err != nil {
		return nil, err
	}
	d := &daemon{dir: dir}
	ports := make([]int, 4)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	d.pg, d.mysql, d.trino = ports[0], ports[1], ports[2]
	cfg := fmt.Sprintf(`queryflux:
  role: standalone
  adminApi: {listen: "127.0.0.1:%d"}
  frontends:
    postgres: {enabled: true, listen: "127.0.0.1:%d"}
    mysql: {enabled: true, listen: "127.0.0.1:%d"}
    trino: {enabled: true, listen: "127.0.0.1:%d"}
clusters:
  - {name: duck, engine: duckdb, endpoint: ":memory:", maxRunningQueries: 4}
clusterGroups:
  - {name: duck, members: [duck], maxQueuedQueries: 100, capacityWaitTimeoutSecs: 30}
routingFallback: duck
settings:
  security: {trustLoopback: true}
`, ports[3], d.pg, d.mysql, d.trino)
	path := filepath.Join(dir, "duck.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	d.cmd = exec.Command(bin, "serve", "--config", path)
	log, err := os.Create(filepath.Join(dir, "daemon.log"))
	if err != nil {
		return nil, err
	}
	d.cmd.Stdout, d.cmd.Stderr = log, log
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	for range 300 {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", d.trino)); err == nil {
			c.Close()
			return d, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	d.stop()
	return nil, fmt.Errorf("the daemon did not listen; its log is %s", log.Name())
}

func (d *daemon) stop() {
	_ = d.cmd.Process.Kill()
	_ = d.cmd.Wait()
	_ = os.RemoveAll(d.dir)
}

// rss is the daemon's resident memory in bytes.
func (d *daemon) rss() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// sampleRSS keeps the largest rss in peak until stop is called.
func (d *daemon) sampleRSS(peak *atomic.Int64) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			if r := d.rss(); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}

func openPG(d *daemon) (reader, error) {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, fmt.Sprintf("postgres://bench@127.0.0.1:%d/duck?sslmode=disable", d.pg))
	if err != nil {
		return nil, err
	}
	return func(q string, first func()) (int, error) {
		rows, err := c.Query(ctx, q, pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			if n == 0 {
				first()
			}
			n++
		}
		return n, rows.Err()
	}, nil
}

// openSQL opens one database/sql connection; its reader scans three columns per row.
func openSQL(driver, dsn string) (reader, error) {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	if err := db.Ping(); err != nil {
		return nil, err
	}
	return func(q string, first func()) (int, error) {
		rows, err := db.Query(q)
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		n := 0
		var a, b, c any
		for rows.Next() {
			if n == 0 {
				first()
			}
			if err := rows.Scan(&a, &b, &c); err != nil {
				return n, err
			}
			n++
		}
		return n, rows.Err()
	}, nil
}

func openMySQL(d *daemon) (reader, error) {
	return openSQL("mysql", fmt.Sprintf("bench@tcp(127.0.0.1:%d)/duck", d.mysql))
}

func openTrino(d *daemon) (reader, error) {
	return openSQL("trino", fmt.Sprintf("http://bench@127.0.0.1:%d?catalog=duck", d.trino))
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(v []float64) float64 {
	sort.Float64s(v)
	return v[len(v)/2]
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchduck:", err)
	os.Exit(1)
}
