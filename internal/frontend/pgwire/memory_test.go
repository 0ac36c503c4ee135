package pgwire_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestLargeResultStreams: a result several times larger than the allowed heap growth passes
// through engine and frontend (both in this process) without the heap holding it.
func TestLargeResultStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("streams ~200 MB")
	}
	addr, _, _ := pgBackend(t)
	c := connect(t, proxyURL(addr, "alice"))
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak.Load() {
					peak.Store(m.HeapInuse)
				}
			}
		}
	}()
	rows, err := c.Query(context.Background(), "select g, repeat('x', 200) from generate_series(1, 1000000) g")
	if err != nil {
		t.Fatal(err)
	}
	var n, bytes int
	for rows.Next() {
		n++
		bytes += len(rows.RawValues()[1])
	}
	close(stop)
	<-done
	if rows.Err() != nil || n != 1000000 {
		t.Fatalf("read %d rows: %v", n, rows.Err())
	}
	growth := int64(peak.Load()) - int64(base.HeapInuse)
	t.Logf("streamed %d MB; peak heap growth %d MB", bytes>>20, growth>>20)
	if growth > 64<<20 {
		t.Fatalf("heap grew by %d MB while streaming %d MB", growth>>20, bytes>>20)
	}
}
