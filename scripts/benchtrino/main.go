// Command benchtrino measures single-client SELECT 1 latency for scripts/bench-proxy.sh, the
// same way over the Trino HTTP protocol and over PostgreSQL's wire, so that the two p50s can be
// subtracted: one client, one persistent connection, one query at a time, each timed from its
// first byte sent to its last row read.
//
//	benchtrino -trino http://127.0.0.1:8080 -user postgres -d 3s   # Trino client protocol (v1)
//	benchtrino -pg postgres://postgres@127.0.0.1:5432/db -d 3s      # pgx, extended protocol
//
// Over Trino it follows the protocol as the Python and Java clients do: POST /v1/statement
// over a kept-alive HTTP/1.1 connection, then GET every nextUri until a document has none,
// reading rows from every document it is given, the POST's answer included. It sends the
// User-Agent -agent ("benchtrino/1"): a daemon whose frontends.trino.postAnswerClients names it
// answers a quick statement whole in its POST (one exchange; requests_per_query 1), any other
// answers QUEUED with a nextUri, as it answers trino-go-client and the npm trino-client, which
// drop a POST answer's rows. It prints "p50_us p99_us queries
// requests_per_query post_p50_us client_cpu_us": the mean HTTP requests a query took over
// Trino, the p50 of its POST alone, from its first byte sent to its answer read ("-" both over
// pgx), and the CPU this client spent per query.
//
// -client names the Trino client: http (the default) sends the requests with net/http's
// client, as trino-go-client does; raw writes each request itself in one write on one TCP
// connection and reads the answer with a bufio.Reader (no net/http: what is left is the
// loopback exchanges and the JSON); driver runs the query through trino-go-client itself
// (database/sql, one connection, its requests counted by its transport; post_p50_us is then "-").
//
// -trace FILE writes an execution trace of the timed queries (go tool trace FILE): whose goroutines
// wake whose, and how often a thread is woken, per query.
//
// -n N runs N queries (after the 20 that warm up) instead of running for -d: a fixed count,
// for measures per query that load does not change (instructions, system calls).
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
// they are served by internal/httplite, the Trino port's HTTP server. With -floor-one any of
// them answers the POST with that last page instead: the floor of a statement answered in one
// exchange.
//
// determinism: outside the simulator (a benchmark client)
package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"runtime/trace"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trinodb/trino-go-client/trino" // -client driver

	"github.com/queryflux/queryflux/internal/httplite"
)

func main() {
	trinoURL := flag.String("trino", "", "base URL of a Trino HTTP endpoint")
	user := flag.String("user", "postgres", "X-Trino-User")
	pgURL := flag.String("pg", "", "PostgreSQL URL (instead of -trino)")
	q := flag.String("query", "SELECT 1", "the query; its single value must be 1")
	dur := flag.Duration("d", 3*time.Second, "duration")
	count := flag.Int("n", 0, "run this many queries instead of for -d (load-independent counts per query)")
	floor := flag.String("floor", "", "serve fixed Trino documents on this address instead of measuring")
	floorRaw := flag.String("floor-raw", "", "as -floor, without net/http")
	floorLite := flag.String("floor-lite", "", "as -floor, served by internal/httplite")
	floorOne := flag.Bool("floor-one", false, "a floor answers the POST with the last page (one exchange)")
	client := flag.String("client", "http", "the Trino client: http (net/http), raw (no net/http) or driver (trino-go-client)")
	agent := flag.String("agent", "benchtrino/1", "the User-Agent of -client http and raw")
	traceTo := flag.String("trace", "", "write an execution trace (runtime/trace) of the timed queries to this file")
	flag.Parse()
	for server, addr := range map[string]string{"net/http": *floor, "raw": *floorRaw, "httplite": *floorLite} {
		if addr != "" {
			fail(serveFloor(addr, server, *floorOne))
		}
	}
	var run func() error
	var requests *int          // HTTP requests sent, over Trino
	var posts *[]time.Duration // each query's POST exchange, over Trino
	switch {
	case *trinoURL != "" && *pgURL == "" && *client == "driver":
		var err error
		counted := new(int)
		if run, err = driverQuery(*trinoURL, *user, *q, counted); err != nil {
			fail(err)
		}
		requests = counted
	case *trinoURL != "" && *pgURL == "":
		c, err := newTrino(*trinoURL, *user, *client, *agent)
		if err != nil {
			fail(err)
		}
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
		before = *requests
	}
	if posts != nil {
		*posts = nil
	}
	if *traceTo != "" {
		stop, err := startTrace(*traceTo)
		if err != nil {
			fail(err)
		}
		defer stop()
	}
	cpu0 := cpuTime()
	end := time.Now().Add(*dur)
	done := func() bool { return !time.Now().Before(end) }
	if *count > 0 {
		done = func() bool { return len(lats) == *count }
	}
	for !done() {
		t0 := time.Now()
		if err := run(); err != nil {
			fail(err)
		}
		lats = append(lats, time.Since(t0))
	}
	clientCPU := (cpuTime() - cpu0).Microseconds() / int64(len(lats))
	perQuery, postP50 := "-", "-"
	if requests != nil {
		perQuery = strconv.FormatFloat(float64(*requests-before)/float64(len(lats)), 'f', 3, 64)
	}
	if posts != nil {
		postP50 = strconv.FormatInt(percentile(*posts, 0.50), 10)
	}
	fmt.Printf("%d %d %d %s %s %d\n", percentile(lats, 0.50), percentile(lats, 0.99), len(lats), perQuery, postP50, clientCPU)
}

