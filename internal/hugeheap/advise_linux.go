package hugeheap

import (
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// advise marks n bytes from addr (the heap's, held live by the caller) MADV_HUGEPAGE.
func advise(addr, n uintptr) bool {
	_, _, errno := unix.Syscall(unix.SYS_MADVISE, addr, n, unix.MADV_HUGEPAGE)
	return errno == 0
}

// reservable is how many bytes Reserve may take here: an eighth of the machine's memory, and
// nothing under strict overcommit.
func reservable() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	mode, err := os.ReadFile("/proc/sys/vm/overcommit_memory")
	if err != nil {
		return 0
	}
	return limit(string(mode), uint64(si.Totalram)*uint64(si.Unit))
}

// limit is an eighth of ram, or 0 when overcommit (the contents of
// /proc/sys/vm/overcommit_memory) is strict ("2"): there the reserved mapping counts against the
// commit limit whether or not a page of it is touched.
func limit(overcommit string, ram uint64) uint64 {
	if strings.TrimSpace(overcommit) == "2" {
		return 0
	}
	return ram / 8
}
