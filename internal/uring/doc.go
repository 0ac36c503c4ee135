// Package uring is a minimal io_uring binding on golang.org/x/sys/unix: a ring (submission and
// completion queues, mmapped from the kernel), its submission entries, and provided-buffer rings
// (IORING_REGISTER_PBUF_RING) in anonymous mmapped memory, never Go's heap: the kernel writes
// these behind the Go runtime's back. It touches the io_uring system calls and mmap only; a ring
// made with SingleIssuer belongs to the OS thread that made it (the caller locks it).
//
// determinism: outside the simulator (kernel I/O rings for the relay loop's sockets)
package uring
