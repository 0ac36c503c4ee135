//go:build !linux

package hugeheap

// advise cannot ask for huge pages here.
func advise(addr, n uintptr) bool { return false }

// systemMemory is 0: Reserve does nothing here.
func systemMemory() uint64 { return 0 }
