//go:build !linux

package hugeheap

// advise cannot ask for huge pages here.
func advise(addr, n uintptr) bool { return false }

// reservable is 0: Reserve does nothing here.
func reservable() uint64 { return 0 }
