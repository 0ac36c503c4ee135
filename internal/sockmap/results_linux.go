//go:build linux

package sockmap

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// ResultSplicer splices one direction only: a MySQL engine's answers go to their client in the
// kernel, while the client's requests still reach the engine through their owner, who reads
// them (a proxy must see each statement). The verdict program follows the engine's packets
// across the stream (their 3-byte lengths, whatever the segments), and where a statement's
// answer ends (the OK or ERR of its head, the EOF or ERR after its rows, without
// SERVER_MORE_RESULTS_EXISTS) it records the end in the pair's slot of an array the owner maps
// into memory: the rows and payload bytes of the statement, its status flags or error code, the
// first bytes of its last packet, and a count of ends written last. The answer's last packet is
// redirected with its rows, so nothing of an answer can overtake the rest: the order problem of
// passing the end to user space while the rows still wait in the kworker's queue does not arise.
//
// The owner learns of an end without a wake-up: a client sends its next request only after its
// answer's end reached it, and that end was counted before it left the engine's socket, so the
// owner reads the count when the next request arrives. What the owner writes to the client
// itself (its own errors, a ping's answer) must wait until the spliced bytes have left: Drained.
//
// Where an answer's framing is lost (a packet longer than the step budget allows, a protocol the
// parser does not know) the slot's lost flag is set and the owner must end the pair.
type ResultSplicer struct {
	clients *ebpf.Map // sockhash: an engine socket's cookie -> its client's socket (no programs)
	engines *ebpf.Map // sockhash: an engine socket's own cookie -> the engine socket (the programs)
	slots   *ebpf.Map // hash: an engine socket's cookie -> its slot
	state   *ebpf.Map // mmapable array of slots
	mem     []byte    // state, mapped
	verdict *ebpf.Program
	parser  *ebpf.Program

	mu    sync.Mutex
	free  []uint32
	pairs map[int]*ResultPair // by engine fd
}

// ResultPair is one spliced client and engine.
type ResultPair struct {
	s              *ResultSplicer
	client, engine int
	cookie         uint64
	slot           uint32
	st             *slotState
	// sentBase is the client socket's byte count (acknowledged plus queued) when the pair was
	// spliced, less what the owner wrote itself since.
	sentBase uint64
}

// slotState mirrors the program's per-pair state (slotSize bytes, offsets below).
type slotState struct {
	skip, got, phase, cont uint32
	rows, bytes            uint64
	buf                    [32]byte
	lastRows, lastBytes    uint64
	lastStatus, lastErr    uint32
	lastBuf                [32]byte
	off, len               uint32
	lost                   uint32
	_                      uint32
	redirected             uint64
	ends                   uint64
}

// Offsets in a slot (the program's view of slotState).
const (
	offSkip       = 0
	offGot        = 4
	offPhase      = 8
	offCont       = 12
	offRows       = 16
	offBytes      = 24
	offBuf        = 32
	bufLen        = 32
	offLastRows   = 64
	offLastBytes  = 72
	offLastStatus = 80
	offLastErr    = 84
	offLastBuf    = 88
	offOff        = 120
	offLen        = 124
	offLost       = 128
	offRedirected = 136
	offEnds       = 144
	slotSize      = 152
)

// The answer's phases, as the program follows it.
const (
	resHead = iota
	resColumns
	resRows
)

// maxStepsPerSkb bounds the program's steps over one skb: each packet takes at most two (its
// first bytes, then the rest skipped), so a run of up to half as many packets is followed.
const maxStepsPerSkb = 1 << 17

func init() {
	if unsafe.Sizeof(slotState{}) != slotSize {
		panic("sockmap: slotState does not match the program's slot layout")
	}
}

