package boundedcache

import (
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// The cache keeps every entry up to its bound; a new key past the bound empties it, keeping only
// that key; a key it keeps is replaced in place, even when full.
func TestBoundAndEviction(t *testing.T) {
	c := New[string, int](3)
	for i, k := range []string{"a", "b", "c"} {
		c.Put(k, i)
	}
	for i, k := range []string{"a", "b", "c"} {
		if v, ok := c.Get(k); !ok || v != i {
			t.Fatalf("full at its bound: %s = %d, %v; want %d, true", k, v, ok, i)
		}
	}
	c.Put("b", 10) // kept already: no eviction
	if v, _ := c.Get("b"); c.Len() != 3 || v != 10 {
		t.Fatalf("replacing a kept key when full: %d entries, b = %d; want 3, 10", c.Len(), v)
	}
	c.Put("d", 4)
	if c.Len() != 1 {
		t.Fatalf("a new key past the bound: %d entries, want 1", c.Len())
	}
	if v, ok := c.Get("d"); !ok || v != 4 {
		t.Fatalf("the key that emptied the cache: %d, %v; want 4, true", v, ok)
	}
	if _, ok := c.Get("a"); ok {
		t.Fatal("a kept after the cache was emptied")
	}
}

// Against a plain map with the same rule, any sequence of Gets and Puts: every Get answers what
// the model does, and the cache never holds more than its bound.
func TestCacheMatchesAPlainMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bound := rapid.IntRange(1, 5).Draw(t, "bound")
		c := New[int, int](bound)
		model := map[int]int{}
		key := rapid.IntRange(0, 8)
		for i := range rapid.IntRange(0, 60).Draw(t, "ops") {
			k := key.Draw(t, "key")
			if rapid.Bool().Draw(t, "put") {
				if _, ok := model[k]; !ok && len(model) == bound {
					model = map[int]int{}
				}
				model[k] = i
				c.Put(k, i)
			} else {
				got, ok := c.Get(k)
				want, wantOK := model[k]
				if got != want || ok != wantOK {
					t.Fatalf("op %d: Get(%d) = %d, %v; the model says %d, %v", i, k, got, ok, want, wantOK)
				}
			}
			if c.Len() != len(model) || c.Len() > bound {
				t.Fatalf("op %d: %d entries, the model %d, bound %d", i, c.Len(), len(model), bound)
			}
		}
	})
}

// Callers on many goroutines (go test -race): a Get finds only what some Put kept for its key.
func TestConcurrentCallers(t *testing.T) {
	c := New[int, int](16)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				k := (g*7 + i) % 40
				if v, ok := c.Get(k); ok && v != k*k {
					t.Errorf("Get(%d) = %d, want %d", k, v, k*k)
					return
				}
				c.Put(k, k*k)
			}
		})
	}
	wg.Wait()
	if c.Len() > 16 {
		t.Fatalf("%d entries, bound 16", c.Len())
	}
}

func TestNewRefusesABoundBelowOne(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New(0) did not panic")
		}
	}()
	New[int, int](0)
}
