package controlplane

import (
	"context"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/capacity/pgcapacity"
)

// TestOrderedReplicasAnnounceFreedLeases: a control plane in ordered mode on the Postgres store
// announces the leases released through it to the other replicas (here a second store on its
// database, watching), and its sweeper carries the watch of theirs. In retry mode nobody waits
// at a control plane: there is no watch.
func TestOrderedReplicasAnnounceFreedLeases(t *testing.T) {
	if a := newPGAuthority(t, false, nil); a.sweeper.Watch != nil {
		t.Fatal("a control plane in retry mode watches freed leases")
	}
	a := newPGAuthority(t, true, nil)
	if a.sweeper.Watch == nil {
		t.Fatal("an ordered control plane on Postgres does not watch the other replicas' freed leases")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	heard := make(chan []string, 4)
	go func() { _ = pgcapacity.New(a.pool).WatchFreed(ctx, func(c []string) { heard <- c }) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var n int
		if err := a.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND query = 'LISTEN `+pgcapacity.FreedChannel+`'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the other replica's LISTEN never showed")
		}
	}
	w := a.register("w")
	l := a.grant(w, `{"cluster":"pg"}`)
	if code, raw := a.do("POST", capacity.PathReleaseBatch, w, capacity.MediaJSON, `{"leases":[`+refJSON(l)+`]}`); code != 200 {
		t.Fatalf("release: %d %s", code, raw)
	}
	select {
	case c := <-heard:
		if len(c) != 1 || c[0] != "pg" {
			t.Fatalf("the other replica heard %q, want [pg]", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other replica never heard of the release")
	}
}
