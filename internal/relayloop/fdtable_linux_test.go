//go:build linux

package relayloop

import (
	"testing"

	"pgregory.net/rapid"
)

// An fdTable answers what a map would, whatever the order of sets and deletes and however far
// apart the descriptors are.
func TestFDTableIsAMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var tab fdTable[int]
		model := map[int]int{}
		for range rapid.IntRange(0, 200).Draw(t, "ops") {
			fd := rapid.IntRange(-1, 300).Draw(t, "fd")
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				if fd >= 0 {
					v := rapid.IntRange(1, 1000).Draw(t, "v")
					tab.set(fd, v)
					model[fd] = v
				}
			case 1:
				tab.del(fd)
				delete(model, fd)
			}
			for probe := -1; probe <= 301; probe++ {
				if got, want := tab.get(probe), model[probe]; got != want {
					t.Fatalf("get(%d) = %d, want %d", probe, got, want)
				}
			}
		}
	})
}
