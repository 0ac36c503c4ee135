package pgengine

// SetRelayWaiting has f called each time a relay connect starts waiting for a connection to
// come back, so a test can act once the wait has begun.
func SetRelayWaiting(e *Engine, f func()) { e.raw.waiting = f }
