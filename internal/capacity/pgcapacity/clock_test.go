package pgcapacity_test

import (
	"context"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/node/env"
)

// skewedEnv is a control plane's Env whose wall clock is off by skew (an NTP step, or a
// replica whose clock drifted).
type skewedEnv struct {
	env.Env
	skew time.Duration
}

func (e skewedEnv) Now() time.Time { return e.Env.Now().Add(e.skew) }

// TestSkewedReplicasCannotShortenALease: two control-plane replicas share one lease table, one
// clock an hour behind (it stamps), the other an hour ahead (it sweeps). The lease is stamped
// and swept by the database's clock: the sweeper's round revokes nothing, the lease's expiry is
// the database's now plus its TTL, and the sweep lock of the slow replica holds against the
// fast one.
func TestSkewedReplicasCannotShortenALease(t *testing.T) {
	slow, fast, pool := twoReplicas(t)
	ctx := context.Background()
	slowEnv := skewedEnv{env.Real(nil), -time.Hour}
	fastEnv := skewedEnv{env.Real(nil), time.Hour}

	const ttl = time.Minute
	l, err := slow.Acquire(ctx, "c1", "w1", 2, ttl, slowEnv.Now())
	if err != nil {
		t.Fatal(err)
	}
	var dbNow time.Time
	if err := pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&dbNow); err != nil {
		t.Fatal(err)
	}
	if left := l.ExpiresAt.Sub(dbNow); left <= 0 || left > ttl {
		t.Fatalf("lease expires %v after the database's now, want in (0, %v]: stamped by a caller's clock", left, ttl)
	}
	sw := &capacity.Sweeper{Env: fastEnv, Store: fast, Locks: fast, Owner: "fast"}
	freed, err := sw.SweepOnce(ctx, time.Minute)
	if err != nil || len(freed) != 0 {
		t.Fatalf("sweep by the replica an hour ahead freed %+v (%v): the lease was shortened", freed, err)
	}
	ls, err := fast.List(ctx, "c1")
	if err != nil || len(ls) != 1 || ls[0].Revoked {
		t.Fatalf("after the fast replica's sweep: %+v %v, want the lease held and not revoked", ls, err)
	}
	if _, err := fast.Renew(ctx, l.Ref().As("w1"), ttl, fastEnv.Now()); err != nil {
		t.Fatalf("renewal through the fast replica: %v", err)
	}
	// The sweep lock: the fast replica took it for a minute of the database's clock; the slow
	// one cannot take it over, whatever its own clock says.
	if _, err := slow.AcquireSweepLock(ctx, capacity.SweepLockName, "slow", time.Minute, slowEnv.Now()); err == nil {
		t.Fatal("the slow replica took the sweep lock the fast one holds")
	}
}
