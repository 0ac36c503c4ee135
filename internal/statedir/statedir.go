// Package statedir is a node's state directory on disk: today a worker's last good
// configuration snapshot (worker.SnapshotStore), written whole or not at all.
//
// It touches the one directory it is given (created private, 0700; files 0600: a snapshot can
// carry engine credentials).
//
// determinism: outside the simulator (file I/O; the simulator uses worker.MemorySnapshotStore)
package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// snapshotFile is the name of the last good snapshot in the state directory.
const snapshotFile = "config-snapshot.json"

// snapshotBytesMax bounds the file read back (as the worker bounds a snapshot body).
const snapshotBytesMax = 64 << 20

// SnapshotFile keeps a snapshot in Dir.
type SnapshotFile struct {
	Dir string
}

// Path is the snapshot's file.
func (f SnapshotFile) Path() string { return filepath.Join(f.Dir, snapshotFile) }

// Load reads the snapshot; nil, nil when there is none yet. It refuses a directory that is not
// private: a snapshot planted there by another user would become this worker's configuration.
func (f SnapshotFile) Load() ([]byte, error) {
	if err := checkPrivate(f.Dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	st, err := os.Lstat(f.Path())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", f.Path())
	}
	if st.Size() > snapshotBytesMax {
		return nil, fmt.Errorf("%s: larger than %d bytes", f.Path(), snapshotBytesMax)
	}
	return os.ReadFile(f.Path())
}

// Save replaces the snapshot atomically: a temporary file, synced, then renamed over it.
func (f SnapshotFile) Save(encoded []byte) error {
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return err
	}
	if err := checkPrivate(f.Dir); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(f.Dir, snapshotFile+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing left to remove
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(encoded); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), f.Path())
}

// checkPrivate refuses dir unless it is a directory (not a link to one) of this user that no
// other user can write to: the default lives under the shared temporary directory, where another user may
// have created it first, to read what is written there or to plant a snapshot.
func checkPrivate(dir string) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("state directory %s is not a directory (a link?): remove it or set queryflux.stateDir", dir)
	}
	if owner, ok := ownerOf(st); ok && owner != os.Getuid() {
		return fmt.Errorf("state directory %s belongs to another user (uid %d): remove it or set queryflux.stateDir", dir, owner)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("state directory %s is writable by other users (mode %04o): chmod 700 it, or set queryflux.stateDir", dir, st.Mode().Perm())
	}
	return nil
}
