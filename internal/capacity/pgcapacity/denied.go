package pgcapacity

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
)

// DeniedChannel is the channel on which MarkDenied announces a denial to the other replicas'
// contention watches, when NotifyDenied is on (capacity.DenialWatcher). A notice is the
// denying store's origin and then the cluster, one per line (a cluster name is checked short,
// far under PostgreSQL's 8000-byte payload limit).
const DeniedChannel = "queryflux_capacity_denied"

// deniedNoticeEvery is how long after announcing a denial of a holder on a cluster the store
// leaves out the next ones of the same holder and cluster: a waiting worker is denied every
// capacity.RetryAskEvery (20 a second), and each NOTIFY is a write to PostgreSQL's notification
// queue, serialized with every other notifying commit. Half of ContendedFor is safe: every
// watch held at the announced denial was woken, and a watch that comes within this finds that
// denial in the waiting record, which keeps it ContendedFor (capacity.DenialWatcher).
const deniedNoticeEvery = capacity.ContendedFor / 2

// deniedNotices remembers when this store last announced a denial of each holder on each
// cluster (a monotonic reading of the local clock: only the interval matters).
type deniedNotices struct {
	mu   sync.Mutex
	last map[[2]string]time.Time
}

// due reports whether a denial of holder on cluster at now is to be announced, and if so
// counts it as announced (undo takes it back when the announcing call failed).
func (d *deniedNotices) due(cluster, holder string, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	key := [2]string{cluster, holder}
	if t, ok := d.last[key]; ok && now.Sub(t) < deniedNoticeEvery {
		return false
	}
	if d.last == nil {
		d.last = map[[2]string]time.Time{}
	}
	if len(d.last) >= capacity.WaitersMax {
		for k, t := range d.last { //determinism:ok deleting the old ones does not depend on order
			if now.Sub(t) >= deniedNoticeEvery {
				delete(d.last, k)
			}
		}
	}
	d.last[key] = now
	return true
}

func (d *deniedNotices) undo(cluster, holder string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.last, [2]string{cluster, holder})
}

// NotifyDenied implements capacity.DenialWatcher: from now on MarkDenied announces a denial
// on DeniedChannel, in the same statement (delivered when it commits), unless it announced
// one of the same holder and cluster less than deniedNoticeEvery before.
func (s *Store) NotifyDenied() { s.notifyDenied.Store(true) }

// WatchDenied implements capacity.DenialWatcher: it LISTENs on DeniedChannel on a connection
// taken out of the pool, calls listening once it does, and then denied with the cluster of
// every other store's notice, until ctx ends or the connection fails.
func (s *Store) WatchDenied(ctx context.Context, listening func(), denied func(cluster string)) error {
	if err := s.listen(ctx, DeniedChannel, listening, denied); err != nil {
		return fmt.Errorf("pgcapacity: watch denials: %w", err)
	}
	return nil
}

var _ capacity.DenialWatcher = (*Store)(nil)
