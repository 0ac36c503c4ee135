package sim

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
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

// GrownStacks names each task whose frames outgrew its coroutine's 8 KB stack once: one that
// grows it and ends, one that grows it and then parks for good (seen when it parks), and
// neither a task within 8 KB (that parks too) nor a later task on a grown coroutine.
func TestGrownStacksNamesTheTasksThatOutgrewTheirCoroutines(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // a collection may move a stack too
	s := New(Opts{Seed: 1})
	n := s.AddNode("a", nil)
	s.Spawn(n, "small", func() { // alone, on a coroutine of its own
		_ = frame4K(0)
		_ = n.Env().Sleep(context.Background(), time.Millisecond)
	})
	s.At(10*time.Millisecond, func() {
		s.Spawn(n, "grows", func() { _ = frame12K(0) })
		s.Spawn(n, "grows-then-parks", func() {
			_ = frame12K(0)
			_ = n.Env().Sleep(context.Background(), time.Hour)
		})
	})
	s.At(time.Second, func() {
		for i := range 3 { // on the coroutines the first tasks left, one of them grown
			s.Spawn(n, fmt.Sprint("later", i), func() { _ = frame4K(0) })
		}
	})
	if err := s.Run(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(slices.Values(s.GrownStacks()))
	if want := []string{"grows", "grows-then-parks"}; !slices.Equal(got, want) {
		t.Errorf("GrownStacks %q, want %q", got, want)
	}
}

//go:noinline
func frame12K(i int) byte {
	var frame [12 << 10]byte
	return frame[i]
}
