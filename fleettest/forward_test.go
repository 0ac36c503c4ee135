package fleettest

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
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
// of one PostgreSQL cluster that admits one query at a time; the tests put a front before them
// that sends each request (HTTP) or connection (Flight) to the next worker in turn, as a
// Service would.
type forwardFleet struct{ *peerFleet }

func newForwardFleet(t *testing.T) *forwardFleet {
	ff := &forwardFleet{newPeerFleet(t, peerFleetOptions{cap: 1, workers: withFrontends(2, "trino", "flightsql"), groups: `clusterGroups:
  - {name: main, members: [pg], maxQueuedQueries: 10, capacityWaitTimeoutSecs: 20}
routingFallback: main`})}
	for _, name := range ff.names {
		db := frontendtest.OpenTrino(t, trino.Config{ServerURI: "http://queryflux@" + ff.addr[name]["trino"]})
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

const manyRows = "SELECT i, 'row ' || i AS s FROM generate_series(0, 4999) i ORDER BY i"

// TestFollowUpsReachTheOwningWorker runs one fleet through three stories: pages through
// a front that alternates workers, a cancel sent to the wrong worker, and the owner killed.
func TestFollowUpsReachTheOwningWorker(t *testing.T) {
	ff := newForwardFleet(t)
	t.Run("pages", ff.trinoPages)
	t.Run("npmTrinoClientPages", ff.npmTrinoPages)
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
	front := roundRobinTCP(t, ff.addr["w1"]["flightsql"], ff.addr["w2"]["flightsql"])
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
	front := roundRobin(t, ff.addr["w1"]["trino"], ff.addr["w2"]["trino"])
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

// npmTrinoPages reads a many-page result through the npm trino-client with the front
// alternating workers: the pages that reach the worker not holding the query are forwarded to
// its owner, and the client reads every row in order.
func (ff *forwardFleet) npmTrinoPages(t *testing.T) {
	dir := frontendtest.NodeClients(t, "trino-client")
	front := roundRobin(t, ff.addr["w1"]["trino"], ff.addr["w2"]["trino"])
	before := ff.forwards("w1", "trino", "ok") + ff.forwards("w2", "trino", "ok")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "trino_auth_probe.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TRINO_SERVER=http://"+front, "TRINO_USER=queryflux", "TRINO_QUERY="+manyRows)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("trino-client: %v %s", err, out)
	}
	var got struct {
		OK    [][]any
		Types []string
		Error string
	}
	if err := json.Unmarshal(out, &got); err != nil || got.Error != "" {
		t.Fatalf("trino-client output %.300s: %v", out, err)
	}
	if len(got.OK) != 5000 {
		t.Fatalf("trino-client read %d rows, want 5000", len(got.OK))
	}
	for i, r := range got.OK {
		if len(r) != 2 || r[0] != float64(i) || r[1] != "row "+strconv.Itoa(i) {
			t.Fatalf("row %d: %v", i, r)
		}
	}
	if after := ff.forwards("w1", "trino", "ok") + ff.forwards("w2", "trino", "ok"); after == before {
		t.Fatal("no follow-up of the trino-client was forwarded: every page reached the owner?")
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
	_, st, raw := trinoCall(t, "POST", "http://"+ff.addr["w1"]["trino"]+"/v1/statement", "SELECT i FROM generate_series(1, 3000000) i")
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
	if code, _, raw := trinoCall(t, "DELETE", at(st.NextURI, ff.addr["w2"]["trino"]), ""); code != http.StatusNoContent {
		t.Fatalf("DELETE through w2: %d %s", code, raw)
	}
	if code, _, raw := trinoCall(t, "GET", at(st.NextURI, ff.addr["w2"]["trino"]), ""); code != http.StatusNotFound {
		t.Fatalf("poll of the cancelled query through w2: %d %s", code, raw)
	}
	// The only slot is free again: a query through w2 runs instead of waiting for it.
	db := frontendtest.OpenTrino(t, trino.Config{ServerURI: "http://queryflux@" + ff.addr["w2"]["trino"]})
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
	ff.kill("w1")
	// A Flight SQL ticket naming the dead worker (the only slot is taken, so none is issued):
	// NotFound, not a hang.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ticket, err := fsql.CreateStatementQueryTicket([]byte("0123abcd." + forward.OwnerID("w1")))
	if err != nil {
		t.Fatal(err)
	}
	r, err := frontendtest.DialFlight(t, ff.addr["w2"]["flightsql"]).DoGet(ctx, &flight.Ticket{Ticket: ticket})
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
		code, _, raw := trinoCall(t, "GET", at(st.NextURI, ff.addr["w2"]["trino"]), "")
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
