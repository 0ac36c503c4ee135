package fleettest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/testlong"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/workerapi"
)

// TestAWorkerSendingWhatItShouldNotChangesNothing: the real control plane (its PostgreSQL
// lease store and registry, its own listener and bounds) and a worker holding a valid session
// that sends what it should not, over HTTP:
//   - a lease id replayed after its release once the slot went to another worker (released
//     again: 200 released 0, a retry's answer; renewed: 409; carried on an acquire: nothing
//     granted), a lease id forged (never issued) and another worker's (403): the other
//     worker's lease held and renewable, the cluster's cap of 2 never passed;
//   - another worker's name in a body (a heartbeat's name, an acquire's holder);
//   - counts and durations zero, negative, huge, fractional or strings: a lease asked for
//     int64's largest TTL or wait gets the configured TTL at once, the rest are refused 400
//     naming the field, and the refused heartbeats leave the worker's record as it was;
//   - bodies that dribble: a connection sending nothing, or half a request head, is cut at the
//     handshake timeout; a request whose body stops half-way is cut at the message timeout;
//     while it dribbles, the cluster's last slot goes to the worker that asks for it, and
//     another worker's heartbeats are answered.
func TestAWorkerSendingWhatItShouldNotChangesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("real-daemon test skipped in -short mode")
	}
	testlong.Skip(t, "internal/netlimit.TestBodyTimeout")
	db := migratedDatabase(t)
	f := &fleet{t: t, apiAddr: daemontest.FreeAddr(t)}
	f.cpConfig = daemontest.WriteFile(t, "cp.yaml", f.controlPlaneYAML(db, `  limits: {handshakeTimeoutSecs: 1, messageTimeoutSecs: 1}
clusters:
  - {name: pg-eu, engine: postgres, endpoint: "127.0.0.1:5432", database: eu_db, maxRunningQueries: 2,
     credentials: {user: postgres, password: eu-pw}}
clusterGroups:
  - {name: eu, members: [pg-eu]}
routingFallback: eu
`))
	f.startPatientControlPlane()
	rogue, other := f.register("rogue", `{"zone":"eu"}`), f.register("other", `{"zone":"eu"}`)
	daemontest.Eventually(t, 15*time.Second, "pg-eu's limits known", func() bool {
		code, _, _ := f.post(capacity.PathAcquire, other, capacity.MediaJSON, `{"cluster":"pg-eu","ttlMillis":1}`)
		return code == 200
	})
	leases := func() map[string]string { // id -> holder's worker
		code, _, body := daemontest.Call("GET", "http://"+f.apiAddr+controlplane.PathAdminLeases+"?cluster=pg-eu", adminToken, "", nil)
		var ls []capacity.Lease
		if code != 200 || json.Unmarshal([]byte(body), &ls) != nil {
			t.Fatalf("admin leases: %d %s", code, body)
		}
		out := map[string]string{}
		for _, l := range ls {
			out[l.ID] = capacity.HolderWorker(l.Holder)
		}
		return out
	}
	// Clear what the probe above may have been granted.
	for id, holder := range leases() {
		if holder == "other" {
			gen := id[strings.LastIndex(id, "#")+1:]
			f.post(capacity.PathReleaseBatch, other, capacity.MediaJSON, `{"leases":[{"id":"`+id+`","generation":`+gen+`}]}`)
		}
	}
	grant := func(token, body string) capacity.Lease {
		t.Helper()
		code, _, raw := f.post(capacity.PathAcquire, token, capacity.MediaJSON, body)
		var resp capacity.AcquireResponse
		if code != 200 || json.Unmarshal(raw, &resp) != nil || !resp.Granted {
			t.Fatalf("acquire %s: %d %s, want granted", body, code, raw)
		}
		return *resp.Lease
	}
	ref := func(l capacity.Lease) string { return fmt.Sprintf(`{"id":%q,"generation":%d}`, l.ID, l.Generation) }

	// Durations: int64's largest TTL (and wait) is the configured TTL, granted at once.
	start := time.Now()
	first := grant(rogue, `{"cluster":"pg-eu","ttlMillis":9223372036854775807,"waitMillis":9223372036854775807}`)
	kept := grant(rogue, `{"cluster":"pg-eu","ttlMillis":18446744073710}`) // times 10^6 past 2^64: 448384 ns
	for _, l := range []capacity.Lease{first, kept} {
		if l.TTLMillis < 1000 || time.Until(l.ExpiresAt) < time.Second {
			t.Errorf("a lease asked for a TTL past int64's milliseconds: TTL %d ms, expiring %v; want the configured TTL", l.TTLMillis, l.ExpiresAt)
		}
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("acquires asking to wait for ever took %v", time.Since(start))
	}
	// A released lease's id, replayed once its slot is another worker's.
	if code, _, raw := f.post(capacity.PathReleaseBatch, rogue, capacity.MediaJSON, `{"leases":[`+ref(first)+`]}`); code != 200 || !strings.Contains(string(raw), `"released":1`) {
		t.Fatalf("rogue's release: %d %s", code, raw)
	}
	victim := grant(other, `{"cluster":"pg-eu"}`)
	want := map[string]string{kept.ID: "rogue", victim.ID: "other"}
	same := func(what string) {
		t.Helper()
		got := leases()
		if len(got) != len(want) {
			t.Fatalf("after %s: leases %v, want %v", what, got, want)
		}
		for id, holder := range want {
			if got[id] != holder {
				t.Fatalf("after %s: leases %v, want %v", what, got, want)
			}
		}
	}
	same("the victim's grant")
	// A release is a worker's to retry (its answer may be lost): its own lease released again
	// frees nothing and says so; renewing it is refused, carrying it on an acquire grants nothing.
	if code, _, raw := f.post(capacity.PathReleaseBatch, rogue, capacity.MediaJSON, `{"leases":[`+ref(first)+`]}`); code != 200 || !strings.Contains(string(raw), `"released":0`) {
		t.Errorf("the released lease released again: %d %s, want 200 released 0", code, raw)
	}
	same("the released lease released again")
	if code, _, raw := f.post(capacity.PathAcquire, rogue, capacity.MediaJSON, `{"cluster":"pg-eu","release":[`+ref(first)+`]}`); code != 200 || strings.Contains(string(raw), `"granted":true`) {
		t.Errorf("the released lease carried on an acquire at the cap: %d %s, want denied", code, raw)
	}
	same("the released lease carried on an acquire")
	refused := []struct {
		what, path, body string
		code             int
	}{
		{"the released lease renewed", capacity.PathRenew, `{"lease":` + ref(first) + `,"ttlMillis":30000}`, 409},
		{"the victim's lease released", capacity.PathReleaseBatch, `{"leases":[` + ref(victim) + `]}`, 403},
		{"the victim's lease renewed", capacity.PathRenew, `{"lease":` + ref(victim) + `,"ttlMillis":30000}`, 403},
		{"the victim's lease carried on an acquire", capacity.PathAcquire, `{"cluster":"pg-eu","release":[` + ref(victim) + `]}`, 403},
		{"a forged lease released", capacity.PathReleaseBatch, `{"leases":[{"id":"pg-eu#987654","generation":987654}]}`, 403},
		{"a forged lease renewed", capacity.PathRenew, `{"lease":{"id":"pg-eu#987654","generation":987654},"ttlMillis":30000}`, 403},
		{"a lease of another id's generation", capacity.PathReleaseBatch, fmt.Sprintf(`{"leases":[{"id":%q,"generation":%d}]}`, victim.ID, victim.Generation+1), 400},
		{"a TTL as a string", capacity.PathAcquire, `{"cluster":"pg-eu","ttlMillis":"30000"}`, 400},
		{"a fractional TTL", capacity.PathAcquire, `{"cluster":"pg-eu","ttlMillis":1.5}`, 400},
		{"a cap past float64", capacity.PathAcquire, `{"cluster":"pg-eu","cap":1e400}`, 400},
		{"a negative wait", capacity.PathAcquire, `{"cluster":"pg-eu","waitMillis":-1}`, 400},
		{"a TTL past uint64", capacity.PathRenew, `{"lease":` + ref(kept) + `,"ttlMillis":18446744073709551616}`, 400},
		{"a negative generation", capacity.PathRenew, `{"lease":{"id":"pg-eu#1","generation":-1},"ttlMillis":30000}`, 400},
	}
	for _, r := range refused {
		code, eb, raw := f.post(r.path, rogue, capacity.MediaJSON, r.body)
		if code != r.code || eb.Error == "" {
			t.Errorf("%s: %d %s, want %d with an error", r.what, code, raw, r.code)
		}
		same(r.what)
	}
	// Acquires asking as the victim, or for more than the cap, at the cap: denied.
	for _, body := range []string{`{"cluster":"pg-eu","holder":"other"}`, `{"cluster":"pg-eu","cap":0}`, `{"cluster":"pg-eu","cap":1000000,"ttlMillis":0}`} {
		if code, _, raw := f.post(capacity.PathAcquire, rogue, capacity.MediaJSON, body); code == 200 && strings.Contains(string(raw), `"granted":true`) {
			t.Errorf("acquire %s at the cap: granted %s", body, raw)
		}
		same("acquire " + body)
	}
	if code, _, raw := f.post(capacity.PathRenew, other, capacity.MediaJSON, `{"lease":`+ref(victim)+`,"ttlMillis":30000}`); code != 200 {
		t.Fatalf("the victim renewing its lease after the attacks: %d %s", code, raw)
	}

	// Heartbeats: refused ones leave the record as the last kept beat made it.
	beat := func(token string, seq int, more string) (int, string) {
		code, eb, raw := f.post(workerapi.PathHeartbeat, token, workerapi.MediaHeartbeat,
			fmt.Sprintf(`{"seq":%d,"sentAt":%q,"health":{"state":"healthy"}%s}`, seq, time.Now().UTC().Format(time.RFC3339Nano), more))
		if eb.Error != "" {
			return code, string(raw)
		}
		return code, string(raw)
	}
	if code, raw := beat(rogue, 1, ""); code != 200 {
		t.Fatalf("rogue's first beat: %d %s", code, raw)
	}
	record := func() string {
		w := f.workers()["rogue"]
		b, _ := json.Marshal(struct {
			Seq   uint64
			State string
			Since time.Time
		}{w.Heartbeat.Seq, string(w.State), w.StateSince})
		return string(b)
	}
	before := record()
	for _, b := range []struct{ seq, more, field string }{
		{"2", `,"name":"other"`, "name"},
		{"2", `,"history":{"sent":-1}`, "history.sent"},
		{"2", `,"history":{"sent":"5"}`, "history.sent"},
		{"2", `,"history":{"sent":1e30}`, "history.sent"},
		{"2", `,"history":{"sent":18446744073709551616}`, "history.sent"},
		{"2", `,"history":{"sent":1.5}`, "history.sent"},
		{"18446744073709551616", ``, "seq"},
		{"0", ``, "seq"},
		{`"3"`, ``, "seq"},
		{"-3", ``, "seq"},
	} {
		code, eb, raw := f.post(workerapi.PathHeartbeat, rogue, workerapi.MediaHeartbeat,
			fmt.Sprintf(`{"seq":%s,"sentAt":%q,"health":{"state":"unhealthy"}%s}`, b.seq, time.Now().UTC().Format(time.RFC3339Nano), b.more))
		if code != 400 || !strings.Contains(eb.Field+" "+eb.Error, b.field) {
			t.Errorf("a heartbeat with seq %s%s: %d %s, want 400 naming %s", b.seq, b.more, code, raw, b.field)
		}
	}
	if after := record(); after != before {
		t.Errorf("rogue's record after refused heartbeats: %s, was %s", after, before)
	}
	if w := f.workers()["other"]; w.State != workerapi.StateHealthy && w.State != "" {
		t.Errorf("the victim's record after rogue's heartbeats naming it: %+v", w)
	}

	// Slow bodies. A connection sending nothing, or half a request head, is cut at the handshake
	// timeout (1 s); one whose body stops half-way, at the message timeout (1 s).
	cut := func(what, send string) {
		t.Helper()
		c, err := net.Dial("tcp", f.apiAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if send != "" {
			if _, err := io.WriteString(c, send); err != nil {
				t.Fatal(err)
			}
		}
		_ = c.SetReadDeadline(time.Now().Add(15 * time.Second)) // far past the bounds: a connection held that long was not cut
		_, err = io.ReadAll(c)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Errorf("%s: the connection was still open after 15 s", what)
		}
	}
	cut("a connection sending nothing", "")
	cut("half a request head", "POST "+capacity.PathAcquire+" HTTP/1.1\r\nHost: cp\r\nAuthorization: Bearer "+rogue+"\r\n")
	body := `{"cluster":"pg-eu","ttlMillis":30000}`
	cut("a body stopping half-way", fmt.Sprintf("POST %s HTTP/1.1\r\nHost: cp\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
		capacity.PathAcquire, rogue, capacity.MediaJSON, len(body), body[:10]))

	// While rogue dribbles an acquire (a byte every 300 ms), the slot rogue's release frees goes
	// to the victim, and the victim's heartbeats are answered.
	if code, _, raw := f.post(capacity.PathReleaseBatch, rogue, capacity.MediaJSON, `{"leases":[`+ref(kept)+`]}`); code != 200 {
		t.Fatalf("rogue's release: %d %s", code, raw)
	}
	c, err := net.Dial("tcp", f.apiAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: cp\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n",
		capacity.PathAcquire, rogue, capacity.MediaJSON, len(body))
	dribbled := make(chan struct{})
	go func() {
		defer close(dribbled)
		for i := 0; i < len(body); i++ {
			if _, err := c.Write([]byte{body[i]}); err != nil {
				return
			}
			time.Sleep(300 * time.Millisecond)
		}
	}()
	grant(other, `{"cluster":"pg-eu"}`)
	for seq := 1; seq <= 3; seq++ {
		if code, raw := beat(other, seq, ""); code != 200 {
			t.Errorf("the victim's heartbeat while rogue dribbles: %d %s", code, raw)
		}
	}
	<-dribbled
	got := leases()
	if len(got) != 2 || got[victim.ID] != "other" {
		t.Errorf("after rogue's dribbled acquire: leases %v, want the victim's two", got)
	}
}

