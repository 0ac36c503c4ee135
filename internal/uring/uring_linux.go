//go:build linux

package uring

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Opcodes (enum io_uring_op).
const (
	OpNop         = 0
	OpPollAdd     = 6
	OpAsyncCancel = 14
	OpRead        = 22
	OpWrite       = 23
	OpSend        = 26
	OpRecv        = 27
)

// SQE flags.
const (
	SqeIOLink       = 1 << 2
	SqeCQESkip      = 1 << 6
	SqeBufferSelect = 1 << 5
)

// Setup flags.
const (
	SetupClamp        = 1 << 4
	SetupSubmitAll    = 1 << 7
	SetupCoopTaskrun  = 1 << 8
	SetupTaskrunFlag  = 1 << 9
	SetupSingleIssuer = 1 << 12
	SetupDeferTaskrun = 1 << 13
)

// Op-specific bits.
const (
	RecvMultishot = 1 << 1 // in SQE.Ioprio of OpRecv
	// RecvPollFirst (SQE.Ioprio of OpRecv and OpSend) arms the socket's poll at once, without a
	// first attempt: for a receive that is known to find nothing yet (an answer just asked for).
	RecvPollFirst = 1 << 0
	PollAddMulti  = 1 << 0 // in SQE.Len of OpPollAdd

	CancelAll      = 1 << 0 // SQE.OpFlags of OpAsyncCancel
	CancelFD       = 1 << 1
	CancelAny      = 1 << 2
	CancelUserData = 1 << 4
)

// CQE flags.
const (
	CQEFBuffer       = 1 << 0 // the upper 16 bits are the provided buffer's id
	CQEFMore         = 1 << 1 // the request goes on (multishot)
	CQEFSockNonempty = 1 << 2
)

const (
	enterGetEvents      = 1 << 0
	enterExtArg         = 1 << 3
	enterRegisteredRing = 1 << 4

	registerRingFDs   = 20
	unregisterRingFDs = 21
	registerPbufRing  = 22

	offSQRing = 0
	offSQEs   = 0x10000000

	featSingleMmap = 1 << 0
)

// SQE is struct io_uring_sqe (64 bytes).
type SQE struct {
	Opcode      uint8
	Flags       uint8
	Ioprio      uint16
	FD          int32
	Off         uint64
	Addr        uint64
	Len         uint32
	OpFlags     uint32 // msg_flags, poll32_events, cancel_flags, ...
	UserData    uint64
	BufIndex    uint16 // buf_group with SqeBufferSelect
	Personality uint16
	SpliceFDIn  int32
	Addr3       uint64
	_           uint64
}

// CQE is struct io_uring_cqe (16 bytes).
type CQE struct {
	UserData uint64
	Res      int32
	Flags    uint32
}

type sqringOffsets struct {
	Head, Tail, RingMask, RingEntries, Flags, Dropped, Array, Resv1 uint32
	UserAddr                                                        uint64
}

type cqringOffsets struct {
	Head, Tail, RingMask, RingEntries, Overflow, CQEs, Flags, Resv1 uint32
	UserAddr                                                        uint64
}

type params struct {
	SQEntries, CQEntries, Flags, SQThreadCPU, SQThreadIdle, Features, WqFD uint32
	Resv                                                                   [3]uint32
	SQOff                                                                  sqringOffsets
	CQOff                                                                  cqringOffsets
}

// Ring is one io_uring. Only one goroutine uses it at a time (with SingleIssuer: only the
// thread that made it).
type Ring struct {
	fd      int
	enterFD uintptr
	enterFl uintptr

	sqHead, sqTail *uint32
	sqFlags        *uint32
	sqMask         uint32
	sqes           []SQE
	tail           uint32 // our SQ tail, published on submit

	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           []CQE

	ringMem, sqeMem []byte
	features        uint32
}

var _ = [1]struct{}{}[unsafe.Sizeof(SQE{})-64]
var _ = [1]struct{}{}[unsafe.Sizeof(CQE{})-16]
var _ = [1]struct{}{}[unsafe.Sizeof(params{})-120]

