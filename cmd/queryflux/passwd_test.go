package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/policy"
)

// Every form printed checks against the password and passes config validation.
func TestPasswdPrintsUsableHashes(t *testing.T) {
	for _, form := range []string{"scram", "mysql", "bcrypt"} {
		cmd := newPasswdCommand()
		var out bytes.Buffer
		cmd.SetIn(strings.NewReader("s3cret pw\n"))
		cmd.SetOut(&out)
		cmd.SetArgs([]string{"--form", form})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		h := strings.TrimSpace(out.String())
		if !policy.CheckPassword(h, "s3cret pw") || policy.CheckPassword(h, "s3cret") {
			t.Fatalf("%s: %q does not check the password", form, h)
		}
		cfg := &config.Config{}
		cfg.Settings.Security.Users = []config.User{{Name: "u", PasswordHash: h}}
		for _, e := range config.Validate(cfg) {
			if strings.Contains(e.Path, "passwordHash") {
				t.Fatalf("%s: config rejects the printed hash: %v", form, e)
			}
		}
	}
}

// `queryflux config check` rejects a configuration with one broken script and names its path.
func TestConfigCheckNamesABrokenScript(t *testing.T) {
	file := t.TempDir() + "/bad.yaml"
	if err := os.WriteFile(file, []byte(badScriptYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := config.NewConfigCommand(nil)
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"check", file})
	err := cmd.Execute()
	all := out.String()
	if err != nil {
		all += err.Error()
	}
	if err == nil || !strings.Contains(all, "translation.scripts[1].source") || !strings.Contains(all, "settings.guardScripts[0].source") {
		t.Fatalf("config check: err %v, output:\n%s", err, all)
	}
	if strings.Contains(all, "translation.scripts[0]") {
		t.Fatalf("the good script is reported too:\n%s", all)
	}
}

const badScriptYAML = `
queryflux:
  role: standalone
clusters:
  - name: demo
    engine: duckdb
    endpoint: ":memory:"
    maxRunningQueries: 2
clusterGroups:
  - name: demo
    members: [demo]
routingFallback: demo
translation:
  mode: scripts
  scripts:
    - name: fine
      source: |
        def transform(sql, src, dst):
            return sql
    - name: broken
      source: |
        def transform(sql, src, dst)
            return sql
settings:
  guardScripts:
    - name: noguard
      source: |
        x = 1
`
