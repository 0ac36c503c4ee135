//go:build unix

package statedir

import (
	"io/fs"
	"syscall"
)

// ownerOf is the user id owning the file st describes.
func ownerOf(st fs.FileInfo) (int, bool) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(sys.Uid), true
}
