package config

import (
	"reflect"
	"testing"
)

func TestCloneIsDeepAndKeepsSecrets(t *testing.T) {
	cfg, err := Load("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := Clone(cfg)
	if !reflect.DeepEqual(c, cfg) {
		t.Fatal("clone differs")
	}
	if c.Clusters[0].Credentials.Password.Reveal() != "trino-pass" || c.QueryFlux.AdminAPI.Token.Reveal() != "admin-token-123" {
		t.Fatal("clone lost a secret")
	}
	c.Clusters[0].Labels["site"] = "us"
	c.Clusters[0].Variants["adhoc"].Labels["tier"] = "bronze"
	*c.Clusters[2].Enabled = true
	c.ClusterGroups[0].Members[0] = "x"
	c.ClusterGroups[0].Weights["trino-1"] = 99
	c.Routers[1].HeaderValueToGroup["batch"] = "x"
	c.Settings.Security.Users[0].Roles[0] = "x"
	if cfg.Clusters[0].Labels["site"] != "eu" || cfg.Clusters[0].Variants["adhoc"].Labels["tier"] != "silver" ||
		cfg.Clusters[2].IsEnabled() || cfg.ClusterGroups[0].Members[0] != "trino-1" || cfg.ClusterGroups[0].Weights["trino-1"] != 3 ||
		cfg.Routers[1].HeaderValueToGroup["batch"] != "interactive" || cfg.Settings.Security.Users[0].Roles[0] != "analyst" {
		t.Fatal("changing the clone changed the original")
	}
	if Clone(nil) != nil {
		t.Fatal("Clone(nil)")
	}
}