// NewResults makes the maps and attaches the programs for up to maxPairs pairs. Where the host
// refuses BPF the error wraps ErrUnsupported.
func NewResults(maxPairs int) (*ResultSplicer, error) {
	if maxPairs <= 0 {
		return nil, fmt.Errorf("sockmap: maxPairs must be positive, got %d", maxPairs)
	}
	s := &ResultSplicer{pairs: make(map[int]*ResultPair)}
	var err error
	mk := func(name string, spec *ebpf.MapSpec) *ebpf.Map {
		if err != nil {
			return nil
		}
		var m *ebpf.Map
		if m, err = ebpf.NewMap(spec); err != nil {
			err = fmt.Errorf("%w: %s: %w", ErrUnsupported, name, err)
		}
		return m
	}
	n := uint32(maxPairs)
	s.clients = mk("the clients' sockhash", &ebpf.MapSpec{Name: "qf_clients", Type: ebpf.SockHash, KeySize: 8, ValueSize: 4, MaxEntries: n})
	s.engines = mk("the engines' sockhash", &ebpf.MapSpec{Name: "qf_engines", Type: ebpf.SockHash, KeySize: 8, ValueSize: 4, MaxEntries: n})
	s.slots = mk("the slots' hash", &ebpf.MapSpec{Name: "qf_slots", Type: ebpf.Hash, KeySize: 8, ValueSize: 4, MaxEntries: n})
	s.state = mk("the slots' array", &ebpf.MapSpec{Name: "qf_state", Type: ebpf.Array, KeySize: 4, ValueSize: slotSize, MaxEntries: n, Flags: unix.BPF_F_MMAPABLE})
	if err != nil {
		s.Close()
		return nil, err
	}
	if s.mem, err = unix.Mmap(s.state.FD(), 0, int(slotSize*n+4095)&^4095, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
		s.mem = nil
		s.Close()
		return nil, fmt.Errorf("%w: mapping the slots: %w", ErrUnsupported, err)
	}
	if s.verdict, err = ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "qf_results", Type: ebpf.SkSKB, AttachType: ebpf.AttachSkSKBStreamVerdict, License: "Dual MIT/GPL",
		Instructions: resultProgram(s.clients.FD(), s.slots.FD(), s.state.FD()),
	}); err != nil {
		s.Close()
		return nil, fmt.Errorf("%w: the result program: %w", ErrUnsupported, err)
	}
	if err = link.RawAttachProgram(link.RawAttachProgramOptions{Target: s.engines.FD(), Program: s.verdict, Attach: ebpf.AttachSkSKBStreamVerdict}); err != nil {
		s.Close()
		return nil, fmt.Errorf("%w: attaching the result program: %w", ErrUnsupported, err)
	}
	// The stream parser takes each skb whole, so the verdict runs from strp_data_ready and the
	// engine socket's owner is not woken at each arrival.
	if s.parser, err = ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "qf_parse", Type: ebpf.SkSKB, AttachType: ebpf.AttachSkSKBStreamParser, License: "Dual MIT/GPL",
		Instructions: asm.Instructions{asm.LoadMem(asm.R0, asm.R1, 0, asm.Word), asm.Return()},
	}); err == nil {
		err = link.RawAttachProgram(link.RawAttachProgramOptions{Target: s.engines.FD(), Program: s.parser, Attach: ebpf.AttachSkSKBStreamParser})
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("%w: the stream parser: %w", ErrUnsupported, err)
	}
	for i := n; i > 0; i-- {
		s.free = append(s.free, i-1)
	}
	return s, nil
}

// Close detaches the programs and frees the maps; spliced sockets stay open (their owners
// close them) and are no longer relayed.
func (s *ResultSplicer) Close() error {
	var errs []error
	if s.engines != nil && s.verdict != nil {
		errs = append(errs, link.RawDetachProgram(link.RawDetachProgramOptions{Target: s.engines.FD(), Program: s.verdict, Attach: ebpf.AttachSkSKBStreamVerdict}))
	}
	if s.engines != nil && s.parser != nil {
		errs = append(errs, link.RawDetachProgram(link.RawDetachProgramOptions{Target: s.engines.FD(), Program: s.parser, Attach: ebpf.AttachSkSKBStreamParser}))
	}
	for _, p := range []*ebpf.Program{s.verdict, s.parser} {
		if p != nil {
			errs = append(errs, p.Close())
		}
	}
	if s.mem != nil {
		errs = append(errs, unix.Munmap(s.mem))
		s.mem = nil
	}
	for _, m := range []*ebpf.Map{s.clients, s.engines, s.slots, s.state} {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	return errors.Join(errs...)
}

// Splice sends the engine socket's bytes to the client socket in the kernel from now on,
// following them as MySQL answers to COM_QUERY (text rows, EOF packets: a connection without
// CLIENT_DEPRECATE_EOF). The engine socket must have no unread bytes and must not be sending:
// splice after reading its greeting and before the first request is forwarded.
func (s *ResultSplicer) Splice(client, engine int) (*ResultPair, error) {
	if p, err := Pending(engine); err != nil {
		return nil, fmt.Errorf("sockmap: the receive queue of fd %d: %w", engine, err)
	} else if p > 0 {
		return nil, fmt.Errorf("sockmap: fd %d has %d unread bytes; read them before splicing", engine, p)
	}
	cookie, err := unix.GetsockoptUint64(engine, unix.SOL_SOCKET, unix.SO_COOKIE)
	if err != nil {
		return nil, fmt.Errorf("sockmap: the cookie of fd %d: %w", engine, err)
	}
	sent, err := sentBytes(client)
	if err != nil {
		return nil, fmt.Errorf("sockmap: the byte count of fd %d: %w", client, err)
	}
	s.mu.Lock()
	if len(s.free) == 0 {
		s.mu.Unlock()
		return nil, fmt.Errorf("sockmap: all %d pairs in use", cap(s.free))
	}
	slot := s.free[len(s.free)-1]
	s.free = s.free[:len(s.free)-1]
	s.mu.Unlock()
	p := &ResultPair{s: s, client: client, engine: engine, cookie: cookie, slot: slot, sentBase: sent,
		st: (*slotState)(unsafe.Pointer(&s.mem[uintptr(slot)*slotSize]))}
	*p.st = slotState{}
	undo := func(err error) (*ResultPair, error) {
		_ = s.clients.Delete(cookie)
		_ = s.slots.Delete(cookie)
		s.mu.Lock()
		s.free = append(s.free, slot)
		s.mu.Unlock()
		return nil, err
	}
	if err := s.slots.Update(cookie, slot, ebpf.UpdateNoExist); err != nil {
		return undo(fmt.Errorf("sockmap: the slot of fd %d: %w", engine, err))
	}
	if err := s.clients.Update(cookie, uint32(client), ebpf.UpdateNoExist); err != nil {
		return undo(fmt.Errorf("sockmap: splicing client fd %d: %w", client, err))
	}
	// The engine socket joins last: from here on its bytes go to the client.
	if err := s.engines.Update(cookie, uint32(engine), ebpf.UpdateNoExist); err != nil {
		return undo(fmt.Errorf("sockmap: splicing engine fd %d: %w", engine, err))
	}
	s.mu.Lock()
	s.pairs[engine] = p
	s.mu.Unlock()
	return p, nil
}

// Unsplice takes the pair out of the maps (before its sockets close or are read again). Bytes
// still queued for the client are dropped with its entry: call it once Drained.
func (p *ResultPair) Unsplice() error {
	s := p.s
	var errs []error
	for _, m := range []*ebpf.Map{s.engines, s.clients, s.slots} {
		if err := m.Delete(p.cookie); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			errs = append(errs, err)
		}
	}
	s.mu.Lock()
	if s.pairs[p.engine] == p {
		delete(s.pairs, p.engine)
		s.free = append(s.free, p.slot)
	}
	s.mu.Unlock()
	return errors.Join(errs...)
}

