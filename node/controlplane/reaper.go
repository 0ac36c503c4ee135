package controlplane

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/workerapi"
)

// flushTimeout bounds one registry batch write.
const flushTimeout = 10 * time.Second

// runReaper ticks the lifecycles every ReaperInterval and writes the dirty records as one batch.
// A registration wakes it early so the new token reaches the store soon. It is the only writer
// of the store, so batches never overtake each other.
func (cp *ControlPlane) runReaper(ctx context.Context) {
	next := cp.e.Now().Add(cp.cfg.ReaperInterval)
	for {
		seen := cp.wake.Seq()
		wait := next.Sub(cp.e.Now())
		if wait > 0 {
			wctx, cancel := cp.e.WithTimeout(ctx, wait)
			_ = cp.wake.Wait(wctx, seen)
			cancel()
		}
		if ctx.Err() != nil {
			cp.finalFlush(ctx)
			return
		}
		if now := cp.e.Now(); !now.Before(next) {
			cp.Tick(ctx, now)
			next = now.Add(cp.cfg.ReaperInterval)
		}
		_ = cp.Flush(ctx)
	}
}

func (cp *ControlPlane) finalFlush(ctx context.Context) {
	fctx, cancel := cp.e.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	defer cancel()
	_ = cp.Flush(fctx)
}

func (cp *ControlPlane) timeouts() Timeouts {
	return Timeouts{StaleAfter: cp.cfg.StaleAfter, Grace: cp.cfg.EvictGrace}
}

// evicted is an eviction to report once the lock is released.
type evicted struct {
	info      workerapi.WorkerInfo
	tr        Transition
	tokenHash string // of the session that ended
}

// Tick advances every worker's lifecycle to now, revokes the tokens of the evicted and calls the
// OnEvict hooks, and logs the registrations refused since the last line when one is due
// (refusals.go). A worker it would move along is first looked up in the store, where another
// replica may have seen it since (replicas.go). The reaper calls it; tests and the simulator may
// call it directly.
func (cp *ControlPlane) Tick(ctx context.Context, now time.Time) {
	cp.adoptNewer(ctx, now)
	cp.logRefused(now)
	type change struct {
		name string
		tr   Transition
	}
	var changes []change
	var gone []evicted
	cp.mu.Lock()
	for _, name := range cp.sortedNames() {
		en := cp.workers[name]
		if !en.life.Online() && now.Sub(en.life.StateSince) >= cp.cfg.EvictedRetention {
			cp.forget(name)
			continue
		}
		tr := en.life.Tick(now, cp.timeouts())
		if !tr.Changed() {
			continue
		}
		changes = append(changes, change{name, tr})
		cp.dirty[name] = true
		cp.moveCount(tr.From, tr.To)
		if en.life.State == workerapi.StateEvicted {
			gone = append(gone, evicted{cp.info(en, now), tr, en.rec.TokenHash})
			delete(cp.byToken, en.rec.TokenHash)
			en.rec.TokenHash = ""
		}
	}
	hooks := slices.Clone(cp.onEvict)
	cp.mu.Unlock()

	for _, c := range changes {
		cp.metrics.transitions.WithLabelValues(c.tr.To).Inc()
		cp.e.Logger().Warn("worker state changed", "worker", c.name, "from", c.tr.From, "to", c.tr.To)
	}
	for _, g := range gone {
		for _, hook := range hooks {
			hook(ctx, g.info)
		}
		cp.endSession(ctx, g.info.Name, g.tokenHash, "evicted")
	}
}

// Flush writes every record changed since the last write as one batch. On failure the records
// stay dirty and the next flush retries them.
//
// Flushes never overlap: a second caller waits for the first to finish, so a later snapshot is
// always written after an earlier one (the store never goes back in time).
func (cp *ControlPlane) Flush(ctx context.Context) error {
	if err := cp.acquireFlush(ctx); err != nil {
		return err
	}
	defer cp.releaseFlush()
	cp.mu.Lock()
	batch := make([]registry.Record, 0, len(cp.dirty))
	for _, name := range sortedKeys(cp.dirty) { // only the dirty: a fleet is mostly clean
		if en := cp.workers[name]; en != nil && cp.dirty[name] {
			batch = append(batch, en.snapshot())
		}
	}
	clear(cp.dirty)
	forgotten := sortedKeys(cp.forgotten)
	clear(cp.forgotten)
	cp.mu.Unlock()
	if len(batch) == 0 && len(forgotten) == 0 {
		return nil
	}
	wctx, cancel := cp.e.WithTimeout(ctx, flushTimeout)
	err := cp.deleteForgotten(wctx, forgotten)
	if err == nil && len(batch) > 0 {
		err = cp.reg.Put(wctx, batch)
	}
	cancel()
	if err != nil {
		cp.metrics.registryWrites.WithLabelValues("error").Inc()
		cp.e.Logger().Error("writing the worker registry batch failed; will retry", "records", len(batch), "err", redact.Error(err))
		cp.mu.Lock()
		for _, r := range batch {
			if _, ok := cp.workers[r.Name]; ok {
				cp.dirty[r.Name] = true
			}
		}
		for _, name := range forgotten {
			if _, back := cp.workers[name]; !back {
				cp.forgotten[name] = true
			}
		}
		cp.mu.Unlock()
		return err
	}
	cp.metrics.registryWrites.WithLabelValues("ok").Inc()
	cp.metrics.registryRecords.Add(float64(len(batch)))
	return nil
}

// moveCount moves one worker between the per-state gauges ("" for none: a worker added or
// replaced). Callers hold mu.
func (cp *ControlPlane) moveCount(from, to string) {
	cp.live += isLive(to) - isLive(from)
	if from != "" {
		cp.metrics.workers.WithLabelValues(from).Dec()
	}
	if to != "" {
		cp.metrics.workers.WithLabelValues(to).Inc()
	}
}

// isLive is 1 for a state that counts against Config.MaxWorkers (registered, not evicted).
func isLive(state string) int {
	if state == workerapi.StateHealthy || state == workerapi.StateStale {
		return 1
	}
	return 0
}

// acquireFlush waits until no other flush runs and claims the turn. It waits on a Signal, never
// holding mu across the wait.
func (cp *ControlPlane) acquireFlush(ctx context.Context) error {
	for {
		seen := cp.flushDone.Seq()
		cp.mu.Lock()
		if !cp.flushing {
			cp.flushing = true
			cp.mu.Unlock()
			return nil
		}
		cp.mu.Unlock()
		if err := cp.flushDone.Wait(ctx, seen); err != nil {
			return err
		}
	}
}

func (cp *ControlPlane) releaseFlush() {
	cp.mu.Lock()
	cp.flushing = false
	cp.mu.Unlock()
	cp.flushDone.Notify()
}

// forget drops an evicted worker from memory and queues its deletion from the store; callers
// hold mu.
func (cp *ControlPlane) forget(name string) {
	en := cp.workers[name]
	if en == nil || en.life.Online() {
		panic(fmt.Sprintf("controlplane: forgetting %q, which is not evicted", name))
	}
	cp.moveCount(en.life.State, "")
	delete(cp.workers, name)
	delete(cp.dirty, name)
	delete(cp.supersedes, name)
	cp.forgotten[name] = true
}

// deleteForgotten removes forgotten workers from the store, stopping at the first error.
func (cp *ControlPlane) deleteForgotten(ctx context.Context, names []string) error {
	for _, name := range names {
		if err := cp.reg.Delete(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m { //determinism:ok collecting keys, sorted below
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
