package statedir

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSnapshotFile(t *testing.T) {
	f := SnapshotFile{Dir: filepath.Join(t.TempDir(), "state", "w1"), Secret: "worker-secret"}
	if b, err := f.Load(); b != nil || err != nil {
		t.Fatalf("empty: %q %v", b, err)
	}
	for _, want := range []string{`{"a":1}`, `{"b":2}`} {
		if err := f.Save([]byte(want)); err != nil {
			t.Fatal(err)
		}
		if b, err := f.Load(); string(b) != want || err != nil {
			t.Fatalf("Load: %q %v, want %q", b, err, want)
		}
	}
	st, err := os.Stat(f.Path())
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v, want 0600", st.Mode(), err)
	}
	if d, _ := os.Stat(f.Dir); d.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v, want 0700", d.Mode())
	}
	entries, _ := os.ReadDir(f.Dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
}

// TestSnapshotFileIsSealed: the file on disk holds neither the snapshot's text nor the
// password in it; it opens only with the secret it was sealed with, and a file that is not
// sealed (planted, or written in clear by an older version) or was altered is refused.
func TestSnapshotFileIsSealed(t *testing.T) {
	const password = "engine-pw-7f3a9c"
	snap := []byte(`{"clusters":[{"name":"pg","credentials":{"user":"app","password":"` + password + `"}}]}`)
	f := SnapshotFile{Dir: filepath.Join(t.TempDir(), "w1"), Secret: "worker-secret"}
	if err := f.Save(snap); err != nil {
		t.Fatal(err)
	}
	disk, err := os.ReadFile(f.Path())
	if err != nil {
		t.Fatal(err)
	}
	for _, clear := range []string{password, "credentials", "clusters"} {
		if bytes.Contains(disk, []byte(clear)) {
			t.Fatalf("the file on disk shows %q", clear)
		}
	}
	if b, err := f.Load(); err != nil || !bytes.Equal(b, snap) {
		t.Fatalf("Load: %q %v", b, err)
	}
	other := SnapshotFile{Dir: f.Dir, Secret: "another-secret"}
	if b, err := other.Load(); err == nil || !strings.Contains(err.Error(), "not sealed with this worker's controlPlane.secret") || strings.Contains(err.Error(), "secret\"") {
		t.Fatalf("Load with another secret: %q %v", b, err)
	}
	altered := append([]byte(nil), disk...)
	altered[len(altered)-1] ^= 1
	for name, content := range map[string][]byte{"altered": altered, "in clear": snap} {
		if err := os.WriteFile(f.Path(), content, 0o600); err != nil {
			t.Fatal(err)
		}
		if b, err := f.Load(); err == nil {
			t.Fatalf("Load of a file %s: %q, want refused", name, b)
		}
	}
	if err := (SnapshotFile{Dir: f.Dir}).Save(snap); err == nil {
		t.Fatal("Save without a secret to seal with")
	}
}
