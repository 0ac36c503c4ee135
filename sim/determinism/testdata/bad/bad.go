// Package bad uses every forbidden thing at least once (a scanner fixture). Every line that
// must be flagged says so with a want comment naming part of the finding.
package bad

import (
	"context"
	crand "crypto/rand"
	"math/rand/v2"
	"time"
)

type registry struct{ byName map[string]int }

func All(ctx context.Context, ch chan int, r *registry) {
	_ = time.Now()                                       // want "time.Now"
	time.Sleep(time.Second)                              // want "time.Sleep"
	ctx, cancel := context.WithTimeout(ctx, time.Second) // want "context.WithTimeout"
	defer cancel()
	go func() {}() // want "go statement"
	select {       // want "select statement"
	default:
	}
	<-ch                      // want "channel receive"
	_ = rand.IntN(3)          // want "math/rand/v2.IntN"
	_, _ = crand.Read(nil)    // want "crypto/rand.Read"
	for k := range r.byName { // want "range over a map"
		_ = k
	}
	for v := range ch { // want "range over a channel"
		_ = v
	}
	for k := range r.byName { //determinism:ok only sums
		_ = k
	}
	_ = rand.New(rand.NewPCG(1, 2)) // fine: seeded
	var d time.Duration = time.Second
	_ = d
	_ = ctx
}

func Unsorted(m map[string]int) []string {
	var keys []string
	for k := range m { // want "range over a map"
		keys = append(keys, k)
	}
	return keys
}
