package engine

import (
	"context"
	"errors"
	"time"
)

// PGWireOpener is implemented by engines (and by backends that forward to one) that hand a
// frontend one engine connection to drive message by message: the PostgreSQL frontend then
// forwards the client's own protocol (extended-protocol portals with row limits, COPY, notices,
// notifications) instead of running statements one by one.
type PGWireOpener interface {
	OpenPGWire(ctx context.Context, o PGWireOptions) (PGWire, error)
}

// PGWireOptions say whom an engine connection serves.
type PGWireOptions struct {
	// Owner identifies the client connection (non-zero). A connection that served another
	// owner is reset (ResetQuery) before it serves this one.
	Owner uint64
	// ResetQuery is run (simple Query) before a connection serves a new owner; "" means
	// DISCARD ALL.
	ResetQuery string
	// Setup is run (simple Query) when a connection starts serving this owner: the client's
	// startup settings as SET statements. "" runs nothing.
	Setup string
	// NoWait takes only an idle connection that needs no round trip first (one that last
	// served Owner, tagged as the statement's lease wants): anything else answers
	// ErrWouldWait at once, for a caller that must not block (an event loop's thread).
	NoWait bool
	// Spare is a wire this engine opened before, closed, that nothing reaches any more (no
	// late Cancel either: its caller's query timeout never fired): the new wire may be made in
	// its memory, sparing an allocation per transaction. nil, or a wire that does not qualify,
	// makes a new one.
	Spare PGWire
	// Tag is the engine tag the statements run under (their capacity lease's, see
	// query.WithEngineTag), handed here rather than in ctx: a context less per transaction.
	// "" takes ctx's, unless TagGiven.
	Tag string
	// TagGiven: Tag is the answer even when it is "" (no lease's tag), and ctx is not asked.
	// The proxy core's wire sets it: its slot's tag is the statements' (a context lookup of a
	// key ctx does not hold walks the whole chain, ~110 instructions a transaction).
	TagGiven bool
	// Kept is the owner's last wire, which its caller may keep between transactions
	// (PGWireKeeper.Keep): under NoWait, when it is kept and its connection serves this
	// transaction at once (the owner's, its setup, the tag), it is the answer, taken over
	// without the pool. Otherwise it is left alone (its caller gives it back) and its memory
	// is not reused.
	Kept PGWire
}

// PGWireKeeper is a PGWireSocket whose connection a frontend's event loop may keep plugged in
// between its owner's transactions (transaction pool mode), rather than give it back and take
// it again each time; it still counts in the engine's budget.
type PGWireKeeper interface {
	// Keep is asked at a transaction's end, before the wire's Close: true when h may keep the
	// connection (Close then leaves it out of the pool) until the owner's next OpenPGWire
	// takes it over (PGWireOptions.Kept) or h gives it back. From the first Keep until it
	// gives the connection back, h must answer Reclaim.
	Keep(h PGWireHolder) bool
	// GiveBack returns a kept connection its holder let go of (its socket unplugged): to the
	// pool, or closed when not healthy.
	GiveBack(healthy bool)
}

// PGWireHolder keeps engine connections between its owner's transactions.
type PGWireHolder interface {
	// Reclaim asks for w (a wire it kept) back: given back at once when it is kept between
	// transactions, else at its transaction's end (Keep answers false then). It must not
	// wait.
	Reclaim(w PGWire)
}

// ErrWouldWait is the answer of an operation told not to wait (PGWireOptions.NoWait, the
// proxy core's NoWait) when it would have: nothing was done, ask again where waiting is fine.
var ErrWouldWait = errors.New("engine: this would wait")

// PGWire is one engine connection driven at the wire level. Messages are whole (type byte and
// length included). Close (engine.Session) returns the connection to its pool when it is idle
// and synchronised, and closes it otherwise.
type PGWire interface {
	Session
	// Send queues one frontend message for the engine; Flush writes what is queued.
	Send(msg []byte)
	Flush() error
	// Next is the engine's next message, valid until the next call.
	Next() ([]byte, error)
	// SetReadDeadline bounds a Next that waits (a zero time removes the bound).
	SetReadDeadline(t time.Time) error
	// Cancel asks the engine to cancel what runs now (a cancel request, sent on a goroutine of
	// its own: Cancel does not wait); the connection is not reused afterwards. After Close it
	// does nothing.
	Cancel()
	// Discard marks the connection unusable: Close then closes it.
	Discard()
	// Statement is the name a client statement (by key: its SQL and declared parameter types)
	// is prepared under on this connection. With create, a statement not prepared yet gets a
	// new name (ok false: the caller sends the Parse); name is "" when the connection keeps
	// too many statements already.
	Statement(key string, create bool) (name string, ok bool)
	// Forget drops key (its Parse failed); ForgetAll drops every statement (the client ran
	// DEALLOCATE ALL or DISCARD ALL).
	Forget(key string)
	ForgetAll()
}

// PGWireSocket is a PGWire whose socket an event loop may relay on byte for byte (pgengine's
// plain TCP connections): the frontend's loop then writes the client's messages and reads the
// server's answers itself, and tells the connection what passed, so that it knows its state
// when it is closed or driven message by message again.
type PGWireSocket interface {
	// LendSocket takes the socket out of Go's poller for the loop and returns it; ok is false
	// when the connection cannot be relayed byte for byte (TLS, bytes already read and kept,
	// unwritten messages). The socket stays the connection's: the loop lets go of it before
	// Close, and the connection's own reads and writes take it back.
	LendSocket() (fd int, ok bool)
	// Relayed accounts for one frontend message the loop wrote (by its type).
	Relayed(kind byte)
	// Ready accounts for a ReadyForQuery the loop relayed (its transaction status).
	Ready(txStatus byte)
	// Unread gives back bytes the loop read from the socket but did not relay: the
	// connection's next reads return them first.
	Unread(b []byte)
}
