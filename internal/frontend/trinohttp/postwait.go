package trinohttp

import "time"

// awaitEnd waits until q's statement ended, or wait passed (runThenAnswer under a server other
// than httplite).
func (q *runningQuery) awaitEnd(wait time.Duration) {
	timer := pollTimer(wait)
	defer func() {
		timer.Stop()
		pollTimers.Put(timer)
	}()
	q.mu.Lock()
	defer q.mu.Unlock()
	for !q.done {
		changed := q.changedLocked()
		q.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
			q.mu.Lock()
			return
		}
		q.mu.Lock()
	}
}
