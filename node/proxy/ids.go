package proxy

import (
	"encoding/binary"
	"math/bits"
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

// putHex16 writes v as 16 lower-case hex digits into b[:16], eight at a time.
func putHex16(b []byte, v uint64) {
	binary.LittleEndian.PutUint64(b[0:8], hex8(uint32(v>>32)))
	binary.LittleEndian.PutUint64(b[8:16], hex8(uint32(v)))
}

// hex8 is v's eight hex digits as a little-endian word (the most significant digit in its low
// byte): v's nibbles spread one to a byte, the lowest first, then the bytes reversed, each
// nibble n made '0'+n, and 'a'-10+n from 10 on (n+6 carries into bit 4 exactly then).
func hex8(v uint32) uint64 {
	x := uint64(v)
	x = (x | x<<16) & 0x0000ffff0000ffff
	x = (x | x<<8) & 0x00ff00ff00ff00ff
	x = (x | x<<4) & 0x0f0f0f0f0f0f0f0f
	x = bits.ReverseBytes64(x)
	letters := (x + 0x0606060606060606) >> 4 & 0x0101010101010101
	return x + 0x3030303030303030 + letters*('a'-'0'-10)
}
