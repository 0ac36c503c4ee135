package engine

import "context"

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