// New makes a ring of entries submission entries (a power of two) with setup flags.
func New(entries uint32, flags uint32) (*Ring, error) {
	var p params
	p.Flags = flags
	fd, _, e := unix.RawSyscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return nil, fmt.Errorf("uring: io_uring_setup: %w", e)
	}
	r := &Ring{fd: int(fd), enterFD: fd, features: p.Features}
	if p.Features&featSingleMmap == 0 {
		_ = unix.Close(r.fd)
		return nil, errors.New("uring: kernel without IORING_FEAT_SINGLE_MMAP")
	}
	sqSize := uintptr(p.SQOff.Array) + uintptr(p.SQEntries)*4
	cqSize := uintptr(p.CQOff.CQEs) + uintptr(p.CQEntries)*16
	size := max(sqSize, cqSize)
	mem, err := unix.Mmap(r.fd, offSQRing, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		_ = unix.Close(r.fd)
		return nil, fmt.Errorf("uring: mmap rings: %w", err)
	}
	sqeMem, err := unix.Mmap(r.fd, offSQEs, int(p.SQEntries)*64, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		_ = unix.Munmap(mem)
		_ = unix.Close(r.fd)
		return nil, fmt.Errorf("uring: mmap sqes: %w", err)
	}
	r.ringMem, r.sqeMem = mem, sqeMem
	base := unsafe.Pointer(&mem[0])
	at := func(off uint32) *uint32 { return (*uint32)(unsafe.Add(base, off)) }
	r.sqHead, r.sqTail, r.sqMask = at(p.SQOff.Head), at(p.SQOff.Tail), *at(p.SQOff.RingMask)
	r.sqFlags = at(p.SQOff.Flags)
	r.cqHead, r.cqTail, r.cqMask = at(p.CQOff.Head), at(p.CQOff.Tail), *at(p.CQOff.RingMask)
	r.sqes = unsafe.Slice((*SQE)(unsafe.Pointer(&sqeMem[0])), p.SQEntries)
	r.cqes = unsafe.Slice((*CQE)(unsafe.Add(base, p.CQOff.CQEs)), p.CQEntries)
	array := unsafe.Slice(at(p.SQOff.Array), p.SQEntries)
	for i := range array {
		array[i] = uint32(i) // SQ slot i holds SQE i, always
	}
	r.tail = atomic.LoadUint32(r.sqTail)
	return r, nil
}

// RegisterRingFD registers the ring's own file descriptor with itself, sparing each enter a
// file table look-up. Optional.
func (r *Ring) RegisterRingFD() error {
	up := struct {
		Offset uint32
		Resv   uint32
		Data   uint64
	}{Offset: ^uint32(0), Data: uint64(r.fd)}
	n, _, e := unix.RawSyscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerRingFDs, uintptr(unsafe.Pointer(&up)), 1, 0, 0)
	if e != 0 {
		return fmt.Errorf("uring: register ring fd: %w", e)
	}
	if n != 1 {
		return errors.New("uring: register ring fd: not registered")
	}
	r.enterFD, r.enterFl = uintptr(up.Offset), enterRegisteredRing
	return nil
}

// FD is the ring's file descriptor.
func (r *Ring) FD() int { return r.fd }

// Close unmaps and closes the ring; outstanding requests are cancelled by the kernel. A ring
// whose fd was registered (RegisterRingFD) is closed on the thread that registered it.
func (r *Ring) Close() error {
	if r.enterFl&enterRegisteredRing != 0 {
		up := struct {
			Offset uint32
			Resv   uint32
			Data   uint64
		}{Offset: uint32(r.enterFD)}
		_, _, _ = unix.RawSyscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), unregisterRingFDs, uintptr(unsafe.Pointer(&up)), 1, 0, 0)
		r.enterFD, r.enterFl = uintptr(r.fd), 0
	}
	_ = unix.Munmap(r.sqeMem)
	_ = unix.Munmap(r.ringMem)
	return unix.Close(r.fd)
}

// SQE returns the next free submission entry, zeroed, or nil when the queue is full (Submit
// first).
func (r *Ring) SQE() *SQE {
	head := atomic.LoadUint32(r.sqHead)
	if r.tail-head >= uint32(len(r.sqes)) {
		return nil
	}
	s := &r.sqes[r.tail&r.sqMask]
	*s = SQE{}
	r.tail++
	return s
}

// sqTaskrun is the SQ ring's flag that says deferred completions wait to be run by an enter.
const sqTaskrun = 1 << 2

// TaskWork reports whether completions wait for an enter to run them (a ring set up with
// SetupTaskrunFlag: the kernel sets the flag as it queues them, and an enter that runs them
// clears it). A ring without the flag never reports any.
func (r *Ring) TaskWork() bool { return atomic.LoadUint32(r.sqFlags)&sqTaskrun != 0 }

// Pending is how many entries wait to be submitted.
func (r *Ring) Pending() uint32 { return r.tail - atomic.LoadUint32(r.sqHead) }

// Submit submits the pending entries without waiting (a non-blocking system call).
func (r *Ring) Submit() error {
	n := r.publish()
	if n == 0 {
		return nil
	}
	_, _, e := unix.RawSyscall6(unix.SYS_IO_URING_ENTER, r.enterFD, uintptr(n), 0, r.enterFl, 0, 0)
	if e != 0 && e != unix.EINTR {
		return fmt.Errorf("uring: io_uring_enter: %w", e)
	}
	return nil
}

