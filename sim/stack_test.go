package sim

import (
	"fmt"
	"testing"
	"time"
	"unsafe"
)

// Tasks start on coroutines whose stacks are grown already (growStack): a frame of 4 KB, called
// by a task, fits without the runtime moving the task's stack to a larger one.
func TestTasksStartOnGrownStacks(t *testing.T) {
	s := New(Opts{Seed: 1})
	n := s.AddNode("a", nil)
	var moved, ran int
	for i := range 4 {
		s.Spawn(n, fmt.Sprint("t", i), func() {
			var here byte
			before := uintptr(unsafe.Pointer(&here))
			_ = frame4K(0)
			ran++
			if uintptr(unsafe.Pointer(&here)) != before {
				moved++
			}
		})
	}
	if err := s.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	if ran != 4 || moved != 0 {
		t.Errorf("%d of %d tasks had their stacks moved by a 4 KB frame, want none", moved, ran)
	}
}

//go:noinline
func frame4K(i int) byte {
	var frame [4 << 10]byte
	return frame[i]
}
