package hugeheap

import "golang.org/x/sys/unix"

// advise marks n bytes from addr (the heap's, held live by the caller) MADV_HUGEPAGE.
func advise(addr, n uintptr) bool {
	_, _, errno := unix.Syscall(unix.SYS_MADVISE, addr, n, unix.MADV_HUGEPAGE)
	return errno == 0
}

// systemMemory is the machine's memory in bytes (0 if unknown).
func systemMemory() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}
