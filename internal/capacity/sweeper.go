package capacity

import (
	"context"
	"errors"
	"time"

	"github.com/queryflux/queryflux/node/env"
)

// SweepLockName is the lock control-plane replicas take before sweeping stale leases.
const SweepLockName = "capacity-stale-leases"

// Sweeper reclaims leases whose renewals stopped (ExpiresAt passed by the control plane's
// clock). Several control-plane replicas may run one; the sweep lock lets one sweep at a time.
type Sweeper struct {
	Env   env.Env
	Store CapacityStore
	Locks SweepCoordinator
	Owner string        // this replica's name
	Every time.Duration // default 5 s
}

// Run sweeps every Every until ctx ends. Start it with env.Go.
func (s *Sweeper) Run(ctx context.Context) {
	every := s.Every
	if every <= 0 {
		every = 5 * time.Second
	}
	_ = env.Every(ctx, s.Env, env.Jitter(s.Env.Rand(), every, 0.1), func(ctx context.Context) {
		_, _ = s.SweepOnce(ctx, 2*every)
	})
}

// SweepOnce takes the sweep lock for lockTTL and, if granted, frees every expired lease. It
// returns the leases freed.
func (s *Sweeper) SweepOnce(ctx context.Context, lockTTL time.Duration) ([]Lease, error) {
	if _, err := s.Locks.AcquireSweepLock(ctx, SweepLockName, s.Owner, lockTTL, s.Env.Now()); err != nil {
		if !errors.Is(err, ErrLockHeld) {
			s.Env.Logger().Warn("capacity sweep lock failed", "err", err)
		}
		return nil, err
	}
	swept, err := s.Store.SweepStale(ctx, s.Env.Now())
	if err != nil {
		s.Env.Logger().Warn("capacity sweep failed", "err", err)
		return nil, err
	}
	for _, l := range swept {
		s.Env.Logger().Info("capacity lease reclaimed", "lease", l.ID, "holder", l.Holder, "expiredAt", l.ExpiresAt)
	}
	return swept, nil
}
