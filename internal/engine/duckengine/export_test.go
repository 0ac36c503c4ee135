package duckengine

// SetStartingHook runs fn right before each streaming statement starts, until the test ends.
func SetStartingHook(fn func()) (restore func()) {
	old := startingHook
	startingHook = fn
	return func() { startingHook = old }
}