// startPatientControlPlane starts the control plane of f.cpConfig with workers going stale only
// after a minute (a test that beats by hand), and waits for it to answer.
func (f *fleet) startPatientControlPlane() {
	f.cp = daemontest.StartWith(f.t, daemontest.Options{}, "controlplane", "serve", "--config", f.cpConfig, "--allow-short-timeouts",
		"--heartbeat-interval", "1s", "--stale-after", "60s", "--evict-grace", "60s")
	daemontest.Eventually(f.t, 15*time.Second, "control plane /health", func() bool {
		code, _, _ := daemontest.Call("GET", "http://"+f.apiAddr+"/health", "", "", nil)
		return code == 200
	})
}

// register registers a worker named name with labels (a JSON object, "" for none) and returns
// its session token.
func (f *fleet) register(name, labels string) string {
	f.t.Helper()
	if labels == "" {
		labels = "{}"
	}
	code, _, body := f.post(workerapi.PathRegister, workerSecret, workerapi.MediaWorkerRegister, fmt.Sprintf(`{"name":%q,"version":"1","labels":%s}`, name, labels))
	var resp workerapi.RegisterResponse
	if code != 200 || json.Unmarshal(body, &resp) != nil {
		f.t.Fatalf("register %s: %d %s", name, code, body)
	}
	return resp.Token
}
