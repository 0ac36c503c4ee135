// Package relayloop relays bytes between pairs of sockets on an event loop: one OS thread
// waits in epoll on non-blocking sockets, reads the one that is ready and writes the bytes
// straight to its peer, as PgBouncer does. A goroutine per direction instead costs a
// scheduler park and wake for every message on each side, which on a busy machine is most of
// a proxy hop's CPU.
//
// The loop still sees the messages a proxy must see: a Framer tells it where each message of
// a direction ends and which ones a Watch callback gets whole (PostgreSQL's ReadyForQuery,
// ErrorResponse, Terminate); every other message streams through whatever its size. A Watch
// may end the pair, or pause it to hand both sockets back to their owner with the bytes read
// but not relayed yet.
//
// A pair may run with one socket: B is plugged in (Handle.Resume) and out (Unplug) while A
// stays, as a client stays on a proxy while engine connections come and go between its
// transactions. Without B every message of A's is watched, and the Watch holds it (Hold)
// until a B is plugged in, or answers it itself (Answer).
//
// It touches only the sockets handed to it (a Conn's, lent), its epoll instance, an eventfd
// (Linux) and the wall clock (a pair's MessageTimeout).
//
// determinism: outside the simulator (network I/O on an OS thread of its own)
package relayloop

import (
	"encoding/binary"
	"errors"
	"time"
)

// Framer finds the message boundaries of one direction.
type Framer interface {
	// HeaderLen is how many leading bytes of a message Frame needs.
	HeaderLen() int
	// Frame returns a message's total length from its header, and whether the Watch gets it
	// whole before it is relayed (one that does not fit in the loop's buffer pauses the pair).
	// header holds the message's first bytes as far as they were read: at least HeaderLen.
	// A message Frame watched is framed again, with more of it, until it is whole.
	Frame(header []byte) (total int, watch bool)
}

// Verdict is what a Watch decides about a message it saw.
type Verdict int

const (
	// Relay passes the message on and goes on.
	Relay Verdict = iota
	// Drop swallows the message and goes on.
	Drop
	// Pause relays what came before the message, then stops the pair: the message and what
	// follows are handed back (Done's Leftover), the message first.
	Pause
	// End relays the message and what came before it, then ends the pair.
	End
	// Hold stops reading the direction at the message: it and what follows wait until
	// Handle.Resume, which frames them again (the Watch sees the message again).
	Hold
	// Unplug (BToA only) relays the message and what came before it, then takes B out of the
	// pair (Pair.Unplugged); the pair goes on with A alone.
	Unplug
	// Replace relays other bytes in the message's stead (Handle.Replacing) and goes on: a
	// proxy renames what the peer knows under another name, or sends a message before it.
	Replace
	// Answer (A's messages, while no B is plugged in) swallows the message and writes other
	// bytes back to A in its stead (Handle.Answering): a proxy answers what needs no peer,
	// such as a statement's Close between transactions. Where B is plugged in, or A does not
	// read what it was answered and the answers fill the buffer, it is Pause.
	Answer
)

// Direction names one way of a pair: A to B, or B to A.
type Direction int

const (
	AToB Direction = iota
	BToA
)

func (d Direction) String() string {
	if d == AToB {
		return "a->b"
	}
	return "b->a"
}

// Pair is two connected sockets to relay between. The loop owns the file descriptors while
// the pair runs; Done says when it no longer does (it never closes them itself).
type Pair struct {
	A, B int // file descriptors of connected stream sockets; B is -1 when none is plugged in
	// Framing of each direction: AToB (what A sends) and BToA; nil relays bytes unseen.
	Framing [2]Framer
	// Watch gets each message a Framer marks as watched, on the loop's thread: it must not
	// block.
	Watch func(d Direction, msg []byte) Verdict
	// Done is called once when the pair stops: on the loop's thread, or on Add's caller when
	// the loop was already closed.
	Done func(Result)
	// Ahead is what was read from A before the pair started: framed and relayed first. It
	// must fit in the loop's buffer.
	Ahead []byte
	// Unplugged is called on the loop's thread when a Watch's Unplug took B out: fd is B,
	// rest what B sent after the unplugging message (nil unless its peer spoke out of turn).
	Unplugged func(fd int, rest []byte)
	// KeepB leaves an unplugged B in the loop's epoll set, idle, so that plugging it in again
	// (into any pair of this loop) costs no system call: a pooled engine connection goes from
	// transaction to transaction without two epoll_ctl each. The socket's owner must call
	// Release before it closes the socket or reads it elsewhere (Conn does).
	KeepB bool
	// StayB says that a B stays plugged in from one of its answers to the next, as a client's
	// engine connection kept between its statements does, rather than leaving at each answer's
	// end. On a ring its receive then stays armed (multishot, as A's): a B armed once per answer
	// costs the kernel, at every answer, a receive that finds nothing and a poll armed for it;
	// an unplug of a B whose receive stays armed cancels it and awaits the cancel, an
	// io_uring_enter of its own, which a B unplugged at every answer's end would pay each time.
	// Epoll ignores it.
	StayB bool
	// MessageTimeout, when set, bounds how long A may leave a message half sent: a pair whose
	// A began a message and did not finish it within MessageTimeout stops with
	// ErrMessageTimeout. Time between messages, and while A's direction is held, never counts.
	MessageTimeout time.Duration
	// WriteTimeout, when set, bounds how long the writes to A may make no progress: a pair
	// whose bytes for A wait (A's socket full: a client that stopped reading) while A's socket
	// takes nothing and its peer acknowledges nothing for WriteTimeout stops with
	// ErrWriteTimeout. A slow reader that keeps reading is never stopped.
	WriteTimeout time.Duration
}

