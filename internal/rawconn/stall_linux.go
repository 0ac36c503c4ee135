//go:build linux

package rawconn

import "golang.org/x/sys/unix"

// bytesAcked is what the peer of TCP socket fd acknowledged so far (0 where unknown).
func bytesAcked(fd uintptr) uint64 {
	info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	if err != nil {
		return 0
	}
	return info.Bytes_acked
}
