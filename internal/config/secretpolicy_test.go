package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSharedSecretSourceBounds: a shared reference reads a variable or a file only where the
// node's policy allows, never the node's own secrets; a refused one is an error naming the rule,
// never the value.
func TestSharedSecretSourceBounds(t *testing.T) {
	src := MapSecrets{
		Env: map[string]string{"PG_PW": "pg", "OTHER": "other", "ADMIN": "admin-value", "QUERYFLUX_DATABASE_URL": "db-value"},
		Files: map[string]string{"/run/secrets/pg": "pg", "/run/secrets/key": "key-value", "/etc/passwd": "root-value",
			"/opt/s/pg": "pg", "/etc/qf.yaml": "config-value", "/var/run/secrets/kubernetes.io/serviceaccount/token": "sa-value"},
	}
	local := QueryFlux{AdminAPI: AdminAPI{Token: "${env:ADMIN}"}, Persistence: Persistence{ConfigKey: "${file:/run/secrets/key}"},
		ClusterCredentials: map[string]Credentials{"pg": {Password: "${env:PG_PW}"}}}
	cases := []struct {
		policy SharedSecrets
		ref    string
		refuse string // "" reads "pg"
	}{
		{SharedSecrets{}, "${env:PG_PW}", ""}, // clusterCredentials are engine credentials: shareable
		{SharedSecrets{}, "${file:/run/secrets/pg}", ""},
		{SharedSecrets{}, "${env:QUERYFLUX_DATABASE_URL}", "QUERYFLUX_* variables are the node's own"},
		{SharedSecrets{}, "${env:ADMIN}", "own section"},
		{SharedSecrets{}, "${file:/run/secrets/key}", "own section"},
		{SharedSecrets{}, "${file:/etc/qf.yaml}", "own section"},
		{SharedSecrets{}, "${file:/etc/passwd}", "outside the directories"},
		{SharedSecrets{}, "${file:/run/secrets/../../etc/passwd}", "outside the directories"},
		{SharedSecrets{}, "${file:/run/secrets}", "outside the directories"},
		{SharedSecrets{}, "${file:/var/run/secrets/kubernetes.io/serviceaccount/token}", "service-account identity"},
		{SharedSecrets{FileDirs: []string{"/opt/s/"}}, "${file:/opt/s/pg}", ""},
		{SharedSecrets{FileDirs: []string{"/opt/s"}}, "${file:/run/secrets/pg}", "/opt/s"},
		{SharedSecrets{FileDirs: []string{}}, "${file:/run/secrets/pg}", "outside the directories"},
		{SharedSecrets{EnvPrefixes: []string{"PG_"}}, "${env:PG_PW}", ""},
		{SharedSecrets{EnvPrefixes: []string{"PG_"}}, "${env:OTHER}", "envPrefixes (PG_)"},
	}
	for _, c := range cases {
		l := local
		l.SharedSecrets = c.policy
		got, err := ResolveRefs(c.ref, SharedSecretSource(l, "/etc/qf.yaml", src))
		switch {
		case c.refuse == "" && (err != nil || got != "pg"):
			t.Errorf("%+v %s: %q %v, want it read", c.policy, c.ref, got, err)
		case c.refuse != "" && (err == nil || !strings.Contains(err.Error(), c.refuse)):
			t.Errorf("%+v %s: %q %v, want refused naming %q", c.policy, c.ref, got, err, c.refuse)
		case err != nil && strings.Contains(err.Error(), "-value"):
			t.Errorf("%s: the refusal shows a value: %v", c.ref, err)
		}
	}
}

// TestSharedFileLinksAreFollowed: a link inside an allowed directory to a file outside it is
// judged where it points.
func TestSharedFileLinksAreFollowed(t *testing.T) {
	dir := t.TempDir()
	allowed := filepath.Join(dir, "secrets")
	if err := os.Mkdir(allowed, 0o700); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "outside")
	for path, text := range map[string]string{outside: "outside-value", filepath.Join(allowed, "pw"): "pw"} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(allowed, "link")); err != nil {
		t.Fatal(err)
	}
	src := SharedSecretSource(QueryFlux{SharedSecrets: SharedSecrets{FileDirs: []string{allowed}}}, "", OSSecrets)
	if got, err := ResolveRefs("${file:"+allowed+"/pw}", src); err != nil || got != "pw" {
		t.Fatalf("a file inside: %q %v", got, err)
	}
	if got, err := ResolveRefs("${file:"+allowed+"/link}", src); err == nil || !strings.Contains(err.Error(), "outside the directories") {
		t.Fatalf("a link to a file outside: %q %v, want refused", got, err)
	}
}
