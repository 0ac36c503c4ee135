package fleettest

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/daemontest"
)

// TestAStartingWorkerHoldsItsFirstQueries: a worker whose control plane sends its first
// configuration late (1.5 s, through a proxy that holds the first configuration answer) accepts
// a pgx connection at once and runs its query once the configuration arrives, instead of
// refusing the login with 57P03 "not configured yet".
func TestAStartingWorkerHoldsItsFirstQueries(t *testing.T) {
	engineURL, db := engineDatabases(t)
	coordination := "coordination: {mode: controlPlane}"
	f := startEngineControlPlane(t, engineURL, db, coordination, 4, 30)
	const late = 1500 * time.Millisecond
	var held, answered atomic.Int64 // when the first configuration answer was held, and sent (unix ns)
	cp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: f.apiAddr})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, snapshot.PathConfig) && held.CompareAndSwap(0, time.Now().UnixNano()) {
			time.Sleep(late)
			cp.ServeHTTP(w, r)
			answered.Store(time.Now().UnixNano())
			return
		}
		cp.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: slow}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	addr, _ := startPGWorker(t, "w1", ln.Addr().String(), coordination, "")
	daemontest.EventuallyNil(t, 30*time.Second, func() error { // the frontend listens
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	})
	connectedAt := time.Now().UnixNano()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, "postgres://queryflux@"+addr+"/pg?sslmode=disable&connect_timeout=10")
	if err != nil {
		t.Fatalf("a login to a starting worker: %v; want it held until the first configuration is active", err)
	}
	defer conn.Close(ctx)
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("the first query on a starting worker: %d, %v", one, err)
	}
	if a := answered.Load(); a == 0 || connectedAt > a {
		t.Fatalf("the client connected after the first configuration was sent (connected %d, sent %d): the test proves nothing", connectedAt, a)
	}
}
