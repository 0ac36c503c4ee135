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
// requests_per_query post_p50_us": the mean HTTP requests a query took over Trino, and the p50
// of its POST alone, from its first byte sent to its answer read ("-" both over pgx).
//
// With -floor it is instead the floor to compare the Trino row with: a net/http server on
// loopback answering every POST with a fixed document naming a nextUri and every GET with a fixed
// last page of one row, no query behind them. It prints its port and serves until killed.
//
//	benchtrino -floor 127.0.0.1:0   # then: benchtrino -trino http://127.0.0.1:PORT -d 3s
//
// With -floor-raw the same documents are served without net/http: a goroutine per connection
// reads each request's head and body from a bufio.Reader and answers it in one write. What
// -floor costs over -floor-raw is what net/http's server costs two requests. With -floor-lite
// they are served by internal/httplite, the Trino port's HTTP server.
//
// determinism: outside the simulator (a benchmark client)
package main

import (
	"bufio"
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

	"github.com/queryflux/queryflux/internal/httplite"
)

func main() {
	trinoURL := flag.String("trino", "", "base URL of a Trino HTTP endpoint")
	user := flag.String("user", "postgres", "X-Trino-User")
	pgURL := flag.String("pg", "", "PostgreSQL URL (instead of -trino)")
	q := flag.String("query", "SELECT 1", "the query; its single value must be 1")
	dur := flag.Duration("d", 3*time.Second, "duration")
	floor := flag.String("floor", "", "serve fixed Trino documents on this address instead of measuring")
	floorRaw := flag.String("floor-raw", "", "as -floor, without net/http")
	floorLite := flag.String("floor-lite", "", "as -floor, served by internal/httplite")
	flag.Parse()
	for server, addr := range map[string]string{"net/http": *floor, "raw": *floorRaw, "httplite": *floorLite} {
		if addr != "" {
			fail(serveFloor(addr, server))
		}
	}
	var run func() error
	var requests *int          // HTTP requests sent, over Trino
	var posts *[]time.Duration // each query's POST exchange, over Trino
	switch {
	case *trinoURL != "" && *pgURL == "":
		c := newTrino(*trinoURL, *user)
		run = func() error { return c.selectOne(*q) }
		requests, posts = &c.requests, &c.posts
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
		before, *posts = *requests, nil
	}
	end := time.Now().Add(*dur)
	for time.Now().Before(end) {
		t0 := time.Now()
		if err := run(); err != nil {
			fail(err)
		}
		lats = append(lats, time.Since(t0))
	}
	perQuery, postP50 := "-", "-"
	if requests != nil {
		perQuery = strconv.FormatFloat(float64(*requests-before)/float64(len(lats)), 'f', 3, 64)
		postP50 = strconv.FormatInt(percentile(*posts, 0.50), 10)
	}
	fmt.Printf("%d %d %d %s %s\n", percentile(lats, 0.50), percentile(lats, 0.99), len(lats), perQuery, postP50)
}

// percentile is the p-th of durations in microseconds (durations get sorted).
func percentile(durations []time.Duration, p float64) int64 {
	sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
	return durations[int(float64(len(durations)-1)*p)].Microseconds()
}

// serveFloor answers the Trino protocol with fixed documents on addr (see -floor), through
// server: net/http, httplite, or raw (neither).
func serveFloor(addr, server string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Println(l.Addr().(*net.TCPAddr).Port)
	base := "http://" + l.Addr().String()
	queued := []byte(`{"id":"q","infoUri":"` + base + `/ui","nextUri":"` + base + `/v1/statement/executing/q/s/1","stats":{"state":"QUEUED"},"warnings":[]}` + "\n")
	last := []byte(`{"id":"q","infoUri":"` + base + `/ui","columns":[{"name":"_col0","type":"integer","typeSignature":{"rawType":"integer","arguments":[]}}],` +
		`"data":[[1]],"stats":{"state":"FINISHED"},"warnings":[]}` + "\n")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.Write(queued)
			return
		}
		w.Write(last)
	})
	switch server {
	case "raw":
		return serveRaw(l, queued, last)
	case "httplite":
		return httplite.New(h, httplite.Options{}).Serve(l)
	}
	return http.Serve(l, h)
}

// serveRaw answers every POST on l with queued and every other request with last, each in
// one write of a whole HTTP/1.1 response, over kept-alive connections.
func serveRaw(l net.Listener, queued, last []byte) error {
	answer := func(doc []byte) []byte {
		return append([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(doc))+"\r\n\r\n"), doc...)
	}
	toPost, toGet := answer(queued), answer(last)
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			br := bufio.NewReader(c)
			for {
				post, err := readRequest(br)
				if err != nil {
					return
				}
				out := toGet
				if post {
					out = toPost
				}
				if _, err := c.Write(out); err != nil {
					return
				}
			}
		}()
	}
}

// readRequest reads one request's head and discards its body (Content-Length only, as every
// client of the floor sends), reporting whether it was a POST.
func readRequest(br *bufio.Reader) (post bool, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return false, err
	}
	post = bytes.HasPrefix(line, []byte("POST "))
	length := 0
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		if name, value, ok := bytes.Cut(line, []byte(":")); ok && strings.EqualFold(string(name), "Content-Length") {
			if length, err = strconv.Atoi(string(bytes.TrimSpace(value))); err != nil {
				return false, err
			}
		}
	}
	_, err = br.Discard(length)
	return post, err
}

type trinoClient struct {
	base, user string
	http       *http.Client
	requests   int             // HTTP requests sent
	posts      []time.Duration // each statement's POST exchange
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
	for start := time.Now(); req != nil; {
		req.Header.Set("X-Trino-User", c.user)
		req.Header.Set("X-Trino-Source", "benchtrino")
		doc, err := c.do(req)
		if req.Method == http.MethodPost {
			c.posts = append(c.posts, time.Since(start))
		}
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
