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
// database, watching), and its sweeper carries the watch of theirs.
func TestOrderedReplicasAnnounceFreedLeases(t *testing.T) {
	a := newPGAuthority(t, true, nil)
	if a.sweeper.Watch == nil {
		t.Fatal("an ordered control plane on Postgres does not watch the other replicas' freed leases")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	heard := make(chan []string, 4)
	go func() { _ = pgcapacity.New(a.pool).WatchFreed(ctx, func(c []string) { heard <- c }) }()
	awaitListener(t, a, pgcapacity.FreedChannel, 1)
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

// awaitListener waits until n connections to a's database LISTEN on channel.
func awaitListener(t *testing.T, a *pgAuthority, channel string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var got int
		if err := a.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND query = 'LISTEN `+channel+`'`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections LISTEN on %s, want %d", got, channel, n)
		}
	}
}

// TestRetryReplicasAnnounceDenials: a control plane in retry mode on the Postgres store
// announces the denials made through it to the other replicas' contention watches (here a
// second store on its database, watching), and its sweeper carries the watch of theirs.
func TestRetryReplicasAnnounceDenials(t *testing.T) {
	a := newPGAuthority(t, false, nil)
	if a.sweeper.Watch == nil {
		t.Fatal("a control plane in retry mode on Postgres does not watch the other replicas' denials")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	heard := make(chan string, 4)
	go func() { _ = pgcapacity.New(a.pool).WatchDenied(ctx, func() {}, func(c string) { heard <- c }) }()
	awaitListener(t, a, pgcapacity.DeniedChannel, 1)
	w1, w2 := a.register("w1"), a.register("w2")
	a.grant(w1, `{"cluster":"pg"}`)
	a.grant(w1, `{"cluster":"pg"}`)
	if code, got, raw := a.acquireLease(w2, `{"cluster":"pg"}`); code != 200 || got.Granted {
		t.Fatalf("w2's acquire over the cap of 2: %d %s, want denied", code, raw)
	}
	select {
	case c := <-heard:
		if c != "pg" {
			t.Fatalf("the other replica heard a denial of %q, want pg", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other replica never heard of the denial")
	}
}
