package engine

import (
	"context"
	"time"
)

// PGRelayer is an engine whose results the PostgreSQL frontend relays as the engine's own wire
// messages, without decoding them (passthrough; pgengine implements it).
type PGRelayer interface {
	RelayPG(ctx context.Context, st PGStatement) (PGResult, error)
}

// PGStatement is one statement to relay, as the client sent it.
type PGStatement struct {
	SQL string
	// Simple says the client sent it in a simple-protocol Query: it has no parameters and its
	// results are text, so the engine gets a Query message too.
	Simple bool
	// Prepared says the client prepared it as a named statement: the engine connection may keep
	// it prepared too (under a name of its own) and skip the Parse next time.
	Prepared bool
	// The client's Bind: parameter values, declared types and format codes, result format
	// codes. len(ParamOIDs) and len(ParamFormats) are 0, 1 or len(Params).
	Params        [][]byte
	ParamOIDs     []uint32
	ParamFormats  []int16
	ResultFormats []int16
	// Owner identifies the client (see PGWireOptions.Owner); 0 for none.
	Owner uint64
}

// PGResult is a relayed statement's result, read message by message. Messages are whole
// (type byte and length included) and valid until the next call.
type PGResult interface {
	// Description is the engine's RowDescription, or nil when the statement returns no rows.
	Description() []byte
	// NextRow is the next DataRow; false at the end of the rows or on an error (Close says).
	NextRow() ([]byte, bool)
	// Close reads what is left, frees the engine connection, and returns the command tag or
	// the statement's error. It may be called before the rows are exhausted.
	Close() (tag string, err error)
}

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
}

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
	// Cancel asks the engine to cancel what runs now (a cancel request); the connection is
	// not reused afterwards.
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
