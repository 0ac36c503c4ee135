//go:build linux

package relayloop

import (
	"bytes"
	"errors"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The handbacks, on either backend (TestMain runs them on each). A ring takes a socket's bytes
// as they come, so at a handback some of them sit in its buffers rather than in the socket:
// whatever a pair hands back and what its socket still holds must together be every byte sent.

// remainder reads what fd holds now, without waiting.
func remainder(fd int) []byte {
	var out []byte
	b := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, b)
		if n <= 0 || err != nil {
			return out
		}
		out = append(out, b[:n]...)
	}
}

// Bytes A sent after a message its Watch held are handed back at Stop: in the Leftover (a
// ring's buffers had them) or still in A's socket.
func TestStopHandsBackWhatCameAfterAHold(t *testing.T) {
	l := newLoop(t, 0)
	held := make(chan struct{}, 1)
	var rest []byte
	r := startPair(t, l, [2]Framer{PGWatching('H'), nil}, func(d Direction, msg []byte) Verdict {
		if msg[0] == 'H' {
			held <- struct{}{}
			return Hold
		}
		return Relay
	}, func(p *Pair) {
		done, fa := p.Done, p.A
		p.Done = func(res Result) {
			rest = remainder(fa) // before Done closes it
			done(res)
		}
	})
	q := pgMsg('Q', []byte("relayed"))
	h := pgMsg('H', []byte("held"))
	after := bytes.Repeat(pgMsg('Q', []byte("after the hold")), 20) // more than one ring buffer
	if _, err := r.client.Write(append(q, h...)); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, r.server, len(q)); !bytes.Equal(got, q) {
		t.Fatalf("B got %q", got)
	}
	<-held
	if _, err := r.client.Write(after); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // a ring's receive takes them meanwhile
	r.handle.Stop()
	res := r.result(t)
	if !errors.Is(res.Err, ErrStopped) {
		t.Fatalf("stopped with %v", res.Err)
	}
	want := append(append([]byte(nil), h...), after...)
	if got := append(res.Leftover[AToB], rest...); !bytes.Equal(got, want) {
		t.Fatalf("handed back %d bytes (%d in the Leftover, %d in the socket), want %d: the held message and all after it",
			len(got), len(res.Leftover[AToB]), len(rest), len(want))
	}
}

// What B's peer sends after the message its Watch unplugs B at comes back with B: in
// Unplugged's rest (a ring's buffers had it) or still in B's socket.
func TestUnplugHandsBackWhatCameAfter(t *testing.T) {
	l := newLoop(t, 0)
	client, fa := aloneClient(t)
	b, server := tcpPair(t)
	t.Cleanup(func() { server.Close() })
	fb, err := Detach(b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(fb) })
	notice := bytes.Repeat(pgMsg('N', []byte("said after the transaction")), 400) // ~16 KiB
	z := pgMsg('Z', []byte{'I'})
	type back struct{ rest, socket []byte }
	unplugged := make(chan back, 1)
	done := make(chan Result, 1)
	h := l.NewHandle()
	err = h.Start(Pair{A: fa, B: -1, Framing: [2]Framer{PGWatching('Q'), PGWatching('Z')},
		Watch: func(d Direction, msg []byte) Verdict {
			if d == AToB {
				if err := h.Plug(fb); err != nil {
					t.Error(err)
				}
				return Relay
			}
			// B's peer goes on talking while the loop looks at its Z.
			time.Sleep(50 * time.Millisecond)
			return Unplug
		},
		Unplugged: func(fd int, rest []byte) {
			unplugged <- back{append([]byte(nil), rest...), remainder(fd)}
		},
		Done: func(r Result) { _ = unix.Close(fa); done <- r },
	})
	if err != nil {
		t.Fatal(err)
	}
	q := pgMsg('Q', []byte("select 1"))
	if _, err := client.Write(q); err != nil {
		t.Fatal(err)
	}
	readN(t, server, len(q))
	go func() {
		_, _ = server.Write(z)
		time.Sleep(10 * time.Millisecond)
		_, _ = server.Write(notice)
	}()
	if got := readN(t, client, len(z)); !bytes.Equal(got, z) {
		t.Fatalf("A got %q", got)
	}
	var got back
	select {
	case got = <-unplugged:
	case <-time.After(wait):
		t.Fatal("B was not unplugged")
	}
	if all := append(got.rest, got.socket...); !bytes.Equal(all, notice) {
		t.Fatalf("B came back with %d bytes (%d in rest, %d in the socket), want the %d its peer sent after Z",
			len(all), len(got.rest), len(got.socket), len(notice))
	}
	client.Close()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatal("the pair did not stop when A closed")
	}
}

// B's peer closing while the loop still sends to it (its socket full) stops the pair with an
// error, and the loop goes on relaying other pairs.
func TestPeerClosesMidSend(t *testing.T) {
	l := newLoop(t, 0)
	r := startPair(t, l, [2]Framer{nil, nil}, nil)
	go func() { _, _ = r.client.Write(make([]byte, 16<<20)) }() // B's peer reads none of it
	time.Sleep(100 * time.Millisecond)
	_ = r.server.SetLinger(0)
	r.server.Close()
	if res := r.result(t); res.Err == nil {
		t.Fatal("the pair stopped without an error")
	}
	checkLoopRelays(t, l)
}

// A client killed (a reset) while the loop streams to it stops the pair, and the loop goes on.
func TestClientKilledWhileStreaming(t *testing.T) {
	l := newLoop(t, 0)
	r := startPair(t, l, [2]Framer{PGWatching('Q'), PGWatching('Z')}, func(Direction, []byte) Verdict { return Relay })
	rows := bytes.Repeat(pgMsg('D', make([]byte, 1000)), 4096)
	go func() { _, _ = r.server.Write(rows) }()
	readN(t, r.client, 10000) // the stream is under way
	_ = r.client.SetLinger(0)
	r.client.Close()
	if res := r.result(t); res.Err == nil {
		t.Fatal("the pair stopped without an error")
	}
	checkLoopRelays(t, l)
}

// checkLoopRelays relays one message each way on a fresh pair of l.
func checkLoopRelays(t *testing.T, l *Loop) {
	t.Helper()
	r := startPair(t, l, [2]Framer{nil, nil}, nil)
	for _, c := range [][2]*net.TCPConn{{r.client, r.server}, {r.server, r.client}} {
		m := []byte("still relaying")
		if _, err := c[0].Write(m); err != nil {
			t.Fatal(err)
		}
		if got := readN(t, c[1], len(m)); !bytes.Equal(got, m) {
			t.Fatalf("got %q", got)
		}
	}
	r.handle.Stop()
	r.result(t)
}
