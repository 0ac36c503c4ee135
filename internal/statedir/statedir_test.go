package statedir

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSnapshotFile(t *testing.T) {
	f := SnapshotFile{Dir: filepath.Join(t.TempDir(), "state", "w1")}
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
