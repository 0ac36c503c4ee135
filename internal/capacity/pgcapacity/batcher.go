package pgcapacity

import "sync"

// batcher turns concurrent calls into batches: the first caller becomes the leader and runs
// every call queued so far as one batch (one round trip, one transaction, one commit); calls
// that arrive meanwhile queue and form the next batch, run by the first of them. An uncontended
// call therefore costs exactly one round trip, and a contended one shares its commit.
type batcher[Req, Res any] struct {
	run      func(reqs []Req) ([]Res, error) // results in request order
	batchMax int

	mu       sync.Mutex
	pending  []*call[Req, Res]
	flushing bool
}

type call[Req, Res any] struct {
	req    Req
	res    Res
	err    error
	leader bool          // set before done closes when this call must lead the next batch
	done   chan struct{} // closed once: with the result, or to make this call the leader
}

func newBatcher[Req, Res any](batchMax int, run func([]Req) ([]Res, error)) *batcher[Req, Res] {
	return &batcher[Req, Res]{run: run, batchMax: batchMax}
}

// submit queues req and returns its call; wait on it with await.
func (b *batcher[Req, Res]) submit(req Req) *call[Req, Res] {
	c := &call[Req, Res]{req: req, done: make(chan struct{})}
	b.mu.Lock()
	b.pending = append(b.pending, c)
	if !b.flushing {
		b.flushing = true
		c.leader = true
		close(c.done)
	}
	b.mu.Unlock()
	return c
}

// await runs the batch if c leads, and returns c's result.
func (b *batcher[Req, Res]) await(c *call[Req, Res]) (Res, error) {
	<-c.done
	if c.leader {
		b.lead()
	}
	return c.res, c.err
}

// lead runs one batch from the head of the queue, then hands leadership to the next waiter.
func (b *batcher[Req, Res]) lead() {
	b.mu.Lock()
	n := min(len(b.pending), b.batchMax)
	batch := b.pending[:n:n]
	b.pending = append([]*call[Req, Res](nil), b.pending[n:]...)
	b.mu.Unlock()

	reqs := make([]Req, len(batch))
	for i, c := range batch {
		reqs[i] = c.req
	}
	res, err := b.run(reqs)
	if err == nil && len(res) != len(reqs) {
		panic("pgcapacity: batch returned a result count different from its request count")
	}
	for i, c := range batch {
		if err != nil {
			c.err = err
		} else {
			c.res = res[i]
		}
		if !c.leader {
			close(c.done)
		}
	}

	b.mu.Lock()
	if len(b.pending) == 0 {
		b.flushing = false
		b.mu.Unlock()
		return
	}
	next := b.pending[0]
	next.leader = true
	b.mu.Unlock()
	close(next.done)
}
