package fleettest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/trinodb/trino-go-client/trino"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/forward"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// forwardFleet is a control plane and two workers with Trino and Flight SQL frontends in front
// of one PostgreSQL cluster that admits one query at a time, and a front that sends each request
// (HTTP) or connection (Flight) to the next worker in turn, as a Service would.
type forwardFleet struct {
	*fleet
	names  []string
	trino  map[string]string // worker -> Trino frontend address
	flight map[string]string
	ops    map[string]string
	procs  map[string]*daemontest.Proc
}

func newForwardFleet(t *testing.T) *forwardFleet {
	engineURL, db := engineDatabases(t)
	f := &fleet{t: t, apiAddr: daemontest.FreeAddr(t)}
	f.cpConfig = daemontest.WriteFile(t, "cp.yaml", f.controlPlaneYAML(db, fmt.Sprintf(`clusters:
  - {name: pg, engine: postgres, endpoint: %q, database: %q, credentials: {user: %q}, maxRunningQueries: 1}
clusterGroups:
  - {name: main, members: [pg], maxQueuedQueries: 10, capacityWaitTimeoutSecs: 20}
routingFallback: main
settings: {security: {trustLoopback: true}}
`, engineURL.Host, strings.TrimPrefix(engineURL.Path, "/"), engineURL.User.Username())))
	f.startControlPlane()
	ff := &forwardFleet{fleet: f, names: []string{"w1", "w2"}, trino: map[string]string{}, flight: map[string]string{},
		ops: map[string]string{}, procs: map[string]*daemontest.Proc{}}
	for _, name := range ff.names {
		addrs := daemontest.FreeAddrs(t, 3)
		cfg := daemontest.WriteFile(t, name+".yaml", fmt.Sprintf(`queryflux:
  role: worker
  controlPlane: {url: "http://%s", secret: %q}
  frontends:
    trino: {enabled: true, listen: %q}
    flightsql: {enabled: true, listen: %q}
`, f.apiAddr, workerSecret, addrs[0], addrs[1]))
		ff.trino[name], ff.flight[name], ff.ops[name] = addrs[0], addrs[1], addrs[2]
		ff.procs[name] = daemontest.Start(t, name, "serve", "--config", cfg, "--name", name, "--ops-listen", addrs[2],
			"--heartbeat-interval", heartbeat.String(), "--allow-short-timeouts")
	}
	for _, name := range ff.names {
		db := frontendtest.OpenTrino(t, trino.Config{ServerURI: "http://queryflux@" + ff.trino[name]})
		daemontest.EventuallyNil(t, 30*time.Second, func() error { return db.QueryRow("SELECT 1").Scan(new(int)) })
	}
	return ff
}

// roundRobin is an HTTP front that sends each request to the next of backends, keeping the
// client's Host (so the links workers answer with point back at the front).
func roundRobin(t *testing.T, backends ...string) string {
	var n atomic.Uint64
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(&url.URL{Scheme: "http", Host: backends[n.Add(1)%uint64(len(backends))]})
		pr.Out.Host = pr.In.Host
	}}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// forwards reads a worker's queryflux_forwards_total for protocol and outcome.
