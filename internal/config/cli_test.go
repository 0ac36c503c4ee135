package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCheck(t *testing.T, file string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := NewConfigCommand(nil)
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"check", file})
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

func TestConfigCheckCommand(t *testing.T) {
	out, _, err := runCheck(t, "testdata/full.yaml")
	if err != nil || !strings.Contains(out, "ok") {
		t.Fatalf("valid file: err %v, out %q", err, out)
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	src := "clusters:\n  - {name: a, engine: x, maxRunningQueries: 1}\n  - {name: b, engine: sim}\nrouters:\n  - {type: tags, tag: t, group: g}\n"
	if err := os.WriteFile(bad, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := runCheck(t, bad)
	if err == nil {
		t.Fatal("an invalid file passed")
	}
	for _, want := range []string{
		`clusters[0].engine: unknown engine "x"`,
		"clusters[1].maxRunningQueries: must be positive",
		`routers[0].group: unknown group "g" (line 5)`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}

	_, stderr, err = runCheck(t, filepath.Join(t.TempDir(), "missing.yaml"))
	if err == nil || !strings.Contains(stderr, "no such file") {
		t.Fatalf("missing file: err %v stderr %q", err, stderr)
	}
}
