package relayloop

import (
	"sync"
	"time"
)

// Lazy is a server's loop, started on first use: a server that never relays a connection
// never starts its thread. The zero Lazy starts one; Off keeps it from ever starting.
type Lazy struct {
	// Off: Get answers nil (the server relays with goroutines).
	Off bool
	// Failed, when set, is told once why no loop could start (outside Linux, no epoll).
	Failed func(error)
	// Backend is the backend the loop prefers (BackendAuto: the package's default); the
	// environment's BackendEnv overrides it.
	Backend Backend
	// Spin bounds the loop's spinning wait (0: never; rawconn.Spin is the daemon's).
	Spin time.Duration

	once sync.Once
	l    *Loop
}

// Get is the loop, started on the first call; nil when Off or when it could not start.
func (z *Lazy) Get() *Loop {
	z.once.Do(func() {
		if z.Off {
			return
		}
		l, err := NewWith(0, z.Backend, z.Spin)
		if err != nil {
			if z.Failed != nil {
				z.Failed(err)
			}
			return
		}
		z.l = l
	})
	return z.l
}

// Close closes the loop if one started (stopping its pairs, and waiting for it), and keeps
// one from starting afterwards.
func (z *Lazy) Close() {
	z.once.Do(func() {})
	if z.l != nil {
		z.l.Close()
	}
}
