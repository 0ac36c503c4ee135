package pgwire

// MessagesHeldWhole is how many large messages the server began to hold until whole.
func MessagesHeldWhole() int64 { return messagesHeldWhole.Load() }

// MayHoldSessionState is the event loop's first look at a statement (pooling.go).
var MayHoldSessionState = mayHoldSessionState

// PreparesAwaitingSync is how many prepares wait for the rest of their batch (prepareBatch).
func PreparesAwaitingSync() int64 { return preparesAwaitingSync.Load() }

// SameDigitShape is the event loop's test of a Query against the last plain one (loop.go).
var SameDigitShape = sameDigitShape

// LoopWatched is how many of the engine's messages the loop looked at in the answers of the
// connections that have left it.
func (s *Server) LoopWatched() int64 { return s.loopWatched.Load() }
