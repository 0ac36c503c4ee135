package duckengine

import "time"

// WriteLockWork is e's write lock's holder (0: free) and its statements and results under way.
func WriteLockWork(e *Engine) (holder uint64, running int) {
	e.writes.mu.Lock()
	defer e.writes.mu.Unlock()
	return e.writes.rules.holder, e.writes.rules.running
}

// WriteLockMoved is when e's write lock's holder last moved, on the lock's clock.
func WriteLockMoved(e *Engine) time.Duration {
	e.writes.mu.Lock()
	defer e.writes.mu.Unlock()
	return e.writes.rules.moved
}
