package snapshot

import (
	"reflect"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/config"
)

func TestDiff(t *testing.T) {
	cfg := fullConfig(t)
	a := build(t, cfg, Embedded)
	if d := Diff(a, a); len(d) != 0 {
		t.Fatalf("a snapshot differs from itself: %v", d)
	}
	edited := config.Clone(cfg)
	edited.Clusters[1].MaxRunningQueries = 9                     // pg-1 changed
	edited.Clusters[0].Credentials.Password = "new-secret-value" // trino-1 changed; its variant has its own
	edited.Clusters = edited.Clusters[:2]                        // duck removed
	edited.ClusterGroups = edited.ClusterGroups[:2]              // local removed
	edited.ClusterGroups = append(edited.ClusterGroups, config.ClusterGroup{Name: "fresh", Members: []string{"pg-1"}, Strategy: config.StrategyRoundRobin})
	edited.Routers[5].Source = "def route(ctx):\n    return 'oltp'\n"
	edited.Routers[4].Group = "fresh"
	edited.Routers[1].HeaderValueToGroup["local"] = "fresh"
	edited.RoutingFallback = "fresh"
	b := build(t, edited, Embedded)
	want := []string{
		"cluster duck removed", "cluster pg-1 changed", "cluster trino-1 changed",
		"group fresh added", "group local removed",
		"routers changed", "routingFallback changed",
	}
	got := Diff(a, b)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if strings.Contains(strings.Join(got, " "), "new-secret-value") {
		t.Fatal("a diff shows a value")
	}
	if d := Diff(nil, a); len(d) != 14 || d[0] != "cluster duck added" || d[13] != "credentials mode changed" {
		t.Fatalf("from nothing: %v", d)
	}
}
