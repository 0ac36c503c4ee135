package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTokenFileNeverWrittenThroughWhatWasThere: the admin token goes into a new file only this
// user can read, never into a file or through a link that was already at the path (the path is
// in the shared temporary directory, where another user may have put one).
func TestTokenFileNeverWrittenThroughWhatWasThere(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "attacker-readable")
	if err := os.WriteFile(target, []byte("before"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "token")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if err := writeNewPrivateFile(path, "tok\n"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "before" {
		t.Fatalf("written through the link: %q", b)
	}
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v, want a regular 0600 file", st.Mode(), err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeNewPrivateFile(path, "tok2\n"); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("an existing file kept its mode %v", st.Mode())
	}
}
