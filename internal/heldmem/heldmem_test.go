package heldmem

import (
	"errors"
	"testing"

	"pgregory.net/rapid"
)

func TestBudgetRefusesPastItsBoundAndThePools(t *testing.T) {
	pool := NewPool(100)
	a, b := pool.Budget(60), pool.Budget(60)
	if err := a.Take(60); err != nil {
		t.Fatal(err)
	}
	var e *Error
	if err := a.Take(1); !errors.As(err, &e) || e.Daemon || e.Held != 60 || e.Max != 60 {
		t.Fatalf("a past its own bound: %v", err)
	}
	if err := b.Take(41); !errors.As(err, &e) || !e.Daemon || e.Held != 60 || e.Max != 100 {
		t.Fatalf("b past the pool's bound: %v", err)
	}
	if b.Used() != 0 || pool.Used() != 60 {
		t.Fatalf("a refusal counted: b %d, pool %d", b.Used(), pool.Used())
	}
	a.Give(20)
	if err := b.Take(60); err != nil {
		t.Fatalf("after a gave 20 back: %v", err)
	}
	a.Close()
	a.Give(40) // after Close: counts nothing
	if a.Used() != 0 || pool.Used() != 60 {
		t.Fatalf("after a closed: a %d, pool %d", a.Used(), pool.Used())
	}
}

// Whatever a budget takes and gives, the pool holds the sum of its budgets, no budget passes its
// bound, and closing every budget leaves the pool empty.
func TestPoolIsTheSumOfItsBudgets(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool := NewPool(rapid.Int64Range(1, 1000).Draw(t, "pool"))
		budgets := make([]*Budget, rapid.IntRange(1, 4).Draw(t, "budgets"))
		held := make([][]int, len(budgets))
		for i := range budgets {
			budgets[i] = pool.Budget(rapid.Int64Range(1, 500).Draw(t, "max"))
		}
		for range rapid.IntRange(0, 50).Draw(t, "steps") {
			i := rapid.IntRange(0, len(budgets)-1).Draw(t, "which")
			if n := len(held[i]); n > 0 && rapid.Bool().Draw(t, "give") {
				budgets[i].Give(held[i][n-1])
				held[i] = held[i][:n-1]
			} else if n := rapid.IntRange(0, 300).Draw(t, "take"); budgets[i].Take(n) == nil {
				held[i] = append(held[i], n)
			}
			var sum int64
			for j, b := range budgets {
				if b.Used() > b.max || b.Used() < 0 {
					t.Fatalf("budget %d holds %d of %d", j, b.Used(), b.max)
				}
				sum += b.Used()
			}
			if pool.Used() != sum || sum > pool.max {
				t.Fatalf("pool %d, budgets %d, max %d", pool.Used(), sum, pool.max)
			}
		}
		for _, b := range budgets {
			b.Close()
		}
		if pool.Used() != 0 {
			t.Fatalf("every budget closed, the pool holds %d", pool.Used())
		}
	})
}
