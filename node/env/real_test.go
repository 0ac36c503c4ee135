package env

import (
	"log/slog"
	"sync"
	"testing"
)

// TestRealRandDrawsApartOnEveryGoroutine: the real Env's draws, from goroutines at once, are
// distinct 64-bit values (query ids come from them), and Float64 and Int64N stay in range.
func TestRealRandDrawsApartOnEveryGoroutine(t *testing.T) {
	r := Real(slog.New(slog.DiscardHandler)).Rand()
	const each, goroutines = 2000, 4
	var mu sync.Mutex
	seen := map[uint64]bool{}
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				v := r.Uint64()
				if f, n := r.Float64(), r.Int64N(7); f < 0 || f >= 1 || n < 0 || n >= 7 {
					t.Errorf("Float64 %v, Int64N(7) %d", f, n)
					return
				}
				mu.Lock()
				if seen[v] {
					t.Errorf("%#x drawn twice", v)
				}
				seen[v] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}
