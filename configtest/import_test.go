package configtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/daemontest"
)

// TestConfigImportNeedsForce: `queryflux config import` stores a file's configuration (its
// engine password sealed with QUERYFLUX_CONFIG_KEY), refuses without --force a file that would
// remove every cluster, and refuses a literal password when no key is set.
func TestConfigImportNeedsForce(t *testing.T) {
	if testing.Short() {
		t.Skip("real-daemon test skipped in -short mode")
	}
	db := migratedDatabase(t)
	dir := t.TempDir()
	full, empty := filepath.Join(dir, "full.yaml"), filepath.Join(dir, "empty.yaml")
	writeFile(t, full, clusters(2))
	writeFile(t, empty, "routingFallback: \"\"\n")
	run := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(daemontest.Binary(t), append([]string{"config", "import", "--database-url", db}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if strings.Contains(string(out), clusterPassword) {
			t.Errorf("config import %v printed the cluster password", args)
		}
		return string(out), err
	}
	keyed := []string{"QUERYFLUX_CONFIG_KEY=" + configKey}
	if out, err := run(nil, full); err == nil || !strings.Contains(out, "configKey") {
		t.Fatalf("import without a key: %v\n%s", err, out)
	}
	if out, err := run(keyed, full); err != nil || !strings.Contains(out, "imported") {
		t.Fatalf("import: %v\n%s", err, out)
	}
	if out, err := run(keyed, empty); err == nil || !strings.Contains(out, "--force") {
		t.Fatalf("import of a file without clusters, no --force: %v\n%s", err, out)
	}
	if out, err := run(keyed, empty, "--force"); err != nil {
		t.Fatalf("import --force: %v\n%s", err, out)
	}
}