// startTrace starts an execution trace into the file at path; stop ends it and closes the file.
func startTrace(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { trace.Stop(); f.Close() }, nil
}

// cpuTime is the CPU this process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fail(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// percentile is the p-th of durations in microseconds (durations get sorted).
func percentile(durations []time.Duration, p float64) int64 {
	sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
	return durations[int(float64(len(durations)-1)*p)].Microseconds()
}

// serveFloor answers the Trino protocol with fixed documents on addr (see -floor), through
// server: net/http, httplite, or raw (neither); with one, the POST's is the last page.
func serveFloor(addr, server string, one bool) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Println(l.Addr().(*net.TCPAddr).Port)
	base := "http://" + l.Addr().String()
	queued := []byte(`{"id":"q","infoUri":"` + base + `/ui","nextUri":"` + base + `/v1/statement/executing/q/s/1","stats":{"state":"QUEUED"},"warnings":[]}` + "\n")
	last := []byte(`{"id":"q","infoUri":"` + base + `/ui","columns":[{"name":"_col0","type":"integer","typeSignature":{"rawType":"integer","arguments":[]}}],` +
		`"data":[[1]],"stats":{"state":"FINISHED"},"warnings":[]}` + "\n")
	if one {
		queued = last
	}
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
	first, length, err := readHead(br)
	if err != nil {
		return false, err
	}
	_, err = br.Discard(max(length, 0))
	return strings.HasPrefix(first, "POST "), err
}

// readHead reads an HTTP/1.1 message's head: its first line and its Content-Length (-1: none).
func readHead(br *bufio.Reader) (first string, length int, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return "", 0, err
	}
	first, length = string(line), -1
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return "", 0, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			return first, length, nil
		}
		if name, value, ok := bytes.Cut(line, []byte(":")); ok && strings.EqualFold(string(name), "Content-Length") {
			if length, err = strconv.Atoi(string(bytes.TrimSpace(value))); err != nil {
				return "", 0, err
			}
		}
	}
}

type trinoClient struct {
	base, user string
	agent      string // User-Agent
	exchange   func(method, url, body string) (status int, answer []byte, err error)
	requests   int             // HTTP requests sent
	posts      []time.Duration // each statement's POST exchange
}

func newTrino(base, user, client, agent string) (*trinoClient, error) {
	c := &trinoClient{base: strings.TrimRight(base, "/"), user: user, agent: agent}
	switch client {
	case "http":
		// One connection, kept alive between queries, as trino-go-client keeps its own.
		tr := &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1, DisableCompression: true}
		c.exchange = (&httpClient{c: c, http: &http.Client{Transport: tr}}).exchange
	case "raw":
		r, err := dialRaw(c)
		if err != nil {
			return nil, err
		}
		c.exchange = r.exchange
	default:
		return nil, fmt.Errorf("-client %q: want http, raw or driver", client)
	}
	return c, nil
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
	var rows [][]any
	method, url, body := http.MethodPost, c.base+"/v1/statement", sql
	for start := time.Now(); url != ""; {
		doc, err := c.do(method, url, body)
		if method == http.MethodPost {
			c.posts = append(c.posts, time.Since(start))
		}
		if err != nil {
			return err
		}
		if doc.Error != nil {
			return fmt.Errorf("query failed: %s", doc.Error.Message)
		}
		rows = append(rows, doc.Data...)
		method, url, body = http.MethodGet, doc.NextURI, ""
	}
	if len(rows) != 1 || len(rows[0]) != 1 || fmt.Sprint(rows[0][0]) != "1" {
		return fmt.Errorf("rows %v, want [[1]]", rows)
	}
	return nil
}

