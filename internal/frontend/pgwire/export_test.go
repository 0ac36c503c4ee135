package pgwire

// MessagesHeldWhole is how many large messages the server began to hold until whole.
func MessagesHeldWhole() int64 { return messagesHeldWhole.Load() }

// MayHoldSessionState is the event loop's first look at a statement (pooling.go).
var MayHoldSessionState = mayHoldSessionState
