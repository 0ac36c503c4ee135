package monotime

import (
	"testing"
	"time"

	"pgregory.net/rapid"
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

// At is New(base.Add(d), mono) to the bit (wall, monotonic reading, location), for any base
// in or out of New's range and any offsets either way.
func TestAtIsNewOfAdd(t *testing.T) {
	locs := []*time.Location{time.UTC, time.FixedZone("x", -5*3600), time.Local}
	rapid.Check(t, func(t *rapid.T) {
		base := time.Unix(rapid.Int64Range(-1<<34, 1<<34).Draw(t, "sec"), rapid.Int64Range(0, 999_999_999).Draw(t, "nsec")).
			In(locs[rapid.IntRange(0, len(locs)-1).Draw(t, "loc")])
		if rapid.Bool().Draw(t, "monotonic base") {
			base = New(base, time.Duration(rapid.Int64().Draw(t, "base mono")))
		}
		d := time.Duration(rapid.Int64Range(-1<<62, 1<<62).Draw(t, "d"))
		if rapid.Bool().Draw(t, "small d") {
			d = time.Duration(rapid.Int64Range(-3e9, 3e9).Draw(t, "small"))
		}
		mono := time.Duration(rapid.Int64().Draw(t, "mono"))
		b := NewBase(base)
		if got, want := b.At(d, mono), New(base.Add(d), mono); got != want {
			t.Fatalf("At(%v, %v) from %v = %#v, want %#v", d, mono, base, got, want)
		}
	})
}
