//go:build linux

package relayloop

import "sync"

// buffersKept bounds the buffers a loop keeps for its next pairs (2 MiB at the default size).
const buffersKept = 64

// buffers keeps the buffers of a loop's pairs that ended for its next pairs. A session whose
// statements the goroutine answers (the Arrow path) starts a pair to wait for each next
// statement, and 2 x bufBytes of fresh memory per statement was most of what such a session
// allocated. A pair's buffers come back only after the loop's turn in which it stopped: by
// then nothing reads them (Results carry copies, and Watches copy what they keep).
type buffers struct {
	mu   sync.Mutex
	free [][]byte
}

// get returns a buffer of n bytes, a kept one if there is one.
func (b *buffers) get(n int) []byte {
	b.mu.Lock()
	if k := len(b.free); k > 0 {
		buf := b.free[k-1]
		b.free[k-1] = nil
		b.free = b.free[:k-1]
		b.mu.Unlock()
		return buf
	}
	b.mu.Unlock()
	return make([]byte, n)
}

// put keeps buf for a later pair, unless enough are kept.
func (b *buffers) put(buf []byte) {
	b.mu.Lock()
	if len(b.free) < buffersKept {
		b.free = append(b.free, buf)
	}
	b.mu.Unlock()
}

// recycle gives the buffers of the pairs that stopped in this turn back to the loop's store.
func (l *Loop) recycle() {
	for i, p := range l.stopped {
		for d := range p.st {
			st := &p.st[d]
			buf := st.buf
			if st.small != nil {
				buf = st.small
			}
			st.buf, st.small = nil, nil
			if len(buf) == l.bufBytes {
				l.bufs.put(buf)
			}
		}
		l.stopped[i] = nil
	}
	l.stopped = l.stopped[:0]
}
