package fleettest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/node/workerapi"
)

// TestOneWorkerCannotHoldTheControlPlanesConnections: a worker with a valid session (or anyone
// with a request to spare) fills the control plane's API listener, here limited to 40
// connections, so that another worker's heartbeats are refused and it is evicted:
//
//   - with held requests: 60 config long-polls at once, each on its own connection. A worker
//     holds at most HeldPerWorkerMax (4); the rest are answered 429 at once and their
//     connections closed, so the other worker's heartbeat is never refused 503.
//   - with idle connections: 60 connections that each made one request (GET /health, which
//     needs no credentials) and stay open. A new connection at the limit takes the place of one
//     quiet for 10 s, rather than wait for the idle timeout (2 minutes).
func TestOneWorkerCannotHoldTheControlPlanesConnections(t *testing.T) {
	db := migratedDatabase(t)
	f := &fleet{t: t, apiAddr: daemontest.FreeAddr(t)}
	f.cpConfig = daemontest.WriteFile(t, "cp.yaml", f.controlPlaneYAML(db, "  limits: {maxConnections: 40}\n"))
	// Heartbeats are checked by hand here.
	f.startPatientControlPlane()
	hog, victim := f.register("hog", ""), f.register("victim", "")
	// The victim dials anew for every heartbeat (a pooled connection would slip past the limit).
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	seq := 0
	beat := func() (int, string) {
		seq++
		body := fmt.Sprintf(`{"seq":%d,"sentAt":%q,"health":{"state":"healthy"}}`, seq, time.Now().UTC().Format(time.RFC3339Nano))
		req, _ := http.NewRequest("POST", "http://"+f.apiAddr+workerapi.PathHeartbeat, strings.NewReader(body))
		req.Header.Set("Content-Type", workerapi.MediaHeartbeat)
		workerapi.SetBearer(req, victim)
		resp, err := fresh.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(answer)
	}
	if code, body := beat(); code != 200 {
		t.Fatalf("the victim's first heartbeat: %d %s", code, body)
	}

	// Held requests: 60 config long-polls for the revision the control plane serves, each on its
	// own connection.
	var revision string
	daemontest.Eventually(t, 15*time.Second, "a published configuration", func() bool {
		code, header, _ := daemontest.Call("GET", "http://"+f.apiAddr+snapshot.PathConfig, hog, "", nil)
		revision = strings.Trim(header.Get("ETag"), `"`)
		return code == 200 && revision != ""
	})
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	held := make(chan struct{})
	t.Cleanup(func() { close(held) })
	for range 60 {
		wg.Add(1)
		go func() {
			c, err := net.Dial("tcp", f.apiAddr)
			if err != nil {
				t.Error(err)
				wg.Done()
				return
			}
			defer c.Close()
			fmt.Fprintf(c, "GET %s?revision=%s&timeoutSecs=300 HTTP/1.1\r\nHost: cp\r\nAuthorization: Bearer %s\r\n\r\n", snapshot.PathConfigWait, revision, hog)
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second)) // held ones answer nothing: give up reading
			buf := make([]byte, 64)
			n, _ := io.ReadAtLeast(c, buf, 12)
			code := 0
			if n >= 12 {
				_, _ = fmt.Sscanf(string(buf[9:12]), "%d", &code)
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
			wg.Done()
			<-held // keep the connection open (a held long-poll stays held)
		}()
	}
	wg.Wait()
	t.Logf("60 config long-polls of one worker: answers %v (0: held, no answer)", codes)
	if codes[0] > 4 {
		t.Errorf("%d config long-polls of one worker held at once, want at most 4", codes[0])
	}
	if code, body := beat(); code != 200 {
		t.Fatalf("another worker's heartbeat while one worker holds long-polls: %d %s", code, body)
	}

	// Idle connections: 60 keep-alive connections that made one request each.
	for range 60 {
		c, err := net.Dial("tcp", f.apiAddr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: cp\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, _ = c.Read(make([]byte, 512))
	}
	daemontest.Eventually(t, 30*time.Second, "another worker's heartbeat with the listener full of idle connections", func() bool {
		code, _ := beat()
		return code == 200
	})
}

