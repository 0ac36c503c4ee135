package bad

import (
	"hash/maphash" // want "hash/maphash"
	"runtime"
	"sync"
	"unique" // want "unique"
	"weak"   // want "weak"
)

type buf struct{ b []byte }

var pool = sync.Pool{New: func() any { return new(buf) }} // want "sync.Pool"

// What the garbage collector and the Go scheduler decide.
func Runtime(b *buf) int {
	runtime.SetFinalizer(b, func(*buf) {}) // want "runtime.SetFinalizer"
	runtime.AddCleanup(b, func(int) {}, 0) // want "runtime.AddCleanup"
	runtime.Gosched()                      // want "runtime.Gosched"
	_ = weak.Make(b)
	_ = unique.Make("x")
	_ = maphash.String(maphash.MakeSeed(), "x")
	_ = pool.Get()
	return runtime.NumGoroutine() // want "runtime.NumGoroutine"
}

// Machine-dependent sizing and a concurrent map's random order.
func Machine(m *sync.Map) int {
	m.Range(func(k, v any) bool { return true })    // want "sync.Map.Range"
	return runtime.NumCPU() + runtime.GOMAXPROCS(0) // want "runtime.NumCPU"
}
