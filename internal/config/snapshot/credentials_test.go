package snapshot

import (
	"fmt"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/config"
)

// clusterByName finds an expanded cluster of cfg.
func clusterByName(t *testing.T, cfg *config.Config, name string) config.Cluster {
	t.Helper()
	for _, c := range cfg.Clusters {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no cluster %q", name)
	return config.Cluster{}
}

func TestStrippedFilledFromLocalCredentials(t *testing.T) {
	s := build(t, fullConfig(t), Stripped)
	local := config.QueryFlux{ClusterCredentials: map[string]config.Credentials{
		"trino-1":        {Password: "local-trino"},                        // base entry; keeps the snapshot's user
		"trino-1::adhoc": {User: "local-analyst", Password: "local-adhoc"}, // a variant's own entry wins
		"pg-1":           {User: "app", Password: "local-pg"},
	}}
	cfg, err := s.WorkerConfig(&local)
	if err != nil {
		t.Fatalf("WorkerConfig: %v", err)
	}
	if err := config.Compile(cfg); err != nil {
		t.Fatalf("Compile: %v", err)
	}
	for name, want := range map[string][2]string{
		"trino-1":        {"etl", "local-trino"},
		"trino-1::adhoc": {"local-analyst", "local-adhoc"},
		"pg-1":           {"app", "local-pg"},
		"duck":           {"", ""},
	} {
		c := clusterByName(t, cfg, name).Credentials
		if c.User != want[0] || c.Password.Reveal() != want[1] {
			t.Errorf("%s: user %q password %q, want %q %q", name, c.User, c.Password.Reveal(), want[0], want[1])
		}
	}
	// The variant without its own entry takes its base's.
	delete(local.ClusterCredentials, "trino-1::adhoc")
	cfg, err = s.WorkerConfig(&local)
	if err != nil {
		t.Fatal(err)
	}
	if c := clusterByName(t, cfg, "trino-1::adhoc").Credentials; c.User != "analyst" || c.Password.Reveal() != "local-trino" {
		t.Fatalf("variant from base entry: user %q password %q", c.User, c.Password.Reveal())
	}
	// The filled config never prints a password.
	if out := fmt.Sprintf("%v %+v %#v", cfg, cfg.Clusters, cfg.QueryFlux); strings.Contains(out, "local-") {
		t.Fatalf("printed config shows a local credential: %s", out)
	}
}

func TestStrippedWithoutLocalCredentialsIsRefused(t *testing.T) {
	s := build(t, fullConfig(t), Stripped)
	local := config.QueryFlux{ClusterCredentials: map[string]config.Credentials{
		"pg-1": {Password: "local-pg"},
	}}
	_, err := s.WorkerConfig(&local)
	if err == nil {
		t.Fatal("a stripped snapshot without trino-1's credentials was accepted")
	}
	msg := err.Error()
	for _, want := range []string{`"trino-1" (trino)`, `"trino-1::adhoc" (trino)`, "queryflux.clusterCredentials"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not name %s", msg, want)
		}
	}
	if strings.Contains(msg, "duck") || strings.Contains(msg, "pg-1") || strings.Contains(msg, "local-pg") {
		t.Errorf("error %q names a cluster that is fine, or a credential", msg)
	}
	// With nothing local at all, every cluster that logs in is named; duckdb needs nothing.
	_, err = s.WorkerConfig(&config.QueryFlux{})
	if err == nil || !strings.Contains(err.Error(), `"pg-1"`) || strings.Contains(err.Error(), "duck") {
		t.Fatalf("err %v", err)
	}
}

func TestEmbeddedIgnoresLocalCredentials(t *testing.T) {
	s := build(t, fullConfig(t), Embedded)
	cfg, err := s.WorkerConfig(&config.QueryFlux{ClusterCredentials: map[string]config.Credentials{
		"trino-1": {User: "other", Password: "local-trino"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if c := clusterByName(t, cfg, "trino-1").Credentials; c.User != "etl" || c.Password.Reveal() != "trino-pass" {
		t.Fatalf("embedded credentials replaced: user %q password %q", c.User, c.Password.Reveal())
	}
	// An embedded snapshot needs nothing local.
	if _, err := s.WorkerConfig(&config.QueryFlux{}); err != nil {
		t.Fatal(err)
	}
}

func TestClusterCredentialsParseFromYAML(t *testing.T) {
	cfg, err := config.Parse([]byte(`
queryflux:
  role: worker
  controlPlane: {url: "http://127.0.0.1:1", secret: s}
  clusterCredentials:
    pg-1: {user: app, password: local-pg}
`))
	if err != nil {
		t.Fatal(err)
	}
	if c := cfg.QueryFlux.ClusterCredentials["pg-1"]; c.User != "app" || c.Password.Reveal() != "local-pg" {
		t.Fatalf("parsed %q %q", c.User, c.Password.Reveal())
	}
	if err := config.Compile(cfg); err != nil {
		t.Fatalf("a worker's clusterCredentials do not compile: %v", err)
	}
	if strings.Contains(cfg.String(), "local-pg") {
		t.Fatal("the config's String shows a cluster password")
	}
}
