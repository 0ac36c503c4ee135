package configtest

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/daemontest"
)

// TestRefusedConfigurationsHideSecrets: a configuration that is refused (by `config check`,
// `config check --dial`, or at start by an engine driver that quotes its whole connection string)
// is reported without any password it holds, wherever it is written: a URL's userinfo or query,
// a key=value connection string, or a credential option in any letter case; at every log level.
func TestRefusedConfigurationsHideSecrets(t *testing.T) {
	if testing.Short() {
		t.Skip("real-binary test skipped in -short mode")
	}
	bin := daemontest.Binary(t)
	dir := t.TempDir()
	secrets := []string{"KVDSNSECRET1", "QUERYSECRET2", "OPTSECRET3", "OPT SECRET/4", "URLSECRET5"}
	cases := []struct {
		name, doc string
		args      []string
	}{
		{"key=value endpoint", `clusters:
  m: {engine: mysql, endpoint: "host=127.0.0.1 port=3306 user=x password=KVDSNSECRET1", maxRunningQueries: 1}
clusterGroups: [{name: g, members: [m]}]
routingFallback: g
`, []string{"config", "check"}},
		{"query password, unreachable", `clusters:
  p: {engine: postgres, endpoint: "postgres://u:URLSECRET5@127.0.0.1:1/x?password=QUERYSECRET2&sslmode=disable", maxRunningQueries: 1}
clusterGroups: [{name: g, members: [p]}]
routingFallback: g
`, []string{"config", "check", "--dial"}},
		{"driver refuses options", `queryflux:
  frontends: {postgres: {enabled: true, listen: "127.0.0.1:0"}}
  adminApi: {listen: "127.0.0.1:0"}
clusters:
  p: {engine: postgres, endpoint: "127.0.0.1:5432", maxRunningQueries: 1, options: {Password: OPTSECRET3, sslpassword: "OPT SECRET/4", sslkey: /nonexistent/k}}
clusterGroups: [{name: g, members: [p]}]
routingFallback: g
`, []string{"serve", "--log-level", "debug", "--config"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			writeFile(t, file, tc.doc)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, append(tc.args, file)...).CombinedOutput()
			if err == nil {
				t.Fatalf("%v accepted the configuration:\n%s", tc.args, out)
			}
			if !strings.Contains(string(out), "[redacted]") && !strings.Contains(string(out), "sslcert") {
				t.Fatalf("the refusal no longer says what was wrong:\n%s", out)
			}
			for _, s := range append(secrets, "OPT+SECRET%2F4", "OPT%20SECRET%2F4") {
				if strings.Contains(string(out), s) {
					t.Fatalf("%v shows %q:\n%s", tc.args, s, out)
				}
			}
		})
	}
}
