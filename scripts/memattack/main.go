// Command memattack measures what many MySQL clients can make a daemon hold: each of -c
// connections prepares -n statements of -size bytes and keeps them, while the daemon's
// /proc/PID/status (VmRSS) and /proc/PID/stat (utime+stime) are sampled; it prints the peak
// RSS, the RSS a few seconds after the clients closed, the daemon's CPU and how many prepares
// were kept and refused. With -ordinary N it instead runs N small statements over -c
// connections and prints the daemon's garbage collections over them (go_gc_duration_seconds_count
// from -metrics), so the cost of a memory limit to ordinary traffic can be counted.
//
// determinism: outside the simulator (an attack and benchmark client)
package main

import (
	"bufio"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/go-sql-driver/mysql"
)

func main() {
	dsn := flag.String("dsn", "root@tcp(127.0.0.1:14106)/?maxAllowedPacket=0", "go-sql-driver/mysql DSN")
	pid := flag.Int("pid", 0, "the daemon's process id (required)")
	clients := flag.Int("c", 40, "connections")
	n := flag.Int("n", 4, "statements each connection prepares and keeps")
	size := flag.Int("size", 16<<20, "bytes of each statement")
	after := flag.Duration("after", 5*time.Second, "how long after the clients closed the RSS is read again")
	ordinary := flag.Int("ordinary", 0, "instead of the attack: this many small statements (SELECT 1) over -c connections")
	metricsURL := flag.String("metrics", "http://127.0.0.1:19800/metrics", "the daemon's Prometheus endpoint (for -ordinary)")
	flag.Parse()
	if *pid == 0 {
		fail(fmt.Errorf("-pid is required"))
	}
	if *ordinary > 0 {
		runOrdinary(*dsn, *pid, *clients, *ordinary, *metricsURL)
		return
	}
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if r := rssBytes(*pid); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	rss0, cpu0 := rssBytes(*pid), cpuTicks(*pid)
	start := time.Now()
	var kept, refused atomic.Int64
	var firstErr atomic.Value
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := 0; c < *clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			db, err := sql.Open("mysql", *dsn)
			if err != nil {
				fail(err)
			}
			db.SetMaxOpenConns(1)
			var stmts []*sql.Stmt
			for i := 0; i < *n; i++ {
				text := statement(*size, c, i)
				st, err := db.Prepare(text)
				if err != nil {
					refused.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				kept.Add(1)
				stmts = append(stmts, st)
			}
			mu.Lock()
			defer mu.Unlock()
			held = append(held, closer{db, stmts})
		}(c)
	}
	wg.Wait()
	took := time.Since(start)
	// hold everything a moment so the peak is what the daemon keeps, not a passing moment
	time.Sleep(2 * time.Second)
	heldPeak := peak.Load()
	cpu1 := cpuTicks(*pid)
	for _, h := range held {
		for _, st := range h.stmts {
			st.Close()
		}
		h.db.Close()
	}
	time.Sleep(*after)
	close(stop)
	<-sampled
	fmt.Printf("clients %d x %d statements of %d bytes: kept %d, refused %d (first: %v) in %s\n", *clients, *n, *size, kept.Load(), refused.Load(), firstErr.Load(), took.Round(time.Millisecond))
	fmt.Printf("daemon RSS %d MB -> peak %d MB (while held %d MB), %d MB %s after the close; daemon CPU %.2f s\n",
		rss0>>20, peak.Load()>>20, heldPeak>>20, rssBytes(*pid)>>20, *after, float64(cpu1-cpu0)/100)
}

var held []closer

type closer struct {
	db    *sql.DB
	stmts []*sql.Stmt
}

// statement is a SELECT of one parameter padded with a comment to size bytes; each differs so
// nothing can share them.
func statement(size, c, i int) string {
	head := fmt.Sprintf("SELECT ? /* %d.%d ", c, i)
	pad := size - len(head) - 3
	if pad < 0 {
		pad = 0
	}
	return head + strings.Repeat("x", pad) + " */"
}

func runOrdinary(dsn string, pid, clients, total int, metricsURL string) {
	gc0, cpu0 := gcCount(metricsURL), cpuTicks(pid)
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := sql.Open("mysql", dsn)
			if err != nil {
				fail(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			for next.Add(1) <= int64(total) {
				var v int
				if err := db.QueryRow("SELECT 1").Scan(&v); err != nil {
					fail(err)
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	gc1, cpu1 := gcCount(metricsURL), cpuTicks(pid)
	fmt.Printf("%d statements over %d connections in %s: %d GC cycles (%.2f per 10k statements), daemon CPU %.2f s, RSS %d MB\n",
		total, clients, took.Round(time.Millisecond), gc1-gc0, float64(gc1-gc0)*10000/float64(total), float64(cpu1-cpu0)/100, rssBytes(pid)>>20)
}

func gcCount(url string) int64 {
	resp, err := http.Get(url)
	if err != nil {
		fail(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "go_gc_duration_seconds_count "); ok {
			n, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int64(n)
		}
	}
	fail(fmt.Errorf("%s: no go_gc_duration_seconds_count (status %s)", url, resp.Status))
	return 0
}

func rssBytes(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// cpuTicks is the process's utime+stime in clock ticks (100 a second).
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return u + k
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "memattack:", err)
	os.Exit(1)
}
