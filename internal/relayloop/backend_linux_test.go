//go:build linux

package relayloop

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestMain runs the package's tests once on each backend: epoll, then io_uring where it can
// be set up (BackendEnv set: that backend alone).
func TestMain(m *testing.M) {
	backends := []Backend{BackendEpoll, BackendURing}
	if b := Backend(os.Getenv(BackendEnv)); b == BackendEpoll || b == BackendURing {
		backends = []Backend{b}
	}
	code := 0
	for _, b := range backends {
		if b == BackendURing {
			if err := probeRing(); err != nil {
				fmt.Printf("relayloop: no io_uring here (%v): the tests ran on epoll only\n", err)
				continue
			}
		}
		forcedBackend = b
		fmt.Printf("relayloop: the tests on %s\n", b)
		if c := m.Run(); c != 0 {
			code = c
		}
	}
	os.Exit(code)
}

// probeRing reports whether a loop's ring can be set up here.
func probeRing() error {
	ch := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		g, err := newRing()
		if err == nil {
			(&Loop{ring: g}).ringShutdown()
		}
		ch <- err
	}()
	return <-ch
}

// onRing skips a test outside the io_uring backend's run.
func onRing(t testing.TB) {
	t.Helper()
	if forcedBackend != BackendURing {
		t.Skip("io_uring backend only")
	}
}

// onEpoll skips a test outside the epoll backend's run.
func onEpoll(t testing.TB) {
	t.Helper()
	if forcedBackend != BackendEpoll {
		t.Skip("epoll backend only")
	}
}

// Where io_uring cannot be set up (seccomp, kernel.io_uring_disabled, an old kernel), a loop
// asked for it runs on epoll, and says so once.
func TestRingSetUpFailureFallsBackToEpoll(t *testing.T) {
	was, wasForced := newRingFn, forcedBackend
	t.Cleanup(func() { newRingFn, forcedBackend = was, wasForced })
	newRingFn = func() (*ringIO, error) { return nil, syscall.EPERM }
	forcedBackend = BackendURing
	var logged bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	fellBack = sync.Once{}
	for range 2 {
		l := newLoop(t, 0)
		if b := l.Backend(); b != BackendEpoll {
			t.Fatalf("backend %q, want epoll", b)
		}
		forcedBackend = wasForced
		checkLoopRelays(t, l)
		forcedBackend = BackendURing
	}
	if n := strings.Count(logged.String(), "io_uring could not be set up"); n != 1 {
		t.Fatalf("logged %d times, want once:\n%s", n, logged.String())
	}
}
