package chaos

// Links between workers (a worker forwarding a query to the owner of its cache key, on the
// owner's ops listener). Every worker advertises (--advertise-host) a loopback address of its
// own, 127.0.0.<10+i>, where a peer proxy listens on the worker's ops port and forwards to
// 127.0.0.1, the worker's real ops listener (which chaos itself reads directly). All the
// workers' connections share the source address 127.0.0.1, so the proxy tells which worker
// dialed a connection by the process owning its source port (/proc/net/tcp, /proc/PID/fd).
// A partition between two workers then stalls exactly their connections, in the directions
// cut: bytes stop flowing (none are lost) until the heal, as on the control-plane links.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// peerNet is the fault state of every worker-to-worker link.
type peerNet struct {
	mu      sync.Mutex
	cut     map[[2]string]bool // {from, to}: bytes from `from` to `to` stop
	changed chan struct{}      // closed and replaced at every change
	pids    func() map[int]string
	proxies []*peerProxy
}

func newPeerNet(pids func() map[int]string) *peerNet {
	return &peerNet{cut: map[[2]string]bool{}, changed: make(chan struct{}), pids: pids}
}

// set cuts (or heals) the direction from → to.
func (n *peerNet) set(from, to string, cut bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut[[2]string{from, to}] = cut
	close(n.changed)
	n.changed = make(chan struct{})
}

// healAll heals every worker-to-worker direction.
func (n *peerNet) healAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.cut)
	close(n.changed)
	n.changed = make(chan struct{})
}

// wait blocks while the direction from → to is cut.
func (n *peerNet) wait(from, to string) {
	for {
		n.mu.Lock()
		cut, changed := n.cut[[2]string{from, to}], n.changed
		n.mu.Unlock()
		if !cut {
			return
		}
		<-changed
	}
}

// peerIP is the loopback address worker i (in fleet order) advertises to its peers.
func peerIP(i int) string { return fmt.Sprintf("127.0.0.%d", 10+i) }

// peerProxy stands in front of one worker's ops listener for its peers.
type peerProxy struct {
	net    *peerNet
	server string // the worker behind it
	ln     net.Listener
	target string // 127.0.0.1:port
}

// listen starts the proxy of worker server on ip at the port of its ops listener opsAddr.
func (n *peerNet) listen(server, ip, opsAddr string) error {
	_, port, err := net.SplitHostPort(opsAddr)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, port))
	if err != nil {
		return fmt.Errorf("peer proxy of %s: %w", server, err)
	}
	p := &peerProxy{net: n, server: server, ln: ln, target: opsAddr}
	n.mu.Lock()
	n.proxies = append(n.proxies, p)
	n.mu.Unlock()
	go p.serve()
	return nil
}

func (n *peerNet) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range n.proxies {
		p.ln.Close()
	}
}

func (p *peerProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.pipe(c)
	}
}

func (p *peerProxy) pipe(c net.Conn) {
	defer c.Close()
	dialer := p.net.dialerOf(c)
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer u.Close()
	done := make(chan struct{}, 2)
	go func() { p.copy(u, c, dialer, p.server); done <- struct{}{} }()
	go func() { p.copy(c, u, p.server, dialer); done <- struct{}{} }()
	<-done
}

// copy moves bytes from src to dst, holding them while the direction from → to is cut.
func (p *peerProxy) copy(dst io.Writer, src io.Reader, from, to string) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.net.wait(from, to)
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if c, ok := dst.(*net.TCPConn); ok {
				_ = c.CloseWrite()
			}
			return
		}
	}
}

// dialerOf is the worker whose process owns the other end of c ("" when none does).
func (n *peerNet) dialerOf(c net.Conn) string {
	remote, ok1 := c.RemoteAddr().(*net.TCPAddr)
	local, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return ""
	}
	inode := socketInode(procAddr(remote), procAddr(local))
	if inode == "" {
		return ""
	}
	want := "socket:[" + inode + "]"
	for pid, name := range n.pids() {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name())); err == nil && l == want {
				return name
			}
		}
	}
	return ""
}

// procAddr is a as /proc/net/tcp writes it: the IPv4 address's bytes reversed, in hex, and the
// port in hex.
func procAddr(a *net.TCPAddr) string {
	ip := a.IP.To4()
	if ip == nil {
		return ""
	}
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], a.Port)
}

// socketInode is the inode of the TCP socket from local to remote (procAddr form), from
// /proc/net/tcp.
func socketInode(local, remote string) string {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		if fields[1] == local && fields[2] == remote {
			return fields[9]
		}
	}
	return ""
}
