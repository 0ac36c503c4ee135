package pgwire

// MessagesHeldWhole is how many large messages the server began to hold until whole.
func MessagesHeldWhole() int64 { return messagesHeldWhole.Load() }

// MayHoldSessionState is the event loop's first look at a statement (pooling.go).
var MayHoldSessionState = mayHoldSessionState

// PreparesAwaitingSync is how many prepares wait for the rest of their batch (prepareBatch).
func PreparesAwaitingSync() int64 { return preparesAwaitingSync.Load() }

// SameDigitShape is the event loop's test of a Query against the last plain one (loop.go).
var SameDigitShape = sameDigitShape
