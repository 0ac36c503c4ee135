// Command benchtrino measures single-client SELECT 1 latency for scripts/bench-proxy.sh, the
// same way over the Trino HTTP protocol and over PostgreSQL's wire, so that the two p50s can be
// subtracted: one client, one persistent connection, one query at a time, each timed from its
// first byte sent to its last row read.
//
//	benchtrino -trino http://127.0.0.1:8080 -user postgres -d 3s   # Trino client protocol (v1)
//	benchtrino -pg postgres://postgres@127.0.0.1:5432/db -d 3s      # pgx, extended protocol
//
// Over Trino it follows the protocol as trino-go-client and the npm trino-client do: POST
// /v1/statement over a kept-alive HTTP/1.1 connection, then GET every nextUri until a document
// has none, reading rows from every document it is given. It prints "p50_us p99_us queries
// requests_per_query", the last the mean HTTP requests a query took over Trino ("-" over pgx).
//
// determinism: outside the simulator (a benchmark client)
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

func main() {
	trinoURL := flag.String("trino", "", "base URL of a Trino HTTP endpoint")
	user := flag.String("user", "postgres", "X-Trino-User")
	pgURL := flag.String("pg", "", "PostgreSQL URL (instead of -trino)")
	q := flag.String("query", "SELECT 1", "the query; its single value must be 1")
	dur := flag.Duration("d", 3*time.Second, "duration")
	flag.Parse()
	var run func() error
	requests := func() string { return "-" }
	switch {
	case *trinoURL != "" && *pgURL == "":
		c := newTrino(*trinoURL, *user)
		run = func() error { return c.selectOne(*q) }
		requests = func() string { return strconv.Itoa(c.requests) }
	case *pgURL != "" && *trinoURL == "":
		conn, err := pgx.Connect(context.Background(), *pgURL)
		if err != nil {
			fail(err)
		}
		defer conn.Close(context.Background())
		run = func() error {
			var v int
			if err := conn.QueryRow(context.Background(), *q).Scan(&v); err != nil {
				return err
			}
			if v != 1 {
				return fmt.Errorf("got %d, want 1", v)
			}
			return nil
		}
	default:
		fail(errors.New("give one of -trino URL and -pg URL"))
	}
	for range 20 { // warm the connection, the proxy's pools and both sides' caches
		if err := run(); err != nil {
			fail(err)
		}
	}
	var lats []time.Duration
	before := requests()
	end := time.Now().Add(*dur)
	for time.Now().Before(end) {
		t0 := time.Now()
		if err := run(); err != nil {
			fail(err)
		}
		lats = append(lats, time.Since(t0))
	}
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	pct := func(p float64) int64 { return lats[int(float64(len(lats)-1)*p)].Microseconds() }
	fmt.Printf("%d %d %d %s\n", pct(0.50), pct(0.99), len(lats), perQuery(before, requests(), len(lats)))
}

// perQuery is the mean requests per query between two counts, "-" when not counted.
func perQuery(before, after string, queries int) string {
	b, errB := strconv.Atoi(before)
	a, errA := strconv.Atoi(after)
	if errB != nil || errA != nil {
		return "-"
	}
	return strconv.FormatFloat(float64(a-b)/float64(queries), 'f', 3, 64)
}

type trinoClient struct {
	base, user string
	http       *http.Client
	requests   int // HTTP requests sent
}

func newTrino(base, user string) *trinoClient {
	// One connection, kept alive between queries, as trino-go-client keeps its own.
	tr := &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1, DisableCompression: true}
	return &trinoClient{base: strings.TrimRight(base, "/"), user: user, http: &http.Client{Transport: tr}}
}

// document is the part of a QueryResults document a client reads.
type document struct {
	NextURI string  `json:"nextUri"`
	Data    [][]any `json:"data"`
	Error   *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (c *trinoClient) selectOne(sql string) error {
	req, err := http.NewRequest(http.MethodPost, c.base+"/v1/statement", strings.NewReader(sql))
	if err != nil {
		return err
	}
	var rows [][]any
	for req != nil {
		req.Header.Set("X-Trino-User", c.user)
		req.Header.Set("X-Trino-Source", "benchtrino")
		doc, err := c.do(req)
		if err != nil {
			return err
		}
		if doc.Error != nil {
			return fmt.Errorf("query failed: %s", doc.Error.Message)
		}
		rows = append(rows, doc.Data...)
		req = nil
		if doc.NextURI != "" {
			if req, err = http.NewRequest(http.MethodGet, doc.NextURI, nil); err != nil {
				return err
			}
		}
	}
	if len(rows) != 1 || len(rows[0]) != 1 || fmt.Sprint(rows[0][0]) != "1" {
		return fmt.Errorf("rows %v, want [[1]]", rows)
	}
	return nil
}

func (c *trinoClient) do(req *http.Request) (*document, error) {
	c.requests++
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %s: %s", req.Method, req.URL, resp.Status, bytes.TrimSpace(body))
	}
	var doc document
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL, err)
	}
	return &doc, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchtrino:", err)
	os.Exit(1)
}
