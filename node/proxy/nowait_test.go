package proxy

import (
	"context"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
	"pgregory.net/rapid"
)

type probeKey struct{ n int }

// TestNoWaitHoldsThroughAnyContextChain: whatever contexts wrap one another, a context must not
// wait exactly when NoWait is somewhere in its chain, every value set below or above that stays
// readable, and a cancel of a parent reaches it.
func TestNoWaitHoldsThroughAnyContextChain(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		parent, cancel := context.WithCancel(context.Background())
		defer cancel()
		ctx := parent
		marked := false
		want := map[probeKey]int{}
		var affinity uint64
		steps := rapid.SliceOfN(rapid.IntRange(0, 3), 0, 8).Draw(rt, "steps")
		for i, step := range steps {
			switch step {
			case 0:
				ctx, marked = NoWait(ctx), true
			case 1:
				k := probeKey{i % 3}
				ctx = context.WithValue(ctx, k, i)
				want[k] = i
			case 2:
				var c context.CancelFunc
				ctx, c = context.WithCancel(ctx)
				defer c()
			case 3:
				affinity = uint64(i + 1)
				ctx = query.WithAffinity(ctx, affinity)
			}
		}
		if got := mustNotWait(ctx); got != marked {
			rt.Fatalf("mustNotWait after %v = %v; want %v", steps, got, marked)
		}
		for k, v := range want {
			if got, _ := ctx.Value(k).(int); got != v {
				rt.Fatalf("after %v the value of %v is %v; want %d", steps, k, ctx.Value(k), v)
			}
		}
		if got := query.Affinity(ctx); got != affinity {
			rt.Fatalf("after %v the affinity is %d; want %d", steps, got, affinity)
		}
		if ctx.Value(probeKey{7}) != nil {
			rt.Fatalf("after %v an unset key has a value", steps)
		}
		cancel()
		select {
		case <-ctx.Done():
		default:
			rt.Fatalf("after %v a cancel of the parent did not reach the context", steps)
		}
	})
}
