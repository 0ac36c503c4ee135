package proxy

import (
	"sync"
	"unsafe"
)

// idArena hands out the core's query ids (hex16's text) carved from blocks of idBlockIDs ids:
// one allocation per block instead of one per id, about 200 instructions of a passthrough
// transaction's (RESULTS.md, session 30). A block lives while any of its ids does; the ids a
// history store keeps are its newest, so blocks are let go whole, in order.
type idArena struct {
	mu   sync.Mutex
	free []byte // the current block's bytes not handed out yet
}

const idBlockIDs = 256

// hex16 is hex16(v), its bytes in the arena.
func (a *idArena) hex16(v uint64) string {
	a.mu.Lock()
	if len(a.free) < 16 {
		a.free = make([]byte, 16*idBlockIDs)
	}
	b := a.free[:16:16]
	a.free = a.free[16:]
	a.mu.Unlock()
	putHex16(b, v) // b is this id's alone: written once, before the string is made
	return unsafe.String(&b[0], 16)
}

// putHex16 writes v as 16 lower-case hex digits into b[:16].
func putHex16(b []byte, v uint64) {
	const digits = "0123456789abcdef"
	_ = b[15]
	for i := 14; i >= 0; i -= 2 { // a byte at a time
		b[i], b[i+1] = digits[v>>4&0xf], digits[v&0xf]
		v >>= 8
	}
}
