package sim

import (
	"context"
	"testing"
	"time"
)

// A finished task's struct is reused by the next task started, and a wake-up still addressed
// to the finished task (a reply to a request it gave up on, with the gen of that wait) must
// not wake the task that now lives in it.
func TestReusedTaskIgnoresTheFinishedTasksWakeUps(t *testing.T) {
	s := New(Opts{Seed: 1})
	defer s.Close()
	n := s.AddNode("a", nil)
	var first, second *task
	var firstGen uint64
	var woke time.Duration
	s.Spawn(n, "first", func() {
		first = s.current
		_ = n.Env().Sleep(context.Background(), time.Millisecond)
		firstGen = first.gen // the gen a late reply to its last wait would carry
	})
	if err := s.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	s.Spawn(n, "second", func() {
		second = s.current
		_ = n.Env().Sleep(context.Background(), 10*time.Second)
		woke = s.Elapsed()
	})
	s.Step() // the second task runs and parks in its sleep
	if second != first || second.state != taskParked {
		t.Fatalf("the second task is %p (%v), want the first's struct %p reused and parked", second, second.state, first)
	}
	s.wake(second, firstGen)
	if second.state != taskParked {
		t.Fatalf("a wake-up for the finished task (gen %d) woke the task reusing its struct (gen %d)", firstGen, second.gen)
	}
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if want := time.Second + 10*time.Second; woke != want {
		t.Fatalf("the second task woke at %v, want %v (its own sleep's end)", woke, want)
	}
}
