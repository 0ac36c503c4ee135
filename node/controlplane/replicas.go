package controlplane

import (
	"context"
	"time"

	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/workerapi"
)

// Replicas share the registry store, but each hears only the workers whose requests reach it.
// A replica that loaded a worker at its start, or before the worker moved to another replica,
// would see it silent and evict it, revoking the leases its running queries hold: so before a
// replica moves a worker towards eviction, it reads the worker's record in the store, where the
// replica that hears from it writes every heartbeat (a batch per ReaperInterval). A record with
// a later sign of life, or a later registration, becomes this replica's view, and the worker's
// lifecycle goes on from there. Adopted records are not written back: they came from the store.

// adoptNewer refreshes, from the store, the workers that a Tick at now would move along.
func (cp *ControlPlane) adoptNewer(ctx context.Context, now time.Time) {
	due := cp.movingAt(now)
	if len(due) == 0 {
		return
	}
	stored := make(map[string]registry.Record, len(due))
	for _, name := range due {
		gctx, cancel := cp.e.WithTimeout(ctx, flushTimeout)
		rec, err := cp.reg.Get(gctx, name)
		cancel()
		if err != nil {
			continue // unknown to the store, or unreadable: this replica's own view decides
		}
		stored[name] = rec
	}
	var ended []string // token hashes of sessions a later registration elsewhere superseded
	cp.mu.Lock()
	for _, name := range due {
		if rec, ok := stored[name]; ok {
			if en := cp.workers[name]; en != nil {
				if old := cp.adopt(name, en, rec); old != "" {
					ended = append(ended, name, old)
				}
			}
		}
	}
	cp.mu.Unlock()
	for i := 0; i < len(ended); i += 2 {
		cp.endSession(ctx, ended[i], ended[i+1], "superseded")
	}
}

// movingAt lists, in order, the workers whose lifecycle a Tick at now would move.
func (cp *ControlPlane) movingAt(now time.Time) []string {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	var due []string
	for _, name := range cp.sortedNames() {
		life := cp.workers[name].life
		if life.Tick(now, cp.timeouts()).Changed() {
			due = append(due, name)
		}
	}
	return due
}

// adopt makes rec en's view when it saw the worker later: the same session, or another
// registration (whose token then works here too), when it returns the token hash of the
// session that registration superseded here. Callers hold mu.
func (cp *ControlPlane) adopt(name string, en *entry, rec registry.Record) (superseded string) {
	if !en.life.Online() || rec.State == workerapi.StateEvicted {
		return ""
	}
	if !rec.LastSeen.After(en.life.LastSeen) {
		return "" // nothing newer: this replica's view decides
	}
	switch {
	case rec.TokenHash == en.rec.TokenHash:
		from := en.life.State
		en.life.Heartbeat(rec.LastSeen)
		cp.moveCount(from, en.life.State)
		en.rec.Heartbeat, en.rec.LastHeartbeat = rec.Heartbeat, rec.LastHeartbeat
	case rec.TokenHash != "":
		cp.moveCount(en.life.State, rec.State)
		superseded = en.rec.TokenHash
		delete(cp.byToken, superseded)
		en.rec = rec
		en.life = Lifecycle{State: rec.State, StateSince: rec.StateSince, LastSeen: rec.LastSeen}
		cp.byToken[rec.TokenHash] = name
	}
	return superseded
}
