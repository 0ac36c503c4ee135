// Package bad uses every forbidden thing once (a scanner fixture).
package bad

import (
	"context"
	crand "crypto/rand"
	"math/rand/v2"
	"time"
)

type registry struct{ byName map[string]int }

func All(ctx context.Context, ch chan int, r *registry) {
	_ = time.Now()                                       // line 14
	time.Sleep(time.Second)                              // line 15
	ctx, cancel := context.WithTimeout(ctx, time.Second) // line 16
	defer cancel()
	go func() {}() // line 18
	select {       // line 19
	default:
	}
	<-ch                      // line 22
	_ = rand.IntN(3)          // line 23
	_, _ = crand.Read(nil)    // line 24
	for k := range r.byName { // line 25
		_ = k
	}
	for v := range ch { // line 28
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
	for k := range m { // line 42: collected but never sorted
		keys = append(keys, k)
	}
	return keys
}
