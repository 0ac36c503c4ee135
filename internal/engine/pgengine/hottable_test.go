package pgengine

import (
	"fmt"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// The table of statements seen: a statement is hot only if it ran before (a first run is never
// prepared), and one run twice in a row is hot the second time, whatever ran before it.
func TestHotStatementsAreTheStatementsSeenBefore(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := newHotStatements()
		seen := map[string]bool{}
		texts := rapid.SliceOfN(rapid.StringMatching(`select [a-z0-9]{1,12}`), 1, 200).Draw(rt, "texts")
		for i, sql := range texts {
			hot := h.again(sql)
			if hot && !seen[sql] {
				rt.Fatalf("step %d: %q hot on its first run", i, sql)
			}
			seen[sql] = true
			if !h.again(sql) {
				rt.Fatalf("step %d: %q not hot when run again at once", i, sql)
			}
		}
	})
}

// Statements asked from many goroutines at once (go test -race): each sees its own runs.
func TestHotStatementsFromManyGoroutines(t *testing.T) {
	h := newHotStatements()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sql := fmt.Sprintf("select %d", g)
			for i := range 1000 {
				if hot := h.again(sql); hot != (i > 0) {
					t.Errorf("goroutine %d, run %d: hot %v", g, i, hot)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// What asking the table costs a statement, from as many goroutines as CPUs (its old mutex
// serialized them): go test -run '^$' -bench HotStatements ./internal/engine/pgengine/
func BenchmarkHotStatementsAgain(b *testing.B) {
	h := newHotStatements()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h.again("SELECT 1")
		}
	})
}
