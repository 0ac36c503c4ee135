package relayloop

import (
	"runtime"
	"testing"
	"time"
)

// rawLoop is a loop that never spins, whose raw waits are bounded by bound, with GOMAXPROCS at
// least procs (or exactly 1 when procs is 1) for the test.
func rawLoop(t *testing.T, bound time.Duration, procs int) *Loop {
	t.Helper()
	was := rawBound
	rawBound = bound
	t.Cleanup(func() { rawBound = was })
	if now := runtime.GOMAXPROCS(0); procs == 1 && now != 1 || now < procs {
		prev := runtime.GOMAXPROCS(procs)
		t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	}
	l, err := NewWith(0, chosenBackend(BackendAuto), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// exchange relays n statements and their answers through r, one at a time.
func exchange(t *testing.T, r *relayed, n int) {
	t.Helper()
	for range n {
		if _, err := r.client.Write([]byte("q")); err != nil {
			t.Fatal(err)
		}
		readN(t, r.server, 1)
		if _, err := r.server.Write([]byte("a")); err != nil {
			t.Fatal(err)
		}
		readN(t, r.client, 1)
	}
}

// TestABusyLoopWaitsRawAndAnIdleOneTheRuntimesWay: a loop whose waits end within the raw
// bound makes them raw (the system monitor then has no processor in a system call to take);
// once a raw wait lapses at its bound with nothing to do, the loop's waits are the runtime's
// again, and a loop at rest makes no more raw waits (its thread sleeps until news comes).
func TestABusyLoopWaitsRawAndAnIdleOneTheRuntimesWay(t *testing.T) {
	const rounds = 40
	t.Run("busy", func(t *testing.T) {
		l := rawLoop(t, time.Minute, 2) // every wait ends within a minute: raw after the first
		r := startPair(t, l, [2]Framer{nil, nil}, nil)
		exchange(t, r, rounds)
		raws, blocking := l.raw.raws.Load(), l.raw.blocking.Load()
		// (a loop that finds its next message by looking makes no wait at all: the count of
		// raw waits depends on how the threads ran, that of the others does not)
		if raws < 1 || blocking > 2 {
			t.Errorf("%d raw waits, %d the runtime's, over %d exchanges (want raw ones but the first)", raws, blocking, rounds)
		}
	})
	t.Run("at rest", func(t *testing.T) {
		l := rawLoop(t, 3*time.Millisecond, 2)
		r := startPair(t, l, [2]Framer{nil, nil}, nil)
		exchange(t, r, 10)
		time.Sleep(100 * time.Millisecond) // a raw wait lapses within 3 ms
		raws, lapsed := l.raw.raws.Load(), l.raw.lapsed.Load()
		time.Sleep(100 * time.Millisecond)
		if lapsed < 1 {
			t.Errorf("no raw wait lapsed over 100 ms at rest (%d raw waits)", raws)
		}
		if again := l.raw.raws.Load() - raws; again != 0 {
			t.Errorf("at rest the loop made %d more raw waits in 100 ms, want 0 (it sleeps the runtime's way)", again)
		}
		exchange(t, r, 10) // and it wakes for news as before
	})
}

// TestRawWaitsLeaveAProcessorToTheRest: a loop's raw wait holds its processor, so the process's
// loops wait raw at most GOMAXPROCS-1 at once, and never with GOMAXPROCS 1.
func TestRawWaitsLeaveAProcessorToTheRest(t *testing.T) {
	t.Run("GOMAXPROCS 1", func(t *testing.T) {
		l := rawLoop(t, time.Minute, 1)
		exchange(t, startPair(t, l, [2]Framer{nil, nil}, nil), 20)
		if n := l.raw.raws.Load(); n != 0 {
			t.Errorf("%d raw waits with GOMAXPROCS 1, want 0", n)
		}
	})
	t.Run("GOMAXPROCS 2, another loop in a raw wait", func(t *testing.T) {
		prev := runtime.GOMAXPROCS(2) // exactly 2
		defer runtime.GOMAXPROCS(prev)
		l := rawLoop(t, time.Minute, 2)
		rawWaiters.Add(1) // the other loop's (a real one's raw wait may be cut short by a signal)
		exchange(t, startPair(t, l, [2]Framer{nil, nil}, nil), 20)
		rawWaiters.Add(-1)
		if n := l.raw.raws.Load(); n != 0 {
			t.Errorf("%d raw waits while another loop held the one processor GOMAXPROCS 2 leaves them, want 0", n)
		}
	})
}

// TestRawWaitBoundFromTheEnvironment: the bound in microseconds, 0 for none, the default for
// what is not a number of microseconds >= 0.
func TestRawWaitBoundFromTheEnvironment(t *testing.T) {
	for v, want := range map[string]time.Duration{"0": 0, "500": 500 * time.Microsecond, "-1": rawBoundDefault, "2ms": rawBoundDefault} {
		t.Setenv(RawWaitEnv, v)
		if got := rawBoundFromEnv(); got != want {
			t.Errorf("%s=%q: bound %v, want %v", RawWaitEnv, v, got, want)
		}
	}
}
