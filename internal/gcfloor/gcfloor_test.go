package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func TestPercent(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		base        int
		floor, live uint64
		want        int
	}{
		{100, 128 * mb, 35 * mb, 366},  // ceil(128/35 * 100): the next cycle 128 MB later
		{100, 128 * mb, 128 * mb, 100}, // GOGC already leaves the floor
		{100, 128 * mb, 600 * mb, 100}, // a large heap keeps GOGC
		{200, 128 * mb, 50 * mb, 256},  // a base above 100 counts the same way
		{100, 128 * mb, 0, 3200},       // before the first cycle: a 4 MB heap
	} {
		if got := Percent(c.base, c.floor, c.live); got != c.want {
			t.Errorf("Percent(%d, %d MB, %d MB) = %d, want %d", c.base, c.floor/mb, c.live/mb, got, c.want)
		}
	}
}

func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// Every cycle sets GOGC again for the heap it found (a floor of 1 GB raises it above the 100
// the test puts back before each cycle), and stop puts the GOGC of before Start back.
func TestStartTunesAfterEveryCycleUntilStopped(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	stop := Start(1 << 30)
	if got := gogc(); got <= 100 {
		t.Fatalf("GOGC %d right after Start, want above 100", got)
	}
	for cycle := range 3 {
		debug.SetGCPercent(100)
		for i := 0; i < 1000 && gogc() == 100; i++ {
			runtime.GC() // the finalizer that tunes runs after a cycle, on its own goroutine
			runtime.Gosched()
		}
		if got := gogc(); got <= 100 {
			t.Fatalf("cycle %d: GOGC stayed %d, want it raised after the cycle", cycle, got)
		}
	}
	stop()
	if got := gogc(); got != 100 {
		t.Fatalf("GOGC %d after stop, want 100 (as before Start)", got)
	}
	for range 10 {
		runtime.GC()
		runtime.Gosched()
	}
	if got := gogc(); got != 100 {
		t.Fatalf("GOGC %d after cycles past stop, want 100: a stopped tuner must not tune", got)
	}
}