// TestWorkerTakesNoCapacityOfClustersItIsNotGiven: a zone=eu worker (its snapshot holds pg-eu
// only) asks the real control plane for leases of pg-us, a cluster whose workerSelector wants
// zone=us. It gets 403 naming the cluster (granted, one worker could take every slot of another
// zone's cluster); its own cluster's leases are granted.
func TestWorkerTakesNoCapacityOfClustersItIsNotGiven(t *testing.T) {
	db := migratedDatabase(t)
	f := &fleet{t: t, apiAddr: daemontest.FreeAddr(t)}
	f.cpConfig = daemontest.WriteFile(t, "cp.yaml", f.controlPlaneYAML(db, `clusters:
  - {name: pg-eu, engine: postgres, endpoint: "127.0.0.1:5432", database: eu_db, maxRunningQueries: 2,
     credentials: {user: postgres, password: eu-pw}, workerSelector: {zone: eu}}
  - {name: pg-us, engine: postgres, endpoint: "127.0.0.1:5432", database: us_db, maxRunningQueries: 2,
     credentials: {user: postgres, password: us-pw}, workerSelector: {zone: us}}
clusterGroups:
  - {name: eu, members: [pg-eu]}
  - {name: us, members: [pg-us]}
routingFallback: eu
`))
	f.startControlPlane()
	code, _, body := f.post(workerapi.PathRegister, workerSecret, workerapi.MediaWorkerRegister, `{"name":"probe-eu","version":"1","labels":{"zone":"eu"}}`)
	var reg workerapi.RegisterResponse
	if code != 200 || json.Unmarshal(body, &reg) != nil {
		t.Fatalf("register: %d %s", code, body)
	}
	daemontest.Eventually(t, 15*time.Second, "the eu snapshot served", func() bool {
		code, _, _ := daemontest.Call("GET", "http://"+f.apiAddr+snapshot.PathConfig, reg.Token, "", nil)
		return code == 200
	})
	acquire := func(cluster string) (int, string) {
		code, eb, body := f.post(capacity.PathAcquire, reg.Token, capacity.MediaJSON, fmt.Sprintf(`{"cluster":%q,"ttlMillis":30000}`, cluster))
		if eb.Error != "" {
			return code, eb.Error
		}
		return code, string(body)
	}
	for range 2 {
		if code, answer := acquire("pg-us"); code != 403 || !strings.Contains(answer, "pg-us") {
			t.Fatalf("a zone=eu worker's acquire of pg-us: %d %s, want 403", code, answer)
		}
	}
	if code, answer := acquire("pg-eu"); code != 200 || !strings.Contains(answer, `"granted":true`) {
		t.Fatalf("a zone=eu worker's acquire of pg-eu: %d %s, want granted", code, answer)
	}
	code, _, leases := daemontest.Call("GET", "http://"+f.apiAddr+"/admin/leases?cluster=pg-us", adminToken, "", nil)
	if code != 200 || strings.Contains(leases, "probe-eu") {
		t.Fatalf("pg-us leases: %d %s", code, leases)
	}

	// Racing for more than the cap: 40 acquires at once, with a cap and a TTL asked far above
	// the configuration's, from the same session. pg-eu's cap is 2 and one lease is held.
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"cluster":"pg-eu","cap":%d,"ttlMillis":%d}`, []int{1000000, -5, 0, 2147483647}[i%4], int64(1)<<50)
			code, _, answer := daemontest.Call("POST", "http://"+f.apiAddr+capacity.PathAcquire, reg.Token, body, map[string]string{"Content-Type": capacity.MediaJSON})
			mu.Lock()
			defer mu.Unlock()
			if code == 200 && strings.Contains(answer, `"granted":true`) {
				granted++
				if !strings.Contains(answer, `"ttlMillis":`) || strings.Contains(answer, fmt.Sprint(int64(1)<<50)) {
					t.Errorf("a lease granted for the TTL asked: %s", answer)
				}
			}
		}()
	}
	wg.Wait()
	if granted != 1 {
		t.Fatalf("40 racing acquires at cap 2 with one lease held: %d granted, want 1", granted)
	}
}
