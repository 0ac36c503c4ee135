// Package env is the one door through which role code (node/... and the internal packages on the
// query, sync, lease, history and registry paths) touches time, tasks, randomness and logs.
//
// Production code gets Real(); the simulator (sim/) hands each node its own Env whose clock is
// virtual, whose tasks run one at a time, and whose contexts cancel synchronously. Role code must
// never call time.Now/Sleep/After..., start goroutines, use select or channel receives, build
// contexts with context.WithTimeout/WithCancel, or use math/rand and crypto/rand directly
// (docs/architecture.md, "The Env seam"). The determinism test enforces this list.
//
// This package may touch the real world: it is the production side of the contract.
package env

import (
	"context"
	"log/slog"
	"time"
)

// Env is what a role is given to touch time, tasks, randomness and logs.
type Env interface {
	// Now is the node's clock. In the simulator it is virtual and may drift per node.
	Now() time.Time
	// Sleep waits for d, or until ctx ends, in which case it returns ctx.Err().
	Sleep(ctx context.Context, d time.Duration) error
	// Go starts fn as a new task. name shows in logs and in the simulator's trace.
	// A task must return when its ctx ends.
	Go(ctx context.Context, name string, fn func(ctx context.Context))
	// WithTimeout and WithCancel replace the context package's: in the simulator the
	// deadline is virtual and cancellation runs synchronously inside the running task.
	WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc)
	WithCancel(ctx context.Context) (context.Context, context.CancelFunc)
	// NewSignal returns a wake-all signal, the one way tasks wait on each other.
	NewSignal() Signal
	// Rand is the node's random source: seeded in the simulator, crypto-strong Read in production.
	Rand() Rand
	// Logger carries the node's name; in the simulator every line also carries step and virtual time.
	Logger() *slog.Logger
}

// Signal wakes every waiting task at once. It counts notifications so a waiter never misses one
// that happened between checking its condition and waiting:
//
//	seen := sig.Seq()
//	for !ready() { if err := sig.Wait(ctx, seen); err != nil { return err }; seen = sig.Seq() }
type Signal interface {
	// Notify wakes every task waiting now.
	Notify()
	// Seq is the number of Notify calls so far.
	Seq() uint64
	// Wait returns nil as soon as Seq() != seen (at once if it already differs),
	// or ctx.Err() when ctx ends first.
	Wait(ctx context.Context, seen uint64) error
}

// Rand is a source of randomness. Safe for use by concurrent tasks.
type Rand interface {
	Uint64() uint64
	Float64() float64
	// Int64N returns a value in [0, n); n must be > 0.
	Int64N(n int64) int64
	// Read fills p. In production the bytes come from crypto/rand (for tokens and secrets).
	Read(p []byte)
}

// Jitter returns d scaled by a random factor in [1-frac, 1+frac].
func Jitter(r Rand, d time.Duration, frac float64) time.Duration {
	if frac <= 0 || d <= 0 {
		return d
	}
	f := 1 - frac + 2*frac*r.Float64()
	return time.Duration(float64(d) * f)
}

// Every runs fn every d until ctx ends. The first run is after d. It returns ctx.Err().
func Every(ctx context.Context, e Env, d time.Duration, fn func(ctx context.Context)) error {
	for {
		if err := e.Sleep(ctx, d); err != nil {
			return err
		}
		fn(ctx)
	}
}
