package mysqlwire

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// uncontendedStore is a lease client that always says nobody else wants the cluster, so a
// LeaseGuard over it reuses its leases, as a worker's does while it has its cluster to itself.
type uncontendedStore struct{ *capacity.Memory }

func (s uncontendedStore) AcquireContended(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time, release []capacity.LeaseRef) (capacity.Lease, bool, error) {
	if _, err := s.ReleaseBatch(ctx, release); err != nil {
		return capacity.Lease{}, true, err
	}
	l, err := s.Acquire(ctx, cluster, holder, limit, ttl, now)
	return l, false, err
}

// TestLoopStepsAsideForLeaseTaggedStatements: a worker's statements run under capacity leases
// and carry their tag, which the event loop cannot write, so each one the loop admits it hands
// to the session's goroutine. After loopHandOffsMax of them in a row the session leaves the loop
// for loopBackoff commands instead of paying the hand-over for every statement (it did once the
// worker's leases were reused without asking the control plane: half the qps of a worker's
// MySQL sessions). 40 statements: at most 4 handed over, the rest run on the goroutine.
func TestLoopStepsAsideForLeaseTaggedStatements(t *testing.T) {
	eng, _, _ := frontendtest.MariaDB(t)
	e := env.Real(slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: e, Client: uncontendedStore{capacity.NewMemory()}, Holder: "w"})
	if err != nil {
		t.Fatal(err)
	}
	g.Start(ctx)
	core := proxy.New(proxy.Options{Env: e, Registerer: prometheus.NewRegistry(), Guard: g})
	rt, err := proxy.NewRuntime(proxy.RuntimeSpec{
		Clusters: []proxy.ClusterSpec{{Name: "maria", Enabled: true, MaxRunningQueries: 8, Engine: eng}},
		Groups:   []proxy.GroupSpec{{Name: "main", Members: []proxy.MemberSpec{{Cluster: "maria"}}, MaxQueuedQueries: 100}},
		Fallback: "main",
	})
	if err != nil {
		t.Fatal(err)
	}
	core.Activate(rt)
	addr := startServer(t, core, Options{})
	c := oneConn(t, openDB(t, addr, testUser, "", "", ""))
	s := serverOf(t, addr)
	before := s.LoopHandOvers()
	for i := range 40 {
		var n int
		if err := c.QueryRowContext(ctx, "SELECT 7").Scan(&n); err != nil || n != 7 {
			t.Fatalf("statement %d: %d, %v", i, n, err)
		}
	}
	// At most loopHandOffsMax: an admission that had to wait (no idle lease: the first, or one
	// after a gap longer than the idle hold on a loaded machine) counts toward the same bound.
	if got := s.LoopHandOvers() - before; got > loopHandOffsMax {
		t.Fatalf("the loop handed %d of 40 tagged statements over: want at most %d, then the session off the loop", got, loopHandOffsMax)
	}
}
