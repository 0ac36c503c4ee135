// Package outside is a package outside the simulator that role code may use only where what it
// uses reaches nothing forbidden (a scanner fixture).
//
// determinism: outside the simulator (fixture: the production side of a seam)
package outside

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Clean touches nothing: role code may call it.
func Clean(x int) int { return x + 1 }

// Limit is a constant: role code may use it.
const Limit = 3

// Clock is an interface: calling its method runs what the role was given.
type Clock interface{ Now() time.Time }

func Now() time.Time { return time.Now() }

// Indirect reaches the wall clock through another function.
func Indirect() time.Time { return Now() }

// Wall is a function value of the wall clock.
var Wall = time.Now

var seed = time.Now().UnixNano()

// Seed returns a value the wall clock set.
func Seed() int64 { return seed }

var booted time.Time

func init() { booted = time.Now() }

// Booted returns what init set.
func Booted() time.Time { return booted }

// Ticker is a concrete type whose method sleeps on the wall clock.
type Ticker struct{ d time.Duration }

func (t Ticker) Tick() { time.Sleep(t.d) }

// RealClock is a Clock on the wall clock.
type RealClock struct{}

func (RealClock) Now() time.Time { return time.Now() }

// Keys returns a map's keys in the map's order.
func Keys[M ~map[K]V, K comparable, V any](m M) []K {
	var out []K
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Ping and Pong call each other; Pong reads the wall clock.
func Ping(n int) {
	if n > 0 {
		Pong(n - 1)
	}
}

func Pong(n int) {
	Ping(n)
	_ = time.Now()
}

// Connect opens a real database connection.
func Connect(ctx context.Context) error {
	_, err := pgx.Connect(ctx, "postgres://db")
	return err
}
