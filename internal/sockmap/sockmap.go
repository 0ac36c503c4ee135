// Package sockmap relays bytes between pairs of TCP sockets inside the kernel (sockmap: a
// BPF_MAP_TYPE_SOCKHASH with an sk_skb stream verdict program): what a socket receives is
// handed to its peer's send path without a wake-up of the process that owns both, without a
// receive or a send system call and without a copy to user space. It is the other design of a
// relay hop measured against the event loop (internal/relayloop): the floor of any
// hop that still passes each byte through both sockets' TCP stacks.
//
// The verdict program is ten instructions written with cilium/ebpf's asm package (no clang,
// no ELF): key = bpf_get_socket_cookie(skb); return bpf_sk_redirect_hash(skb, peers, &key, 0).
// The map holds each socket of a pair under the OTHER socket's cookie, so a socket's bytes go to
// its peer; a socket whose peer is gone has its bytes dropped (SK_DROP).
//
// A spliced socket is no longer read by its owner: its bytes never reach the receive queue.
// Splice refuses a socket with unread bytes (they would wait for the socket's next arrival).
//
// Where BPF is refused (no CAP_BPF/CAP_NET_ADMIN, a kernel without CONFIG_BPF_STREAM_PARSER or
// CONFIG_NET_SOCK_MSG, a seccomp policy), New returns an error wrapping ErrUnsupported and the
// caller relays in user space.
//
// determinism: outside the simulator (a kernel facility of the real daemon's host)
package sockmap

import (
	"errors"
	"net"
)

// ErrUnsupported is wrapped by New's error when the host refuses the map or the program.
var ErrUnsupported = errors.New("sockmap: in-kernel splicing is not available here")

// ConnFD is c's file descriptor (-1 where it has none).
func ConnFD(c *net.TCPConn) int {
	rc, err := c.SyscallConn()
	if err != nil {
		return -1
	}
	var n int
	_ = rc.Control(func(f uintptr) { n = int(f) })
	return n
}