func (c *trinoClient) do(method, url, body string) (*document, error) {
	c.requests++
	status, answer, err := c.exchange(method, url, body)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %d: %s", method, url, status, bytes.TrimSpace(answer))
	}
	var doc document
	dec := json.NewDecoder(bytes.NewReader(answer))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	return &doc, nil
}

// httpClient sends a client's requests with net/http's client (-client http).
type httpClient struct {
	c    *trinoClient
	http *http.Client
}

func (h *httpClient) exchange(method, url, body string) (int, []byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-Trino-User", h.c.user)
	req.Header.Set("X-Trino-Source", "benchtrino")
	req.Header.Set("User-Agent", h.c.agent)
	resp, err := h.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	return resp.StatusCode, answer, err
}

// rawClient speaks HTTP/1.1 itself on one TCP connection (-client raw): each request in one
// write, each answer read from a bufio.Reader. It reads only answers with a Content-Length
// (what the daemon and the floors send these requests) and follows only links to its base.
type rawClient struct {
	c    *trinoClient
	host string
	conn net.Conn
	br   *bufio.Reader
	out  []byte
}

func dialRaw(c *trinoClient) (*rawClient, error) {
	host, ok := strings.CutPrefix(c.base, "http://")
	if !ok || strings.Contains(host, "/") {
		return nil, fmt.Errorf("-client raw: %q is not http://HOST:PORT", c.base)
	}
	conn, err := net.Dial("tcp", host)
	if err != nil {
		return nil, err
	}
	return &rawClient{c: c, host: host, conn: conn, br: bufio.NewReader(conn)}, nil
}

func (r *rawClient) exchange(method, url, body string) (int, []byte, error) {
	path, ok := strings.CutPrefix(url, r.c.base)
	if !ok {
		return 0, nil, fmt.Errorf("-client raw: %s is not under %s", url, r.c.base)
	}
	b := append(r.out[:0], method...)
	b = append(append(append(b, ' '), path...), " HTTP/1.1\r\nHost: "...)
	b = append(append(b, r.host...), "\r\nX-Trino-User: "...)
	b = append(append(b, r.c.user...), "\r\nX-Trino-Source: benchtrino\r\nUser-Agent: "...)
	b = append(append(b, r.c.agent...), "\r\n"...)
	if body != "" {
		b = strconv.AppendInt(append(b, "Content-Length: "...), int64(len(body)), 10)
		b = append(b, "\r\n"...)
	}
	b = append(append(b, "\r\n"...), body...)
	r.out = b
	if _, err := r.conn.Write(b); err != nil {
		return 0, nil, err
	}
	return readAnswer(r.br)
}

// readAnswer reads one HTTP/1.1 answer with a Content-Length: its status and body.
func readAnswer(br *bufio.Reader) (int, []byte, error) {
	first, length, err := readHead(br)
	if err != nil {
		return 0, nil, err
	}
	fields := strings.Fields(first)
	if len(fields) < 2 {
		return 0, nil, fmt.Errorf("status line %q", first)
	}
	status, err := strconv.Atoi(fields[1])
	if err != nil {
		return 0, nil, fmt.Errorf("status line %q", first)
	}
	if length < 0 {
		return 0, nil, errors.New("-client raw: an answer without a Content-Length")
	}
	answer := make([]byte, length)
	_, err = io.ReadFull(br, answer)
	return status, answer, err
}

// driverQuery runs q through trino-go-client on one database/sql connection (-client driver),
// counting in *requests the HTTP requests the client sends (a POST, its GETs, any DELETE).
func driverQuery(base, user, q string, requests *int) (func() error, error) {
	u, err := neturl.Parse(base)
	if err != nil {
		return nil, err
	}
	u.User = neturl.User(user)
	counting := &http.Client{Transport: countingTransport{http.DefaultTransport, requests}}
	if err := trino.RegisterCustomClient("benchtrino", counting); err != nil {
		return nil, err
	}
	u.RawQuery = "source=benchtrino&custom_client=benchtrino"
	db, err := sql.Open("trino", u.String())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return func() error {
		var v int
		if err := db.QueryRow(q).Scan(&v); err != nil {
			return err
		}
		if v != 1 {
			return fmt.Errorf("got %d, want 1", v)
		}
		return nil
	}, nil
}

// countingTransport counts the requests it sends. The driver's goroutines send one request at a
// time for a statement on one connection, and the count is read between statements.
type countingTransport struct {
	http.RoundTripper
	n *int
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	*c.n++
	return c.RoundTripper.RoundTrip(r)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchtrino:", err)
	os.Exit(1)
}
