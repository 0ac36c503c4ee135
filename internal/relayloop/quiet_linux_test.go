//go:build linux

package relayloop

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

// A turn whose only news is a request sent on (quiet: nothing waits for its completion but
// the peer's answer) submits it and awaits the answer in the same enter, where it took a look
// that submitted it and a wait after.
func TestRingSendsAQuietRequestAndWaitsInOneEnter(t *testing.T) {
	onRing(t)
	l := newLoop(t, 0)
	if !l.ring.flagged {
		t.Skip("a kernel that flags no deferred completions: every turn looks first")
	}
	r := startPair(t, l, [2]Framer{nil, PGWatching('Z')}, func(Direction, []byte) Verdict { return Relay })
	r.exchange(t)
	before := l.quietWaits.Load()
	const n = 40
	for range n {
		r.exchange(t)
	}
	// Two sends an exchange (the request, the answer), each submitted with the wait that
	// follows it; a few may find their next news there already and look instead.
	if quiet := l.quietWaits.Load() - before; quiet < n {
		t.Fatalf("%d turns over %d exchanges submitted their sends and waited in one enter, want %d or more", quiet, n, n)
	}
}

// exchange relays a request from the client and its answer from the server, each seen whole.
func (r *relayed) exchange(t testing.TB) {
	t.Helper()
	q, z := pgMsg('Q', []byte("select 1\x00")), pgMsg('Z', []byte{'I'})
	if _, err := r.client.Write(q); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, r.server, len(q)); !bytes.Equal(got, q) {
		t.Fatalf("the engine read %q, want %q", got, q)
	}
	if _, err := r.server.Write(z); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, r.client, len(z)); !bytes.Equal(got, z) {
		t.Fatalf("the client read %q, want %q", got, z)
	}
}

// Requests and answers of any size, written in any pieces, to a client whose socket takes
// little at a time (short sends), reach the other side whole and in order: a send awaited
// with the next news, or sent whole by the kernel, loses nothing and stalls nothing.
func TestRelayedExchangesArriveWholeWhateverTheirSizes(t *testing.T) {
	l := newLoop(t, 0)
	rapid.Check(t, func(rt *rapid.T) {
		r := startPair(t, l, [2]Framer{PGWatching('Q'), PGWatching('Z')}, func(Direction, []byte) Verdict { return Relay })
		if rapid.Bool().Draw(rt, "small client buffer") {
			_ = r.client.SetReadBuffer(4 << 10)
		}
		sizes := rapid.SliceOfN(rapid.IntRange(1, 9000), 1, 6).Draw(rt, "write sizes")
		for i, k := 0, rapid.IntRange(1, 6).Draw(rt, "exchanges"); i < k; i++ {
			q := pgMsg('Q', bytes.Repeat([]byte{byte('a' + i)}, rapid.IntRange(0, 20000).Draw(rt, "request")))
			var answer []byte
			for j, m := 0, rapid.IntRange(0, 4).Draw(rt, "rows"); j < m; j++ {
				answer = append(answer, pgMsg('D', bytes.Repeat([]byte{byte(j)}, rapid.IntRange(0, 24000).Draw(rt, "row")))...)
			}
			answer = append(answer, pgMsg('Z', []byte{'I'})...)
			errs := make(chan error, 1)
			go func() { errs <- writeChunks(r.client, q, sizes) }()
			if got := readN(t, r.server, len(q)); !bytes.Equal(got, q) {
				rt.Fatalf("exchange %d: the engine read %d bytes differing from the %d sent", i, len(got), len(q))
			}
			if err := <-errs; err != nil {
				rt.Fatal(err)
			}
			go func() { errs <- writeChunks(r.server, answer, sizes) }()
			if got := readN(t, r.client, len(answer)); !bytes.Equal(got, answer) {
				rt.Fatalf("exchange %d: the client read %d bytes differing from the %d answered", i, len(got), len(answer))
			}
			if err := <-errs; err != nil {
				rt.Fatal(err)
			}
		}
		r.client.Close()
		if res := r.result(t); res.Err != ErrClosed {
			rt.Fatalf("the pair stopped with %v, want %v", res.Err, ErrClosed)
		}
	})
}

// A quiet send to a client that reads nothing (its socket full) never holds the loop's wait:
// another pair of the loop is relayed at every step while the first one's answers pile up in
// front of its client. (A quiet send that waited for room in the kernel left the turn's wait
// one completion short of its count: the loop slept through the other pair's request.) Once
// its client reads, the first pair's answers arrive whole and in order.
func TestAQuietSendToAFullSocketHoldsNoOtherPair(t *testing.T) {
	l := newLoop(t, 0)
	relay := func(Direction, []byte) Verdict { return Relay }
	smallSend := func(p *Pair) {
		if err := unix.SetsockoptInt(p.A, unix.SOL_SOCKET, unix.SO_SNDBUF, 4096); err != nil {
			t.Fatal(err)
		}
	}
	stuck := startPair(t, l, [2]Framer{nil, PGWatching('Z')}, relay, smallSend)
	if err := stuck.client.SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	other := startPair(t, l, [2]Framer{nil, PGWatching('Z')}, relay)
	q, z := pgMsg('Q', []byte("select 1\x00")), pgMsg('Z', []byte{'I'})
	var sent []byte
	for i := range 24 {
		answer := append(pgMsg('D', bytes.Repeat([]byte{byte(i)}, 3000)), z...)
		sent = append(sent, answer...)
		if _, err := stuck.server.Write(answer); err != nil {
			t.Fatal(err)
		}
		if _, err := other.client.Write(q); err != nil {
			t.Fatal(err)
		}
		if got := readN(t, other.server, len(q)); !bytes.Equal(got, q) {
			t.Fatalf("step %d: the other engine read %q, want %q", i, got, q)
		}
		if _, err := other.server.Write(z); err != nil {
			t.Fatal(err)
		}
		if got := readN(t, other.client, len(z)); !bytes.Equal(got, z) {
			t.Fatalf("step %d: the other client read %q, want %q", i, got, z)
		}
	}
	if got := readN(t, stuck.client, len(sent)); !bytes.Equal(got, sent) {
		t.Fatalf("the client that read late read %d bytes differing from the %d answered", len(got), len(sent))
	}
}
