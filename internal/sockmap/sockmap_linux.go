//go:build linux

package sockmap

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Splicer is one sockhash and its attached verdict program; it splices any number of pairs
// up to the size given to New. Safe for concurrent use.
type Splicer struct {
	peers  *ebpf.Map
	prog   *ebpf.Program
	parser *ebpf.Program // nil without a stream parser
	mu     sync.Mutex
	pairs  map[int]uint64 // a spliced fd -> its own cookie (the key its peer is stored under)
}

// New makes the map (room for maxPairs pairs) and attaches the verdict program to it, and with
// parser a stream parser that takes each skb whole (the strparser path: the verdict runs from
// strp_data_ready; without it, from sk_psock_verdict_data_ready). Either way the redirected bytes
// are sent by a kworker (sk_psock_backlog), one run a burst.
func New(maxPairs int, parser bool) (*Splicer, error) {
	if maxPairs <= 0 {
		return nil, fmt.Errorf("sockmap: maxPairs must be positive, got %d", maxPairs)
	}
	peers, err := ebpf.NewMap(&ebpf.MapSpec{
		Name:       "qf_peers",
		Type:       ebpf.SockHash,
		KeySize:    8, // the cookie of the socket the bytes arrive on
		ValueSize:  4, // the peer's fd when written; the kernel keeps the socket
		MaxEntries: uint32(2 * maxPairs),
	})
	if err != nil {
		return nil, fmt.Errorf("%w: the sockhash: %w", ErrUnsupported, err)
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:       "qf_splice",
		Type:       ebpf.SkSKB,
		AttachType: ebpf.AttachSkSKBStreamVerdict,
		License:    "Dual MIT/GPL",
		Instructions: asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R1), // the skb, kept across the first call
			asm.FnGetSocketCookie.Call(),
			asm.StoreMem(asm.RFP, -8, asm.R0, asm.DWord),
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.LoadMapPtr(asm.R2, peers.FD()),
			asm.Mov.Reg(asm.R3, asm.RFP),
			asm.Add.Imm(asm.R3, -8),
			asm.Mov.Imm(asm.R4, 0), // egress: out through the peer's send path
			asm.FnSkRedirectHash.Call(),
			asm.Return(),
		},
	})
	if err != nil {
		_ = peers.Close()
		return nil, fmt.Errorf("%w: the verdict program: %w", ErrUnsupported, err)
	}
	if err := link.RawAttachProgram(link.RawAttachProgramOptions{
		Target: peers.FD(), Program: prog, Attach: ebpf.AttachSkSKBStreamVerdict,
	}); err != nil {
		_ = prog.Close()
		_ = peers.Close()
		return nil, fmt.Errorf("%w: attaching the verdict program: %w", ErrUnsupported, err)
	}
	sp := &Splicer{peers: peers, prog: prog, pairs: make(map[int]uint64)}
	if parser {
		p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Name: "qf_parse", Type: ebpf.SkSKB, AttachType: ebpf.AttachSkSKBStreamParser, License: "Dual MIT/GPL",
			// return skb->len: each skb is one message
			Instructions: asm.Instructions{asm.LoadMem(asm.R0, asm.R1, 0, asm.Word), asm.Return()},
		})
		if err == nil {
			err = link.RawAttachProgram(link.RawAttachProgramOptions{Target: peers.FD(), Program: p, Attach: ebpf.AttachSkSKBStreamParser})
		}
		if err != nil {
			_ = sp.Close()
			return nil, fmt.Errorf("%w: the stream parser: %w", ErrUnsupported, err)
		}
		sp.parser = p
	}
	return sp, nil
}

// Splice makes the kernel relay a's bytes to b and b's to a, from now on. Both must be
// connected TCP sockets with empty receive queues: bytes queued before a socket joins the map
// are neither relayed nor readable until the socket's next arrival (kernel 6.18), so Splice
// refuses a socket with pending bytes (the caller reads them first), and the caller splices a
// pair only while neither peer can send (a MySQL engine after its greeting is read and before
// the client has it).
func (s *Splicer) Splice(a, b int) error {
	for _, fd := range [2]int{a, b} {
		if p, err := Pending(fd); err != nil {
			return fmt.Errorf("sockmap: the receive queue of fd %d: %w", fd, err)
		} else if p > 0 {
			return fmt.Errorf("sockmap: fd %d has %d unread bytes; read them before splicing", fd, p)
		}
	}
	ca, err := unix.GetsockoptUint64(a, unix.SOL_SOCKET, unix.SO_COOKIE)
	if err != nil {
		return fmt.Errorf("sockmap: the cookie of fd %d: %w", a, err)
	}
	cb, err := unix.GetsockoptUint64(b, unix.SOL_SOCKET, unix.SO_COOKIE)
	if err != nil {
		return fmt.Errorf("sockmap: the cookie of fd %d: %w", b, err)
	}
	if err := s.peers.Update(cb, uint32(a), ebpf.UpdateNoExist); err != nil {
		return fmt.Errorf("sockmap: splicing fd %d: %w", a, err)
	}
	if err := s.peers.Update(ca, uint32(b), ebpf.UpdateNoExist); err != nil {
		_ = s.peers.Delete(cb)
		return fmt.Errorf("sockmap: splicing fd %d: %w", b, err)
	}
	s.mu.Lock()
	s.pairs[a], s.pairs[b] = ca, cb
	s.mu.Unlock()
	return nil
}

// Unsplice takes the pair out of the map (before the caller closes them); a socket leaves the
// map on its own when it closes, so this only matters for sockets that live on.
func (s *Splicer) Unsplice(a, b int) error {
	s.mu.Lock()
	ca, oka := s.pairs[a]
	cb, okb := s.pairs[b]
	delete(s.pairs, a)
	delete(s.pairs, b)
	s.mu.Unlock()
	var errs []error
	if okb {
		if err := s.peers.Delete(cb); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			errs = append(errs, err)
		}
	}
	if oka {
		if err := s.peers.Delete(ca); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Pending is the count of bytes in fd's receive queue (SIOCINQ), meaningful before the socket
// is spliced (after, the kernel reports 0).
func Pending(fd int) (int, error) {
	return unix.IoctlGetInt(fd, unix.SIOCINQ)
}

// Close detaches the program and frees the map; spliced sockets stay open (their owner closes
// them) and stop being relayed.
func (s *Splicer) Close() error {
	err := link.RawDetachProgram(link.RawDetachProgramOptions{
		Target: s.peers.FD(), Program: s.prog, Attach: ebpf.AttachSkSKBStreamVerdict,
	})
	if s.parser != nil {
		err = errors.Join(err, link.RawDetachProgram(link.RawDetachProgramOptions{
			Target: s.peers.FD(), Program: s.parser, Attach: ebpf.AttachSkSKBStreamParser,
		}), s.parser.Close())
	}
	return errors.Join(err, s.prog.Close(), s.peers.Close())
}
