//go:build linux

package relayloop

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// A that begins a message and does not finish it within the pair's MessageTimeout stops the
// pair with ErrMessageTimeout: half a watched message, half a header, and an unwatched message
// trickled a byte at a time.
func TestMessageTimeoutStopsAHalfSentMessage(t *testing.T) {
	l := newLoop(t, 0)
	timeout := func(p *Pair) { p.MessageTimeout = 200 * time.Millisecond }
	relayAll := func(Direction, []byte) Verdict { return Relay }
	cases := map[string]func(r *relayed){
		"half a message": func(r *relayed) { _, _ = r.client.Write(pgMsg('Q', make([]byte, 100))[:20]) },
		"half a header":  func(r *relayed) { _, _ = r.client.Write([]byte{'Q', 0}) },
		"a byte at a time": func(r *relayed) {
			go func() { // the sender's pace: a byte every 20 ms of a message that never ends
				msg := pgMsg('d', make([]byte, 1000))
				for i := range msg {
					if _, err := r.client.Write(msg[i : i+1]); err != nil {
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
			}()
		},
	}
	for name, send := range cases {
		t.Run(name, func(t *testing.T) {
			r := startPair(t, l, [2]Framer{PGWatching('Q'), PGWatching('Z')}, relayAll, timeout)
			send(r)
			if res := r.result(t); !errors.Is(res.Err, ErrMessageTimeout) || res.Side != AToB {
				t.Fatalf("got %v on %v, want %v on a->b", res.Err, res.Side, ErrMessageTimeout)
			}
		})
	}
}

// Only a message begun counts: A idle between messages for longer than the timeout, and A
// sending message after message each within the timeout but all of them over a longer time,
// keep the pair running.
func TestMessageTimeoutSparesIdleAndSteadySenders(t *testing.T) {
	l := newLoop(t, 0)
	// Each message's halves come 120 ms apart, well within the timeout even when a loaded
	// machine oversleeps, and the ten messages take 1.2 s, three times the timeout.
	timeout := func(p *Pair) { p.MessageTimeout = 400 * time.Millisecond }
	relayAll := func(Direction, []byte) Verdict { return Relay }
	framing := [2]Framer{PGWatching('Q'), PGWatching('Z')}
	idle := startPair(t, l, framing, relayAll, timeout)
	steady := startPair(t, l, framing, relayAll, timeout)
	msg := pgMsg('Q', bytes.Repeat([]byte{'x'}, 50))
	var stream []byte
	go func() { // each message in two halves 120 ms apart, ten of them: 1.2 s in all
		for range 10 {
			_, _ = steady.client.Write(msg[:30])
			time.Sleep(120 * time.Millisecond)
			_, _ = steady.client.Write(msg[30:])
		}
	}()
	for range 10 {
		stream = append(stream, msg...)
	}
	if got := readN(t, steady.server, len(stream)); !bytes.Equal(got, stream) {
		t.Fatal("the steady sender's stream differs from what was sent")
	}
	// The idle pair has been idle for more than the timeout once another pair's half-sent
	// message, begun after, has timed out.
	other := startPair(t, l, framing, relayAll, timeout)
	_, _ = other.client.Write([]byte{'Q'})
	if res := other.result(t); !errors.Is(res.Err, ErrMessageTimeout) {
		t.Fatalf("the half-sent message: %v", res.Err)
	}
	if _, err := idle.client.Write(msg); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, idle.server, len(msg)); !bytes.Equal(got, msg) {
		t.Fatal("the idle sender's message differs from what was sent")
	}
	for name, r := range map[string]*relayed{"idle": idle, "steady": steady} {
		select {
		case res := <-r.done:
			t.Fatalf("the %s sender's pair stopped: %v", name, res.Err)
		default:
		}
	}
}
