package bad

import (
	"math/rand"
	"reflect"
	"runtime"
	"runtime/debug"
	"unsafe"
)

// Addresses and the runtime's state as seeds.
func Addresses(x *int) *rand.Rand {
	a := uintptr(unsafe.Pointer(x))   // want "unsafe.Pointer to an integer"
	b := reflect.ValueOf(x).Pointer() // want "reflect.Value.Pointer"
	c := runtime.NumGoroutine()       // want "runtime.NumGoroutine"
	_ = debug.Stack()                 // want "runtime/debug.Stack"
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms) // want "runtime.ReadMemStats"
	return rand.New(rand.NewSource(int64(a+b) + int64(c)))
}
