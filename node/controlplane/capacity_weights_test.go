package controlplane

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

// TestMountedWeightsOrderTheQueue: coordination.weights reach the ordered queue the control
// plane mounts. A worker of weight 3 whose acquire arrived after one of weight 1 is granted
// the cluster's one slot first, when its holder releases it (in arrival order the light one
// would be).
func TestMountedWeightsOrderTheQueue(t *testing.T) {
	cp := New(env.Real(nil), testConfig, registry.NewMemory())
	store := capacity.NewMemory()
	MountCapacity(env.Real(nil), cp, CapacityConfig{Store: store, Locks: store, Owner: "cp1", Ordered: true,
		Weights: map[string]int{"heavy": 3},
		Limits:  func(cluster string) (int, time.Duration, bool) { return 1, time.Minute, cluster == "c1" }})
	srv := httptest.NewServer(cp.Handler())
	t.Cleanup(srv.Close)
	call := poster(srv.Client(), srv.URL)
	token := map[string]string{}
	for _, name := range []string{"holder", "light", "heavy"} {
		code, body := call(workerapi.PathRegister, secret, workerapi.MediaWorkerRegister, `{"name":"`+name+`","version":"1"}`)
		var reg workerapi.RegisterResponse
		if code != 200 || json.Unmarshal([]byte(body), &reg) != nil {
			t.Fatalf("register %s: %d %s", name, code, body)
		}
		token[name] = reg.Token
	}
	code, body := call(capacity.PathAcquire, token["holder"], capacity.MediaJSON, `{"cluster":"c1"}`)
	var held capacity.AcquireResponse
	if code != 200 || json.Unmarshal([]byte(body), &held) != nil || !held.Granted {
		t.Fatalf("the one slot: %d %s", code, body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	granted := make(chan string, 2)
	wait := func(name string) {
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+capacity.PathAcquire, strings.NewReader(`{"cluster":"c1","waitMillis":30000}`))
		req.Header.Set("Content-Type", capacity.MediaJSON)
		workerapi.SetBearer(req, token[name])
		resp, err := srv.Client().Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if strings.Contains(string(b), `"granted":true`) {
			granted <- name
		}
	}
	waiting := func(name string) bool {
		cp.heldCount.mu.Lock()
		defer cp.heldCount.mu.Unlock()
		return cp.heldCount.n[heldKey{name, "acquire-wait"}] == 1
	}
	for _, name := range []string{"light", "heavy"} { // light's acquire waits first
		go wait(name)
		for !waiting(name) {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond) // from held to queued: a few instructions
	}
	release, _ := json.Marshal(capacity.ReleaseBatchRequest{Leases: []capacity.LeaseRef{held.Lease.Ref()}})
	if code, body := call(capacity.PathReleaseBatch, token["holder"], capacity.MediaJSON, string(release)); code != 200 {
		t.Fatalf("release: %d %s", code, body)
	}
	if first := <-granted; first != "heavy" {
		t.Fatalf("the freed slot went to %s, want heavy (weight 3) before light (weight 1)", first)
	}
}
