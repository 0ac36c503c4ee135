// Package statedir is a node's state directory on disk: today a worker's last good
// configuration snapshot (worker.SnapshotStore), written whole or not at all.
//
// It touches the one directory it is given (created private, 0700; files 0600). A snapshot can
// carry engine credentials, so the file is sealed (AES-256-GCM) under a key derived from a
// secret the worker holds in its configuration, never beside the file.
//
// determinism: outside the simulator (file I/O; the simulator uses worker.MemorySnapshotStore)
package statedir

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
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

// sealedMagic begins a sealed snapshot file; it is also the seal's additional data.
const sealedMagic = "queryflux sealed snapshot v1\n"

// SnapshotFile keeps a snapshot in Dir, sealed with a key derived from Secret.
type SnapshotFile struct {
	Dir string
	// Secret is what the file is sealed with: the worker's controlPlane.secret. A file not
	// sealed with it (planted, written by an older version, or before the secret changed) is
	// refused, as a file of another user is.
	Secret string
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
	sealed, err := os.ReadFile(f.Path())
	if err != nil {
		return nil, err
	}
	return f.open(sealed)
}

// aead is the cipher sealing the file.
func (f SnapshotFile) aead() (cipher.AEAD, error) {
	if f.Secret == "" {
		return nil, errors.New("statedir: no secret to seal the snapshot with")
	}
	key, err := hkdf.Key(sha256.New, []byte(f.Secret), nil, "queryflux worker snapshot at rest", 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func (f SnapshotFile) seal(plain []byte) ([]byte, error) {
	aead, err := f.aead()
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	out := append([]byte(sealedMagic), nonce...)
	return aead.Seal(out, nonce, plain, []byte(sealedMagic)), nil
}

func (f SnapshotFile) open(sealed []byte) ([]byte, error) {
	aead, err := f.aead()
	if err != nil {
		return nil, err
	}
	rest, ok := bytes.CutPrefix(sealed, []byte(sealedMagic))
	if !ok || len(rest) < aead.NonceSize() {
		return nil, fmt.Errorf("%s is not a sealed snapshot (written by an older version?): it is not used", f.Path())
	}
	plain, err := aead.Open(nil, rest[:aead.NonceSize()], rest[aead.NonceSize():], []byte(sealedMagic))
	if err != nil {
		return nil, fmt.Errorf("%s was not sealed with this worker's controlPlane.secret (changed since?): it is not used", f.Path())
	}
	return plain, nil
}

// Save replaces the snapshot atomically: a temporary file, synced, then renamed over it.
func (f SnapshotFile) Save(encoded []byte) error {
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return err
	}
	if err := checkPrivate(f.Dir); err != nil {
		return err
	}
	sealed, err := f.seal(encoded)
	if err != nil {
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
	if _, err := tmp.Write(sealed); err != nil {
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
