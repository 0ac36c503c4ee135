package repocheck

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// outsidePointer matches what a reader of the repository cannot follow: a document outside it,
// a tracker's issue number, or talk of who wrote a file and what is to come (the code says what
// it is, not how it was made).
var outsidePointer = regexp.MustCompile(`DESIGN\.md|\.\./shared/|(?i)\bissues? #?[0-9]+\b|\bissue-[0-9]+\b|\bengineer's (part|file)\b|\blater work\b`)

// TestNothingPointsOutsideTheRepository: the code, the docs and the repository's text files
// explain themselves; they never send a reader to a document outside the repository or to an
// issue tracker's numbers, nor speak of the process that made them.
func TestNothingPointsOutsideTheRepository(t *testing.T) {
	var hits []string
	for _, path := range repoFiles(t, func(name string) bool { return textFile(name) && name != "pointers_test.go" }) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if outsidePointer.MatchString(line) {
				hits = append(hits, fmt.Sprintf("%s:%d: %s", filepath.ToSlash(path)[len("../../"):], i+1, strings.TrimSpace(line)))
			}
		}
	}
	if len(hits) > 0 {
		t.Fatalf("lines that point outside the repository (a document it does not hold, an issue number, process talk):\n%s", strings.Join(hits, "\n"))
	}
}

func textFile(name string) bool {
	for _, ext := range []string{".go", ".md", ".yaml", ".yml", ".sh", ".py", ".js", ".java", ".sql"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return name == "Makefile" || name == "Dockerfile"
}

// repoFiles lists the repository's files whose names keep takes, outside .git, node_modules,
// testdata and bin.
func repoFiles(t *testing.T, keep func(name string) bool) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if name == ".git" || name == "node_modules" || name == "testdata" || name == "bin" {
				return filepath.SkipDir
			}
			return nil
		}
		if keep(name) {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
