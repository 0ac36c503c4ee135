package statedir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStateDirMustBePrivate: a state directory other users can write to, or a link in its place
// (the default is under the shared temporary directory, where anyone may create it first), is
// refused for writing and for reading: a snapshot planted there never becomes the worker's
// configuration, and the engine passwords a snapshot carries are never written there.
func TestStateDirMustBePrivate(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(open, snapshotFile), []byte(`{"planted":true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	f := SnapshotFile{Dir: open, Secret: "s"}
	if b, err := f.Load(); err == nil || !strings.Contains(err.Error(), "writable by other users") {
		t.Fatalf("Load from a world-writable directory: %q %v", b, err)
	}
	if err := f.Save([]byte(`{}`)); err == nil {
		t.Fatal("Save into a world-writable directory")
	}

	private := filepath.Join(t.TempDir(), "private")
	if err := (SnapshotFile{Dir: private, Secret: "s"}).Save([]byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(private, link); err != nil {
		t.Fatal(err)
	}
	if b, err := (SnapshotFile{Dir: link, Secret: "s"}).Load(); err == nil {
		t.Fatalf("Load through a link: %q", b)
	}
	if err := (SnapshotFile{Dir: link, Secret: "s"}).Save([]byte(`{}`)); err == nil {
		t.Fatal("Save through a link")
	}
}