// Result is how a pair stopped.
type Result struct {
	// Err is nil when a Watch ended or paused the pair, ErrClosed when a side closed its
	// end, ErrStopped when it was stopped from outside, else what failed.
	Err  error
	Side Direction // with Err: the direction whose read or write failed
	// Paused: the Watch said Pause. Leftover holds each direction's bytes read but not yet
	// written to the peer, in order ([AToB] came from A): the paused direction's start with
	// the message its Watch paused at. Of the other direction's, the first Scanned[d] bytes
	// were already framed (their watched messages seen), and when Remaining[d] > 0 the
	// Leftover starts inside a message whose first bytes were relayed, Remaining[d] of it
	// being still to come.
	Paused bool
	// B is the socket plugged in as B when the pair stopped, -1 when none was.
	B         int
	Leftover  [2][]byte
	Scanned   [2]int
	Remaining [2]int
}

// ErrClosed is a Result's Err when a side closed its end of the connection.
var ErrClosed = errors.New("relayloop: the peer closed the connection")

// ErrUnplugBusy is a Result's Err when B was to be unplugged while bytes framed from A still
// waited to be written to it.
var ErrUnplugBusy = errors.New("relayloop: unplug while the other direction still writes to B")

// ErrMessageTimeout is a Result's Err (Side AToB) when A left a message half sent for longer
// than the pair's MessageTimeout.
var ErrMessageTimeout = errors.New("relayloop: a message was not received whole in time")

// ErrWriteTimeout is a Result's Err (Side BToA) when the writes to A made no progress for
// longer than the pair's WriteTimeout.
var ErrWriteTimeout = errors.New("relayloop: the client took nothing of its answer in time (it stopped reading)")

// ErrMalformed is a Result's Err when a Framer found a message shorter than its header.
var ErrMalformed = errors.New("relayloop: a message is shorter than its header")

// ErrMessageTooLarge is a Result's Err when a watched message does not fit in the buffer:
// the pair is paused before it (Paused, Leftover), as if its Watch had said Pause.
var ErrMessageTooLarge = errors.New("relayloop: a watched message is larger than the relay buffer")

// PG frames PostgreSQL protocol messages after startup: a type byte and a 4-byte length that
// counts itself. Watched lists the message types a Watch sees whole; the messages of the
// Counted types that are not watched are counted (Count, and their length in Bytes) as they
// pass, for a proxy that reports rows without looking at them. A counting PG serves one
// direction of one pair, and its counts are read on the loop's thread (in a Watch).
type PG struct {
	Watched, Counted [256]bool
	Count, Bytes     int64
	// WatchAll watches every message, whatever its type: a peer that should be silent (an
	// engine connection kept between a client's transactions) is seen whatever it says.
	WatchAll bool
}

// PGWatching is a PG framer that watches the given message types.
func PGWatching(types ...byte) *PG {
	f := &PG{}
	for _, t := range types {
		f.Watched[t] = true
	}
	return f
}

func (f *PG) HeaderLen() int { return 5 }

func (f *PG) Frame(h []byte) (int, bool) {
	total := 1 + int(binary.BigEndian.Uint32(h[1:5]))
	if f.Watched[h[0]] || f.WatchAll {
		return total, true
	}
	if f.Counted[h[0]] { // framed once: an unwatched message is never framed again
		f.Count++
		f.Bytes += int64(total)
	}
	return total, false
}
