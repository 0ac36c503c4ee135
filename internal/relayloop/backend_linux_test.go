//go:build linux

package relayloop

import (
	"fmt"
	"os"
	"runtime"
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
