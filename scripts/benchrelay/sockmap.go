package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/queryflux/queryflux/internal/sockmap"
)

// runSockmap (-sockmap) relays MySQL connections in the kernel (internal/sockmap: a sockhash and
// an sk_skb verdict program): the relay reads the engine's greeting (the engine speaks first and
// then waits, so nothing arrives while the pair joins the map), splices the pair, passes the
// greeting on, and afterwards only waits for the client's end. The bound of a relay hop that
// makes no system call and no wake-up of its own per statement.
func runSockmap(l net.Listener, upstream string, parser bool) {
	s, err := sockmap.New(4096, parser)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrelay:", err)
		os.Exit(2)
	}
	acceptPairs(l, upstream, func(c, d *net.TCPConn) { spliceMySQL(s, c, d) })
}

func spliceMySQL(s *sockmap.Splicer, client, server *net.TCPConn) {
	defer client.Close()
	defer server.Close()
	var head [4]byte
	if _, err := io.ReadFull(server, head[:]); err != nil {
		fmt.Fprintln(os.Stderr, "benchrelay: the greeting:", err)
		return
	}
	greeting := make([]byte, 4+int(binary.LittleEndian.Uint32(head[:])&0xffffff))
	copy(greeting, head[:])
	if _, err := io.ReadFull(server, greeting[4:]); err != nil {
		fmt.Fprintln(os.Stderr, "benchrelay: the greeting:", err)
		return
	}
	a, b := sockmap.ConnFD(client), sockmap.ConnFD(server)
	if err := s.Splice(a, b); err != nil {
		fmt.Fprintln(os.Stderr, "benchrelay:", err)
		return
	}
	defer func() { _ = s.Unsplice(a, b) }()
	if _, err := client.Write(greeting); err != nil {
		return
	}
	// Either end's close (or an error) ends the pair: a spliced socket's reads return only its
	// end, its bytes go to the peer.
	done := make(chan struct{}, 2)
	for _, c := range []*net.TCPConn{client, server} {
		go func() {
			var b [1]byte
			_, _ = c.Read(b[:])
			done <- struct{}{}
		}()
	}
	<-done
}

// acceptPairs accepts l's clients forever, dials upstream for each and runs serve with both on
// a goroutine of their own; it does not return.
func acceptPairs(l net.Listener, upstream string, serve func(client, server *net.TCPConn)) {
	for {
		c, err := l.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchrelay:", err)
			os.Exit(1)
		}
		go func() {
			d, err := net.Dial("tcp", upstream)
			if err != nil {
				fmt.Fprintln(os.Stderr, "benchrelay:", err)
				_ = c.Close()
				return
			}
			serve(c.(*net.TCPConn), d.(*net.TCPConn))
		}()
	}
}
