//go:build linux

package relayloop

import (
	"errors"
	"testing"
)

// A Lazy starts one loop, on first use, and only when not Off; closed before any use, it never
// starts one; closed after, its loop stops its pairs.
func TestLazyStartsOneLoopOnFirstUse(t *testing.T) {
	var z Lazy
	l := z.Get()
	if l == nil || z.Get() != l {
		t.Fatalf("Get gave %p then %p, want one loop", l, z.Get())
	}
	r := startPair(t, l, [2]Framer{}, nil)
	z.Close()
	if res := r.result(t); !errors.Is(res.Err, ErrStopped) {
		t.Fatalf("a pair of the closed loop: %v", res.Err)
	}

	failed := false
	off := Lazy{Off: true, Failed: func(error) { failed = true }}
	if off.Get() != nil || failed {
		t.Fatalf("an Off Lazy started a loop (or reported a failure: %v)", failed)
	}
	var closed Lazy
	closed.Close()
	if closed.Get() != nil {
		t.Fatal("a Lazy closed before use started a loop")
	}
}

// A Lazy's loop runs on the backend it prefers, unless the environment says otherwise.
func TestLazyPrefersItsBackend(t *testing.T) {
	was := forcedBackend
	t.Cleanup(func() { forcedBackend = was })
	forcedBackend = BackendAuto
	t.Setenv(BackendEnv, "")
	if err := probeRing(); err != nil {
		t.Skipf("no io_uring here: %v", err)
	}
	for _, b := range []Backend{BackendURing, BackendEpoll} {
		z := Lazy{Backend: b}
		if got := z.Get().Backend(); got != b {
			t.Errorf("a Lazy preferring %s runs on %s", b, got)
		}
		z.Close()
	}
	t.Setenv(BackendEnv, string(BackendEpoll))
	z := Lazy{Backend: BackendURing}
	if got := z.Get().Backend(); got != BackendEpoll {
		t.Errorf("a Lazy preferring uring, the environment saying epoll, runs on %s", got)
	}
	z.Close()
}