// GetEvents submits the pending entries and runs deferred completions without waiting (for
// DeferTaskrun rings, whose completions appear only in an enter).
func (r *Ring) GetEvents() error {
	n := r.publish()
	_, _, e := unix.RawSyscall6(unix.SYS_IO_URING_ENTER, r.enterFD, uintptr(n), 0, r.enterFl|enterGetEvents, 0, 0)
	if e != 0 && e != unix.EINTR && e != unix.EAGAIN && e != unix.EBUSY {
		return fmt.Errorf("uring: io_uring_enter: %w", e)
	}
	return nil
}

// SubmitAndWait submits the pending entries and waits until at least want completions are
// there. It blocks in a system call the Go runtime knows of (its processor goes to other
// goroutines meanwhile). EINTR returns nil: the caller looks at the queue and waits again.
func (r *Ring) SubmitAndWait(want int) error {
	n := r.publish()
	_, _, e := syscall.Syscall6(unix.SYS_IO_URING_ENTER, r.enterFD, uintptr(n), uintptr(want), r.enterFl|enterGetEvents, 0, 0)
	if e != 0 && e != unix.EINTR && e != unix.EAGAIN && e != unix.EBUSY && e != unix.ETIME {
		return fmt.Errorf("uring: io_uring_enter: %w", e)
	}
	return nil
}

func (r *Ring) publish() uint32 {
	atomic.StoreUint32(r.sqTail, r.tail)
	return r.tail - atomic.LoadUint32(r.sqHead)
}

// Completions calls fn for each completion in the queue, in order, and frees their slots. fn
// may take new submission entries.
func (r *Ring) Completions(fn func(*CQE)) int {
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	n := 0
	for head != tail {
		c := r.cqes[head&r.cqMask]
		head++
		atomic.StoreUint32(r.cqHead, head)
		fn(&c)
		n++
		if head == tail {
			tail = atomic.LoadUint32(r.cqTail)
		}
	}
	return n
}

// BufRing is a provided-buffer ring: count buffers of size bytes each, in one anonymous
// mapping, registered under a group id that receives select from (SqeBufferSelect).
type BufRing struct {
	ring    []byte // the io_uring_buf entries (mmapped)
	mem     []byte // the buffers (mmapped)
	size    int
	mask    uint16
	tail    uint16
	entries []bufEntry
	tailW   *uint32 // the word holding entry 0's bid and the ring's tail
	Group   uint16
}

type bufEntry struct {
	Addr uint64
	Len  uint32
	Bid  uint16
	Resv uint16
}

// RegisterBufRing makes and registers a provided-buffer ring of count (a power of two, at
// most 32768) buffers of size bytes under group, every buffer in it.
func (r *Ring) RegisterBufRing(group uint16, count, size int) (*BufRing, error) {
	if count <= 0 || count > 1<<15 || count&(count-1) != 0 {
		return nil, fmt.Errorf("uring: buffer ring of %d entries: not a power of two up to 32768", count)
	}
	ringMem, err := unix.Mmap(-1, 0, count*16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("uring: mmap buffer ring: %w", err)
	}
	mem, err := unix.Mmap(-1, 0, count*size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		_ = unix.Munmap(ringMem)
		return nil, fmt.Errorf("uring: mmap buffers: %w", err)
	}
	reg := struct {
		RingAddr    uint64
		RingEntries uint32
		Bgid        uint16
		Flags       uint16
		Resv        [3]uint64
	}{RingAddr: uint64(uintptr(unsafe.Pointer(&ringMem[0]))), RingEntries: uint32(count), Bgid: group}
	if _, _, e := unix.RawSyscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerPbufRing, uintptr(unsafe.Pointer(&reg)), 1, 0, 0); e != 0 {
		_ = unix.Munmap(ringMem)
		_ = unix.Munmap(mem)
		return nil, fmt.Errorf("uring: register buffer ring: %w", e)
	}
	b := &BufRing{ring: ringMem, mem: mem, size: size, mask: uint16(count - 1), Group: group,
		entries: unsafe.Slice((*bufEntry)(unsafe.Pointer(&ringMem[0])), count),
		tailW:   (*uint32)(unsafe.Pointer(&ringMem[12]))}
	for i := range count {
		b.Put(uint16(i))
	}
	b.Publish()
	return b, nil
}

// Buf is buffer bid's memory, n bytes of it.
func (b *BufRing) Buf(bid uint16, n int) []byte {
	off := int(bid) * b.size
	return b.mem[off : off+n : off+b.size]
}

// Addr is the address of buffer bid, off bytes in.
func (b *BufRing) Addr(bid uint16, off int) uint64 {
	return uint64(uintptr(unsafe.Pointer(&b.mem[int(bid)*b.size+off])))
}

// Size is each buffer's size.
func (b *BufRing) Size() int { return b.size }

