package repocheck

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEveryPackageHasADocComment: a reader must know from a package's doc comment what it holds.
func TestEveryPackageHasADocComment(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{if not .Doc}}{{.ImportPath}}{{end}}", "../../...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if missing := strings.TrimSpace(string(out)); missing != "" {
		t.Fatalf("packages without a doc comment:\n%s", missing)
	}
}
