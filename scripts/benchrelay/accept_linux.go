package main

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"

	"github.com/queryflux/queryflux/internal/relayloop"
)

// serveDetached starts a relay thread (start reports whether it is ready), then accepts l's
// clients forever: each client and a new connection to upstream are detached from Go's poller
// and handed to the thread (hand); it does not return.
func serveDetached(l net.Listener, upstream string, start func(ready chan<- error), hand func(a, b int)) {
	ready := make(chan error)
	go start(ready)
	if err := <-ready; err != nil {
		fmt.Fprintln(os.Stderr, "benchrelay:", err)
		os.Exit(1)
	}
	acceptPairs(l, upstream, func(c, s *net.TCPConn) {
		a, err := relayloop.Detach(c)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchrelay:", err)
			return
		}
		b, err := relayloop.Detach(s)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchrelay:", err)
			_ = unix.Close(a)
			return
		}
		hand(a, b)
	})
}