// End is what the program recorded of a statement's answer.
type End struct {
	Seq       uint64 // the count of ends, this one included
	Rows      int64  // text rows relayed (result sets of a multi-result statement summed)
	Bytes     int64  // the answer's payload bytes
	Status    uint16 // the last EOF's or OK's status flags (0 after an ERR)
	ErrCode   uint16 // the ERR's code, 0 without one
	Last      []byte // the first bytes of the last packet (header and payload)
	Lost      bool   // the program lost the answer's framing: the pair cannot go on
	Forwarded uint64 // every byte the program sent to the client so far
}

// Ends is the count of answers ended so far (read without a system call).
func (p *ResultPair) Ends() uint64 { return atomic.LoadUint64(&p.st.ends) }

// Lost reports whether the program lost the answers' framing.
func (p *ResultPair) Lost() bool { return atomic.LoadUint32(&p.st.lost) != 0 }

// LastEnd is the last end recorded. Call it after Ends moved and before the next request is
// forwarded (the program writes the fields before it counts the end, and nothing of the next
// answer comes before its request).
func (p *ResultPair) LastEnd() End {
	st := p.st
	seq := atomic.LoadUint64(&st.ends)
	e := End{Seq: seq, Rows: int64(st.lastRows), Bytes: int64(st.lastBytes), Lost: atomic.LoadUint32(&st.lost) != 0,
		Forwarded: atomic.LoadUint64(&st.redirected)}
	if ls := st.lastStatus; ls&(1<<31) != 0 {
		e.ErrCode = uint16(ls)
	} else {
		e.Status = uint16(ls)
	}
	n := min(4+int(st.lastBuf[0])|int(st.lastBuf[1])<<8|int(st.lastBuf[2])<<16, bufLen)
	e.Last = append([]byte(nil), st.lastBuf[:n]...)
	return e
}

// Wrote counts bytes the owner wrote to the client itself, so that Drained expects them too.
func (p *ResultPair) Wrote(n int) { p.sentBase += uint64(n) }

// Drained reports whether everything the program sent on to the client has left the splice's
// queue for the client socket's own (the kernel's send of it is under way): only then may the
// owner write to the client without overtaking it.
func (p *ResultPair) Drained() (bool, error) {
	sent, err := sentBytes(p.client)
	if err != nil {
		return false, err
	}
	return sent-p.sentBase >= atomic.LoadUint64(&p.st.redirected), nil
}

// sentBytes is every byte the socket has taken to send: those acknowledged and those queued.
// An acknowledgement between the two reads makes it low, never high.
func sentBytes(fd int) (uint64, error) {
	outq, err := unix.IoctlGetInt(fd, unix.SIOCOUTQ)
	if err != nil {
		return 0, err
	}
	info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
	if err != nil {
		return 0, err
	}
	return info.Bytes_acked + uint64(outq), nil
}
