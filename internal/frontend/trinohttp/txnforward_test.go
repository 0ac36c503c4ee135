package trinohttp

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/forward"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

// livePeers is a worker directory filled once the workers listen.
type livePeers struct {
	mu    sync.Mutex
	peers []workerapi.Peer
}

func (p *livePeers) Peers() []workerapi.Peer {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peers
}

func (*livePeers) RefreshPeers(context.Context) error { return nil }

// roundRobin is a load balancer in front of addrs: each statement (POST) goes to the next, the
// client's Host kept (the links a worker writes point back at the balancer), its polls where
// the latest went.
func roundRobin(t *testing.T, addrs ...string) string {
	var n atomic.Int64
	lb := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		next := n.Load()
		if pr.In.Method == http.MethodPost {
			next = n.Add(1)
		}
		pr.SetURL(&url.URL{Scheme: "http", Host: addrs[next%int64(len(addrs))]})
		pr.Out.Host = pr.In.Host
	}})
	t.Cleanup(lb.Close)
	return strings.TrimPrefix(lb.URL, "http://")
}

// A Trino transaction lives on the worker that began it: behind a load balancer that sends
// each request of the client to the next worker of a pool, each of its statements reaches
// that worker (forwarded by the owner id its transaction id begins with), through
// trino-go-client, and with HTTP Basic credentials (sent on to the owner once it proved the
// worker secret: the statement's body is sent again). When the owner is gone, the statement
// fails with UNKNOWN_TRANSACTION saying so.
func TestTransactionReachesItsWorkerBehindABalancer(t *testing.T) {
	const secret = "fleet-secret-for-transactions"
	backend := postgresBackend(t)
	frontendtest.Exec(t, backend.Engine, "CREATE TABLE txf (id integer)")
	dir := &livePeers{}
	var servers []*testServer
	for _, name := range []string{"w1", "w2"} {
		advertised := func() map[string]string { // what the directory lists for this worker
			for _, p := range dir.Peers() {
				if p.Name == name {
					return p.Endpoints
				}
			}
			return nil
		}
		fwd, err := forward.New(forward.Options{Env: env.Real(slog.New(slog.DiscardHandler)), Name: name, Secret: secret,
			Directory: dir, Client: forward.NewClient(nil), Advertised: advertised})
		if err != nil {
			t.Fatal(err)
		}
		servers = append(servers, startServer(t, backend, Options{PollWait: 50 * time.Millisecond, Forward: fwd,
			Auth: passwords{"bob": "pw"}}))
	}
	dir.mu.Lock()
	for i, name := range []string{"w1", "w2"} {
		dir.peers = append(dir.peers, workerapi.Peer{Name: name, Healthy: true, Endpoints: map[string]string{forward.Trino: "http://" + servers[i].addr}})
	}
	dir.mu.Unlock()
	lb := roundRobin(t, servers[0].addr, servers[1].addr)

	auth := http.Header{"Authorization": {"Basic Ym9iOnB3"}, "X-Trino-User": {"bob"}} // bob:pw
	with := func(id string) http.Header {
		h := auth.Clone()
		h.Set(txHeader, id)
		return h
	}
	_, qerr, h := runTrino(t, lb, "START TRANSACTION", with(noTransaction))
	id := h.Get(txStartedHeader)
	if qerr != nil || id == "" {
		t.Fatalf("START TRANSACTION: %+v, id %q, headers %v", qerr, id, h)
	}
	for i := range 3 { // each lands on one worker, then the other
		if _, qerr, _ := runTrino(t, lb, "INSERT INTO txf VALUES (1)", with(id)); qerr != nil {
			t.Fatalf("INSERT %d in the transaction: %s %s", i, qerr.ErrorName, qerr.Message)
		}
	}
	rows, qerr, _ := runTrino(t, lb, "SELECT count(*) FROM txf", auth)
	if qerr != nil || len(rows) != 1 || rows[0][0] != float64(0) {
		t.Fatalf("outside the transaction before COMMIT: %v %v", rows, qerr)
	}
	if _, qerr, h = runTrino(t, lb, "COMMIT", with(id)); qerr != nil || h.Get(txClearHeader) != "true" {
		t.Fatalf("COMMIT: %v, headers %v", qerr, h)
	}
	if rows, qerr, _ = runTrino(t, lb, "SELECT count(*) FROM txf", auth); qerr != nil || rows[0][0] != float64(3) {
		t.Fatalf("after COMMIT: %v %v", rows, qerr)
	}

	_ = trino.RegisterCustomClient("txn-forward", &http.Client{Transport: basicAuth{"bob", "pw"}})
	db := openTrino(t, trino.Config{ServerURI: "http://bob@" + lb, CustomClientName: "txn-forward"})
	db.SetMaxOpenConns(1)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := tx.Exec("DELETE FROM txf WHERE id = 1"); err != nil {
			t.Fatalf("go client's DELETE %d in the transaction: %v", i, err)
		}
	}
	if err := tx.Rollback(); err != nil {
		t.Fatalf("go client's ROLLBACK: %v", err)
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM txf").Scan(&n); err != nil || n != 3 {
		t.Fatalf("after the go client's ROLLBACK: %d, %v", n, err)
	}

	_, _, h = runTrino(t, servers[1].addr, "START TRANSACTION", with(noTransaction))
	gone := h.Get(txStartedHeader)
	servers[1].Close()
	dir.mu.Lock()
	dir.peers = dir.peers[:1] // the control plane no longer lists w2
	dir.mu.Unlock()
	_, qerr, _ = runTrino(t, servers[0].addr, "INSERT INTO txf VALUES (2)", with(gone))
	if qerr == nil || qerr.ErrorName != "UNKNOWN_TRANSACTION" || !strings.Contains(qerr.Message, "is gone") {
		t.Fatalf("a statement of a gone worker's transaction: %+v", qerr)
	}
}

// basicAuth sends every request with HTTP Basic credentials (trino-go-client sends a password
// only over https).
type basicAuth struct{ user, password string }

func (b basicAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.SetBasicAuth(b.user, b.password)
	return http.DefaultTransport.RoundTrip(r)
}
