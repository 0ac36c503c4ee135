package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

// zonedSnapshot has a group per zone, each over a cluster only that zone's workers may use;
// usCap is the us cluster's cap, so an edit can touch the us group alone.
func zonedSnapshot(t *testing.T, usCap int) *snapshot.WorkerSnapshotV1 {
	t.Helper()
	return snapshotOf(t, fmt.Appendf(nil, `
clusters:
  - {name: c-eu, engine: sim, maxRunningQueries: 1, workerSelector: {zone: eu-1}}
  - {name: c-us, engine: sim, maxRunningQueries: %d, workerSelector: {zone: us-1}}
  - {name: c-all, engine: sim, maxRunningQueries: 1}
clusterGroups:
  - {name: eu, members: [c-eu]}
  - {name: us, members: [c-us]}
  - {name: all, members: [c-all]}
routingFallback: all
`, usCap))
}

func (h *csHarness) register(name, zone string) string {
	h.t.Helper()
	code, body := h.get(workerapi.PathRegister, csSecret, nil, "POST",
		fmt.Sprintf(`{"name":%q,"version":"1","labels":{"zone":%q},"frontends":[]}`, name, zone))
	var resp workerapi.RegisterResponse
	if code != 200 || json.Unmarshal([]byte(body), &resp) != nil {
		h.t.Fatalf("register %s: %d %s", name, code, body)
	}
	return resp.Token
}

func (h *csHarness) snapshotFor(token string) *snapshot.WorkerSnapshotV1 {
	h.t.Helper()
	code, body := h.get(snapshot.PathConfig, token, nil, "", "")
	snap, err := snapshot.Decode([]byte(body))
	if code != 200 || err != nil {
		h.t.Fatalf("GET config: %d %v", code, err)
	}
	return snap
}

// Each worker gets its own filtered snapshot and revision; an edit that touches one zone's
// group answers only the long-polls of that zone's workers.
func TestConfigPerWorkerSnapshotsAndWakes(t *testing.T) {
	h := newCSHarness(t, time.Minute)
	eu, us := h.register("w-eu", "eu-1"), h.register("w-us", "us-1")
	s1 := zonedSnapshot(t, 1)
	if err := h.srv.Publish(s1); err != nil {
		t.Fatal(err)
	}
	euSnap, usSnap := h.snapshotFor(eu), h.snapshotFor(us)
	if euSnap.Revision == usSnap.Revision || euSnap.Revision == s1.Revision {
		t.Fatal("workers with different labels share a revision")
	}
	var euClusters []string
	for _, c := range euSnap.Clusters {
		euClusters = append(euClusters, c.Name)
	}
	if !slices.Equal(euClusters, []string{"c-all", "c-eu"}) {
		t.Fatalf("the eu worker got clusters %v", euClusters)
	}

	var wg sync.WaitGroup
	var euCode, usCode int
	var usBody string
	wg.Add(2)
	h.e.Go(context.Background(), "eu-poll", func(context.Context) {
		defer wg.Done()
		euCode, _ = h.get(snapshot.PathConfigWait+"?timeoutSecs=3&revision="+euSnap.Revision, eu, nil, "", "")
	})
	h.e.Go(context.Background(), "us-poll", func(context.Context) {
		defer wg.Done()
		usCode, usBody = h.get(snapshot.PathConfigWait+"?revision="+usSnap.Revision, us, nil, "", "")
	})
	h.waitFor(func() bool { return h.srv.Waiting() == 2 })
	if err := h.srv.Publish(zonedSnapshot(t, 2)); err != nil {
		t.Fatal(err)
	}
	h.waitFor(func() bool { return h.srv.Waiting() < 2 })
	if h.srv.Waiting() != 1 {
		t.Fatalf("%d polls still parked after an edit of the us group, want the eu one", h.srv.Waiting())
	}
	wg.Wait()
	if usCode != 200 || strings.Contains(usBody, usSnap.Revision) {
		t.Fatalf("the us poll: %d", usCode)
	}
	if euCode != http.StatusNotModified {
		t.Fatalf("the eu poll, whose snapshot did not change: %d, want 304", euCode)
	}

	// /admin/workers lists the groups each worker serves.
	for name, want := range map[string][]string{"w-eu": {"eu", "all"}, "w-us": {"us", "all"}} {
		info, ok := h.cp.Worker(name)
		if !ok || !slices.Equal(info.Groups, want) || info.Labels["zone"] == "" {
			t.Fatalf("%s as listed: %+v", name, info)
		}
	}
}

// queryflux_selector_unmatched says which selector-bound groups no online worker serves, and
// follows registrations and evictions.
func TestSelectorUnmatchedMetric(t *testing.T) {
	e := env.Real(nil)
	reg := prometheus.NewPedanticRegistry()
	cp := New(e, Config{WorkerSecret: csSecret, AdminToken: csAdminToken, AllowShortTimeouts: true, Metrics: reg}, registry.NewMemory())
	srv := NewConfigServer(e, time.Minute)
	srv.Mount(cp)
	h := &csHarness{t: t, e: e, cp: cp, srv: srv}
	if err := srv.Publish(zonedSnapshot(t, 1)); err != nil {
		t.Fatal(err)
	}
	want := func(eu, us int) {
		t.Helper()
		expected := fmt.Sprintf(`
# HELP queryflux_selector_unmatched %s
# TYPE queryflux_selector_unmatched gauge
queryflux_selector_unmatched{group="eu"} %d
queryflux_selector_unmatched{group="us"} %d
`, "1 when no online worker's labels satisfy the cluster group's workerSelector (its own or its members'), so no worker serves it; 0 when one does. Only groups with a selector appear.", eu, us)
		if err := testutil.GatherAndCompare(reg, strings.NewReader(expected), "queryflux_selector_unmatched"); err != nil {
			t.Fatal(err)
		}
	}
	want(1, 1)
	h.register("w-eu", "eu-1")
	want(0, 1)
	if got := srv.UnmatchedSelectors(cp); len(got) != 1 || got[0].Name != "us" || got[0].WorkerSelector["zone"] != "us-1" {
		t.Fatalf("unmatched with one eu worker: %+v", got)
	}
	h.register("w-us", "us-1")
	want(0, 0)
	later := e.Now()
	for range 3 { // healthy -> stale -> evicted
		later = later.Add(time.Hour)
		cp.Tick(context.Background(), later)
	}
	want(1, 1)
}
