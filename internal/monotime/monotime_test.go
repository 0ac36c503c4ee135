package monotime

import (
	"testing"
	"time"
)

func TestCheckPassesOnThisToolchain(t *testing.T) {
	if err := Check(); err != nil {
		t.Fatal(err)
	}
}

// A wall reading moved apart from the monotonic one: durations follow the monotonic reading,
// what leaves the process (Round(0), UTC) the wall one.
func TestWallAndMonotonicReadingsApart(t *testing.T) {
	now := time.Now()
	mono, ok := Of(now)
	if !ok {
		t.Fatal("time.Now() has no monotonic reading")
	}
	stepped := New(now.Round(0).Add(time.Hour), mono)
	if d := stepped.Sub(now); d != 0 {
		t.Fatalf("a wall step changed a duration measured inside the process: %v", d)
	}
	if d := stepped.Round(0).Sub(now.Round(0)); d != time.Hour {
		t.Fatalf("the wall reading moved %v, want 1h", d)
	}
	if _, ok := Of(now.Round(0)); ok {
		t.Fatal("Round(0) kept a monotonic reading")
	}
	old := time.Date(1800, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := New(old, time.Second); !got.Equal(old) {
		t.Fatalf("a wall reading before 1885: %v", got)
	}
	if _, ok := Of(New(old, time.Second)); ok {
		t.Fatal("a wall reading before 1885 carries a monotonic one")
	}
}
