package history

import (
	"context"
	"time"

	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/node/env"
)

// Pruner is a Store that can forget old records (historyPolicy.retentionDays).
type Pruner interface {
	// Prune deletes the records that started before cutoff and returns how many.
	Prune(ctx context.Context, cutoff time.Time) (int, error)
}

// RetentionIntervalDefault is how often RunRetention prunes.
const RetentionIntervalDefault = time.Hour

// RunRetention prunes p every interval, keeping the records of the last keep() (read at each
// round, so a config change applies without a restart; keep() <= 0 keeps everything). It
// returns when ctx ends. Run it as an Env task on the control plane.
func RunRetention(ctx context.Context, e env.Env, p Pruner, keep func() time.Duration, interval time.Duration) {
	if interval <= 0 {
		interval = RetentionIntervalDefault
	}
	_ = env.Every(ctx, e, interval, func(ctx context.Context) {
		k := keep()
		if k <= 0 {
			return
		}
		n, err := p.Prune(ctx, e.Now().Add(-k))
		switch {
		case err != nil && ctx.Err() == nil:
			e.Logger().Warn("history: pruning old records failed", "err", redact.Error(err))
		case n > 0:
			e.Logger().Info("history: pruned old records", "records", n, "keep", k.String())
		}
	})
}

// Prune implements Pruner.
func (m *Memory) Prune(_ context.Context, cutoff time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.storeStaged()
	kept := make([]held, 0, m.n)
	for i := range m.n {
		at := (m.head + i) % m.n // oldest-inserted first, so the ring stays in order
		if s := m.heldAt(at); fromMicros(s.started).Before(cutoff) {
			m.ids.del(m.keyAt(at))
			continue
		}
		kept = append(kept, *m.heldAt(at))
	}
	n := m.n - len(kept)
	m.chunks, m.n, m.head = nil, 0, 0
	for _, s := range kept {
		m.ids.set(idKey{id: s.id, h: s.h, hex: s.hex}, int32(m.n)) // the kept records move to new slots
		m.grow()
		*m.heldAt(m.n) = s
		m.n++
	}
	return n, nil
}
