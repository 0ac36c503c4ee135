package historycli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/history/histfile"
	"github.com/queryflux/queryflux/internal/history/historytest"
)

// TestExportPagesEverythingRedacted: the export walks every page of the API (more records than
// one page holds), writes them by arrival from the first one, renames workers in order of first
// arrival, and carries no user name (hashed only when asked: one stable hash per user).
func TestExportPagesEverythingRedacted(t *testing.T) {
	srv := serverWith(t, 2100)
	dir := t.TempDir()
	plain, hashed := filepath.Join(dir, "plain.csv"), filepath.Join(dir, "hashed.csv")
	if _, err := run(t, "export", "--admin-url", srv.URL, "--admin-token", "adm", "-o", plain); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "export", "--admin-url", srv.URL, "--admin-token", "adm", "-o", hashed, "--users", "hash", "--status", "failed"); err != nil {
		t.Fatal(err)
	}
	f := readExport(t, plain)
	if len(f.Entries) != 2101 || !f.Origin.Equal(historytest.Epoch) || f.Users {
		t.Fatalf("%d entries from %v (users %v), want 2101 from %v without users", len(f.Entries), f.Origin, f.Users, historytest.Epoch)
	}
	first, last := f.Entries[0], f.Entries[len(f.Entries)-1]
	if first.ArrivalMs != 0 || first.Worker != "w1" || f.Entries[1].Worker != "w2" || last.ArrivalMs != 2099_000 {
		t.Fatalf("first %+v, second %+v, last %+v: want arrivals 0 .. 2099000 ms and workers renamed w1, w2", first, f.Entries[1], last)
	}
	if first.Group != "g" || first.Cluster != "c" || first.Status != "failed" {
		t.Fatalf("first entry %+v: want group g, cluster c, status failed", first)
	}
	h := readExport(t, hashed)
	if !h.Users || len(h.Entries) != 700 || h.Entries[0].UserHash == "" || h.Entries[0].UserHash != h.Entries[699].UserHash {
		t.Fatalf("hashed export: users %v, %d entries, hashes %q %q: want 700 failed ones sharing one hash", h.Users, len(h.Entries), h.Entries[0].UserHash, h.Entries[699].UserHash)
	}
	for _, p := range []string{plain, hashed} {
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), ",u,") || strings.Contains(string(b), ",u\n") || strings.Contains(string(b), "rule") {
			t.Fatalf("%s carries a user name or routing text", p)
		}
	}
}

func readExport(t *testing.T, path string) *histfile.File {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	f, err := histfile.Read(fh)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestExportRefusesBadFlags: wrong flag values and empty selections are named.
func TestExportRefusesBadFlags(t *testing.T) {
	srv := server(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--users", "plain"}, `--users "plain": want omit or hash`},
		{[]string{"--max-records", "0"}, "--max-records 0"},
		{[]string{"--max-records", "10"}, "more than --max-records 10 records match"},
		{[]string{"--worker", "nobody"}, "no queries match"},
		{[]string{"--admin-token", "wrong"}, "401"},
	} {
		args := append([]string{"export", "--admin-url", srv.URL, "--admin-token", "adm", "-o", filepath.Join(t.TempDir(), "x.csv")}, c.args...)
		if _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
	}
}