// Put gives buffer bid back to the kernel (seen once Published).
func (b *BufRing) Put(bid uint16) {
	i := b.tail & b.mask
	e := &b.entries[i]
	if i == 0 {
		// Entry 0's bid shares a word with the ring's tail: write both through that word.
		e.Addr, e.Len = b.Addr(bid, 0), uint32(b.size)
		w := atomic.LoadUint32(b.tailW)
		atomic.StoreUint32(b.tailW, w&0xffff0000|uint32(bid))
	} else {
		*e = bufEntry{Addr: b.Addr(bid, 0), Len: uint32(b.size), Bid: bid}
	}
	b.tail++
}

// Publish makes the buffers Put so far visible to the kernel.
func (b *BufRing) Publish() {
	w := atomic.LoadUint32(b.tailW)
	atomic.StoreUint32(b.tailW, w&0xffff|uint32(b.tail)<<16)
}

// Ready is how many completions wait in the queue.
func (r *Ring) Ready() int { return int(atomic.LoadUint32(r.cqTail) - atomic.LoadUint32(r.cqHead)) }

// addrOf is b's address, for an entry's Addr (b must not be Go heap the kernel writes later).
func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }

// SubmitAndWaitMin submits the pending entries and waits for want completions for at most
// minWait microseconds; after that it returns as soon as there is one (kernel 6.12+: the
// batch wait of IORING_ENTER_EXT_ARG's min_wait_usec). A DeferTaskrun ring is not woken by
// each completion meanwhile: one wake-up for a batch. Blocking, as SubmitAndWait. With no
// timeout besides, the kernel ends the wait at minWait even when no completion came.
func (r *Ring) SubmitAndWaitMin(want int, minWait uint32) error {
	return r.waitExt(want, minWait, -1)
}

// SubmitAndWaitTimeout is SubmitAndWait bounded by timeout (kernel 5.11+: IORING_ENTER_EXT_ARG's
// timespec): it returns nil when the time passed without completions (ETIME).
func (r *Ring) SubmitAndWaitTimeout(want int, timeout time.Duration) error {
	return r.waitExt(want, 0, max(timeout, 0))
}

// SubmitAndWaitRaw is SubmitAndWaitTimeout made as a raw system call: the Go runtime is not
// told of the wait, and its processor stays with the caller meanwhile. A signal ends it with
// unix.EINTR (returned as such, so that the caller knows the wait was cut short).
func (r *Ring) SubmitAndWaitRaw(want int, timeout time.Duration) error {
	arg := struct {
		Sigmask   uint64
		SigmaskSz uint32
		MinWait   uint32
		TS        uint64
	}{}
	ts := unix.NsecToTimespec(max(timeout, 0).Nanoseconds())
	arg.TS = uint64(uintptr(unsafe.Pointer(&ts)))
	n := r.publish()
	_, _, e := unix.RawSyscall6(unix.SYS_IO_URING_ENTER, r.enterFD, uintptr(n), uintptr(want),
		r.enterFl|enterGetEvents|enterExtArg, uintptr(unsafe.Pointer(&arg)), unsafe.Sizeof(arg))
	runtime.KeepAlive(&ts)
	switch e {
	case 0, unix.EAGAIN, unix.EBUSY, unix.ETIME:
		return nil
	case unix.EINTR:
		return unix.EINTR
	}
	return fmt.Errorf("uring: io_uring_enter: %w", e)
}

// waitExt is an enter with IORING_ENTER_EXT_ARG: a wait for want completions, minWait
// microseconds of it batched (0: none), bounded by timeout (< 0: none).
func (r *Ring) waitExt(want int, minWait uint32, timeout time.Duration) error {
	arg := struct {
		Sigmask   uint64
		SigmaskSz uint32
		MinWait   uint32
		TS        uint64
	}{MinWait: minWait}
	var ts unix.Timespec
	if timeout >= 0 {
		ts = unix.NsecToTimespec(timeout.Nanoseconds())
		arg.TS = uint64(uintptr(unsafe.Pointer(&ts)))
	}
	n := r.publish()
	_, _, e := syscall.Syscall6(unix.SYS_IO_URING_ENTER, r.enterFD, uintptr(n), uintptr(want),
		r.enterFl|enterGetEvents|enterExtArg, uintptr(unsafe.Pointer(&arg)), unsafe.Sizeof(arg))
	runtime.KeepAlive(&ts)
	if e != 0 && e != unix.EINTR && e != unix.EAGAIN && e != unix.EBUSY && e != unix.ETIME {
		return fmt.Errorf("uring: io_uring_enter: %w", e)
	}
	return nil
}

// Free unmaps the buffer ring's memory: only once its ring is closed (the kernel holds on to
// the pages it pinned until then).
func (b *BufRing) Free() {
	_ = unix.Munmap(b.ring)
	_ = unix.Munmap(b.mem)
	b.ring, b.mem, b.entries, b.tailW = nil, nil, nil, nil
}
