package main

import (
	"bufio"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"

	"github.com/queryflux/queryflux/internal/relayloop"
	"github.com/queryflux/queryflux/internal/sockmap"
)

// runSockResults (-sockmap-results) relays MySQL connections as a proxy that must see each
// request would, with the answers spliced (internal/sockmap): the login in user space, then
// the engine's answers go to the client in the kernel and each answer's end is read from the
// splice's memory at the next request. The requests are read by a goroutine per client
// (sockmap.RelayMySQL), or with ev by the event loop (framed as MySQL packets, each one's
// Watch reading the end before it): the loop's read of the engine socket then only ever finds
// its close.
func runSockResults(l net.Listener, upstream string, ev *relayloop.Loop) {
	s, err := sockmap.NewResults(4096)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrelay:", err)
		os.Exit(2)
	}
	acceptPairs(l, upstream, func(client, engine *net.TCPConn) {
		if ev != nil {
			resultsOnLoop(s, ev, client, engine)
			return
		}
		defer client.Close()
		defer engine.Close()
		var statements, rows int64
		err := sockmap.RelayMySQL(s, client, engine, func(_ []byte, prev sockmap.End) error {
			statements, rows = statements+1, rows+prev.Rows
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchrelay:", err)
		}
	})
}

func resultsOnLoop(s *sockmap.ResultSplicer, ev *relayloop.Loop, client, engine *net.TCPConn) {
	p, err := sockmap.SpliceMySQL(s, client, engine, bufio.NewReaderSize(client, 4<<10))
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrelay:", err)
		_ = client.Close()
		_ = engine.Close()
		return
	}
	a, err := relayloop.Detach(client)
	if err == nil {
		var b int
		if b, err = relayloop.Detach(engine); err != nil {
			_ = unix.Close(a)
		} else {
			var prev sockmap.End
			var statements, rows int64
			_, err = ev.Add(relayloop.Pair{A: a, B: b,
				Framing: [2]relayloop.Framer{&relayloop.MySQL{WatchMax: 1 << 20}, nil},
				Watch: func(relayloop.Direction, []byte) relayloop.Verdict {
					if p.Ends() != prev.Seq {
						prev = p.LastEnd()
						statements, rows = statements+1, rows+prev.Rows
					}
					return relayloop.Relay
				},
				Done: func(relayloop.Result) { _ = p.Unsplice(); _ = unix.Close(a); _ = unix.Close(b) }})
		}
	}
	if err != nil {
		_ = p.Unsplice()
		fmt.Fprintln(os.Stderr, "benchrelay:", err)
	}
}
