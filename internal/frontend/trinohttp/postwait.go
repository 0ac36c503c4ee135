package trinohttp

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queryflux/queryflux/internal/httplite"
)

// postWatch answers a POST whose statement runs on its handler's goroutine past PostWait
// (runThenAnswer): its timer's goroutine answers QUEUED and detaches the answer, unless the
// statement ended first and its handler answers it. Watches are reused (Server.postWatches): a timer
// and a closure per statement were three allocations.
type postWatch struct {
	s     *Server
	timer *time.Timer // fires answer
	mu    sync.Mutex  // held by answer while it writes: end waits for it
	state atomic.Int32
	w     http.ResponseWriter
	r     *http.Request
	q     *runningQuery
	again bool // its timer will not fire: it can be reused
}

// The states of a postWatch.
const (
	watchRunning  = iota // the statement runs, the POST is unanswered
	watchEnded           // the statement ended first: its handler answers
	watchAnswered        // the timer answered first
)

// watchPost arms a watch of the POST answered by w, for q.
func (s *Server) watchPost(w http.ResponseWriter, r *http.Request, q *runningQuery) *postWatch {
	p, _ := s.postWatches.Get().(*postWatch)
	if p == nil {
		p = &postWatch{s: s}
	}
	p.w, p.r, p.q = w, r, q
	p.state.Store(watchRunning)
	if p.timer == nil {
		p.timer = time.AfterFunc(s.opts.PostWait, p.answer)
	} else {
		p.timer.Reset(s.opts.PostWait)
	}
	return p
}

// answer runs on the timer's goroutine: the statement has run PostWait; unless it ended, the
// POST is answered now, and the connection's next request is served on (httplite.Detach).
func (p *postWatch) answer() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state.CompareAndSwap(watchRunning, watchAnswered) {
		p.s.respond(p.w, p.r, p.q, 0, 0, true)
		httplite.Detach(p.w, inlineWait)
	}
}

// end is called once the statement ended. It reports true when the POST is still unanswered
// (the handler answers it); false once the timer's answer is written, the handler then
// touching its answer no more.
func (p *postWatch) end() bool {
	if p.state.CompareAndSwap(watchRunning, watchEnded) {
		p.again = p.timer.Stop() // false: answer runs, or is about to, and finds the watch ended
		return true
	}
	p.mu.Lock() // answer took it before it answered: this waits for the answer to be written
	p.mu.Unlock()
	p.again = true
	return false
}

// release puts p back for another POST, unless its timer may still fire.
func (p *postWatch) release() {
	p.w, p.r, p.q = nil, nil, nil
	if p.again {
		p.s.postWatches.Put(p)
	}
}

// awaitEnd waits until q's statement ended, or wait passed.
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
