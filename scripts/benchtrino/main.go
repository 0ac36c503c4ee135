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
// With -floor it is instead the floor to compare the Trino row with: a net/http server on
// loopback answering every POST with a fixed document naming a nextUri and every GET with a fixed
// last page of one row, no query behind them. It prints its port and serves until killed.
//
//	benchtrino -floor 127.0.0.1:0   # then: benchtrino -trino http://127.0.0.1:PORT -d 3s
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
	"net"
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
	floor := flag.String("floor", "", "serve fixed Trino documents on this address instead of measuring")
	flag.Parse()
	if *floor != "" {
		fail(serveFloor(*floor))
	}
	var run func() error
	var requests *int // HTTP requests sent, over Trino
	switch {
	case *trinoURL != "" && *pgURL == "":
		c := newTrino(*trinoURL, *user)
		run = func() error { return c.selectOne(*q) }
		requests = &c.requests
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
	var before int
	if requests != nil {
		before = *requests
	}
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
	perQuery := "-"
	if requests != nil {
		perQuery = strconv.FormatFloat(float64(*requests-before)/float64(len(lats)), 'f', 3, 64)
	}
	fmt.Printf("%d %d %d %s\n", pct(0.50), pct(0.99), len(lats), perQuery)
}

// serveFloor answers the Trino protocol with fixed documents on addr (see -floor).
func serveFloor(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Println(l.Addr().(*net.TCPAddr).Port)
	base := "http://" + l.Addr().String()
	queued := []byte(`{"id":"q","infoUri":"` + base + `/ui","nextUri":"` + base + `/v1/statement/executing/q/s/1","stats":{"state":"QUEUED"},"warnings":[]}` + "\n")
	last := []byte(`{"id":"q","infoUri":"` + base + `/ui","columns":[{"name":"_col0","type":"integer","typeSignature":{"rawType":"integer","arguments":[]}}],` +
		`"data":[[1]],"stats":{"state":"FINISHED"},"warnings":[]}` + "\n")
	return http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.Write(queued)
			return
		}
		w.Write(last)
	}))
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
