package pgcapacity

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/queryflux/queryflux/internal/capacity"
)

// FreedChannel is the channel on which release batches announce the clusters whose leases they
// freed, when the ordered queue is on (capacity.FreedWatcher). A notice is the freeing store's
// origin and then each cluster, one per line; capacity.AllClusters when they would not fit.
const FreedChannel = "queryflux_capacity_freed"

// noticeBytesMax keeps a notice under PostgreSQL's 8000-byte payload limit.
const noticeBytesMax = 7900

// newOrigin names one store among the replicas (random: two replicas on one host must differ).
func newOrigin() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// freedNotice is the payload announcing that leases of clusters were freed.
func freedNotice(origin string, clusters []string) string {
	notice := origin + "\n" + strings.Join(clusters, "\n")
	if len(notice) > noticeBytesMax {
		return origin + "\n" + capacity.AllClusters
	}
	return notice
}

// NotifyFreed implements capacity.FreedWatcher: from now on every release batch announces its
// clusters on FreedChannel, in its own transaction.
func (s *Store) NotifyFreed() { s.notifyFreed.Store(true) }

// WatchFreed implements capacity.FreedWatcher: it LISTENs on FreedChannel on a connection taken
// out of the pool and calls freed with the clusters of every other store's notice, until ctx
// ends or the connection fails.
func (s *Store) WatchFreed(ctx context.Context, freed func(clusters []string)) error {
	err := s.listen(ctx, FreedChannel, func() {}, func(clusters string) { freed(strings.Split(clusters, "\n")) })
	if err != nil {
		return fmt.Errorf("pgcapacity: watch freed leases: %w", err)
	}
	return nil
}

// listen LISTENs on channel on a connection taken out of the pool, calls listening once it
// does, and then notice with the rest of every other store's notice (after its origin line),
// until ctx ends or the connection fails.
func (s *Store) listen(ctx context.Context, channel string, listening func(), notice func(rest string)) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	listener := conn.Hijack() // it will carry a LISTEN: never back to the pool
	defer listener.Close(context.WithoutCancel(ctx))
	if _, err := listener.Exec(ctx, "LISTEN "+channel); err != nil {
		return err
	}
	listening()
	for {
		n, err := listener.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		origin, rest, ok := strings.Cut(n.Payload, "\n")
		if ok && origin != s.origin && rest != "" {
			notice(rest)
		}
	}
}

var _ capacity.FreedWatcher = (*Store)(nil)
