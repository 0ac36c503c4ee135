// Package freeport hands out loopback ports for daemons that tests and the chaos harness start.
// Such a port is free when it is handed out but taken only when the daemon binds it, so it
// comes from below the kernel's ephemeral range (32768-60999 on Linux): an outgoing connection
// of any process cannot land on it in between, as it can on a port from "127.0.0.1:0". One
// process never hands out a port twice.
//
// determinism: outside the simulator (binds loopback ports for real daemons)
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
)

// Closed is a loopback address nothing listens on, for a test of an engine that is down: port 1
// (tcpmux), which no daemon here binds and no "127.0.0.1:0" listener is handed, so a dial there
// is refused at once (a port closed after "127.0.0.1:0" may be handed to another listener).
const Closed = "127.0.0.1:1"

// low and high bound the ports handed out: [low, high).
const low, high = 20000, 32000

var (
	mu    sync.Mutex
	given = map[int]bool{}
)

// Loopback returns "127.0.0.1:port" for a port free now that this process never handed out.
func Loopback() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	for range 1000 {
		port := low + rand.IntN(high-low)
		if given[port] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l.Close()
		given[port] = true
		return l.Addr().String(), nil
	}
	return "", fmt.Errorf("no free loopback port in %d-%d", low, high-1)
}
