package logbuf

import (
	"strings"
	"sync"
	"testing"
)

// Concurrent writers lose nothing (go test -race also checks the locking).
func TestConcurrentWritesAllKept(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				_, _ = b.Write([]byte("x\n"))
			}
		}()
	}
	wg.Wait()
	if n := strings.Count(b.String(), "x\n"); n != 800 {
		t.Fatalf("%d lines kept, want 800", n)
	}
}