func (ff *forwardFleet) forwards(name, protocol, outcome string) int {
	_, body := getBody(ff.t, "http://"+ff.ops[name]+"/metrics")
	re := regexp.MustCompile(`queryflux_forwards_total\{outcome="` + outcome + `",protocol="` + protocol + `"\} (\d+)`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

const manyRows = "SELECT i, 'row ' || i AS s FROM generate_series(0, 4999) i ORDER BY i"

// TestFollowUpsReachTheOwningWorker runs one fleet through three stories: pages through
// a front that alternates workers, a cancel sent to the wrong worker, and the owner killed.
func TestFollowUpsReachTheOwningWorker(t *testing.T) {
	ff := newForwardFleet(t)
	t.Run("pages", ff.trinoPages)
	t.Run("cancel", ff.trinoCancel)
	t.Run("flightTicket", ff.flightTicket)
	t.Run("ownerKilled", ff.trinoOwnerKilled)
}

// roundRobinTCP is a TCP front that sends each connection to the next of backends.
func roundRobinTCP(t *testing.T, backends ...string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", backends[n%len(backends)])
			if err != nil {
				c.Close()
				continue
			}
			go func() { _, _ = io.Copy(b, c); b.Close() }()
			go func() { _, _ = io.Copy(c, b); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// flightTicket executes on one connection through the front and fetches the ticket on a second
// one, which the front gives the other worker.
func (ff *forwardFleet) flightTicket(t *testing.T) {
	front := roundRobinTCP(t, ff.flight["w1"], ff.flight["w2"])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c1, c2 := frontendtest.DialFlight(t, front), frontendtest.DialFlight(t, front)
	info, err := c1.Execute(ctx, manyRows)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c2.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatalf("DoGet through the other worker: %v", err)
	}
	defer r.Release()
	n := 0
	for r.Next() {
		b := r.RecordBatch()
		for i := 0; i < int(b.NumRows()); i++ {
			if got, want := b.Column(1).ValueStr(i), "row "+strconv.Itoa(n); got != want {
				t.Fatalf("row %d: %q, want %q", n, got, want)
			}
			n++
		}
	}
	if err := r.Err(); err != nil || n != 5000 {
		t.Fatalf("%d rows, err %v", n, err)
	}
	if ff.forwards("w1", "flightsql", "ok")+ff.forwards("w2", "flightsql", "ok") != 1 {
		t.Fatal("the DoGet was not forwarded")
	}
}

func (ff *forwardFleet) trinoPages(t *testing.T) {
	front := roundRobin(t, ff.trino["w1"], ff.trino["w2"])
	db := frontendtest.OpenTrino(t, trino.Config{ServerURI: "http://queryflux@" + front})
	for round := range 4 { // each statement starts on the next worker; its pages alternate
		rows, err := db.Query(manyRows)
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for rows.Next() {
			var i int
			var s string
			if err := rows.Scan(&i, &s); err != nil {
				t.Fatal(err)
			}
			if i != want || s != "row "+strconv.Itoa(i) {
				t.Fatalf("round %d: row %d is (%d, %q)", round, want, i, s)
			}
			want++
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("round %d after %d rows: %v", round, want, err)
		}
		if want != 5000 {
			t.Fatalf("round %d: %d rows, want 5000", round, want)
		}
	}
	if n := ff.forwards("w1", "trino", "ok") + ff.forwards("w2", "trino", "ok"); n < 4 {
		t.Fatalf("%d follow-ups forwarded; pages that reached the wrong worker were not forwarded", n)
	}
}

// statement is the part of a Trino answer these tests read.
type statement struct {
	ID      string `json:"id"`
	NextURI string `json:"nextUri"`
	Data    [][]any
	Error   *struct{ Message string }
}

func trinoCall(t *testing.T, method, uri, body string) (int, statement, string) {
	t.Helper()
	req, err := http.NewRequest(method, uri, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Trino-User", "queryflux")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, uri, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var st statement
	_ = json.Unmarshal(raw, &st)
	return resp.StatusCode, st, string(raw)
}

// at points a nextUri at another worker's address.
func at(uri, addr string) string {
	u, _ := url.Parse(uri)
	u.Host = addr
	return u.String()
}

// startBlocked starts a large query on w1 and polls it until rows flow: it then holds the
// cluster's only slot while its client does not read on.
func (ff *forwardFleet) startBlocked(t *testing.T) statement {
	_, st, raw := trinoCall(t, "POST", "http://"+ff.trino["w1"]+"/v1/statement", "SELECT i FROM generate_series(1, 3000000) i")
	for st.Data == nil {
		if st.NextURI == "" {
			t.Fatalf("the query ended before returning rows: %s", raw)
		}
		var code int
		if code, st, raw = trinoCall(t, "GET", st.NextURI, ""); code != 200 {
			t.Fatalf("poll: %d %s", code, raw)
		}
	}
	if !strings.HasSuffix(st.ID, "_"+forward.OwnerID("w1")) {
		t.Fatalf("query id %q does not name its owner", st.ID)
	}
	return st
}

func (ff *forwardFleet) trinoCancel(t *testing.T) {
	st := ff.startBlocked(t)
	// w2 does not hold the query: its DELETE goes to w1, which stops it and frees the slot.
	if code, _, raw := trinoCall(t, "DELETE", at(st.NextURI, ff.trino["w2"]), ""); code != http.StatusNoContent {
		t.Fatalf("DELETE through w2: %d %s", code, raw)
	}
	if code, _, raw := trinoCall(t, "GET", at(st.NextURI, ff.trino["w2"]), ""); code != http.StatusNotFound {
		t.Fatalf("poll of the cancelled query through w2: %d %s", code, raw)
	}
	// The only slot is free again: a query through w2 runs instead of waiting for it.
	db := frontendtest.OpenTrino(t, trino.Config{ServerURI: "http://queryflux@" + ff.trino["w2"]})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT 42").Scan(&n); err != nil || n != 42 {
		t.Fatalf("query after the cancel: %v %d (the cancelled query still holds the slot?)", err, n)
	}
	if ff.forwards("w2", "trino", "ok") < 2 {
		t.Fatal("w2 did not count its forwards")
	}
}

func (ff *forwardFleet) trinoOwnerKilled(t *testing.T) {
	st := ff.startBlocked(t)
	ff.procs["w1"].Kill(t)
	// A Flight SQL ticket naming the dead worker (the only slot is taken, so none is issued):
	// NotFound, not a hang.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ticket, err := fsql.CreateStatementQueryTicket([]byte("0123abcd." + forward.OwnerID("w1")))
	if err != nil {
		t.Fatal(err)
	}
	r, err := frontendtest.DialFlight(t, ff.flight["w2"]).DoGet(ctx, &flight.Ticket{Ticket: ticket})
	if err == nil {
		r.Release()
	}
	if status.Code(err) != codes.NotFound {
		t.Fatalf("DoGet of a dead owner's ticket: %v", err)
	}
	// No hang: the owner does not answer, and the client hears "Query not found" at once.
	done := make(chan struct{})
	go func() {
		defer close(done)
		code, _, raw := trinoCall(t, "GET", at(st.NextURI, ff.trino["w2"]), "")
		if code != http.StatusNotFound || !strings.Contains(raw, "Query not found") {
			t.Errorf("poll of a dead owner's query: %d %s", code, raw)
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the poll of a dead owner's query hangs")
	}
	if ff.forwards("w2", "trino", "owner_unreachable")+ff.forwards("w2", "trino", "owner_unknown") == 0 {
		t.Fatal("the failed forward was not counted")
	}
}
