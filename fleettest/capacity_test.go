package fleettest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/workerapi"
)

// The engine fleet of the capacity tests: one PostgreSQL cluster, cap 4, leases of 3 s swept
// every second, and queries (pg_sleep) three times longer than a lease.
const (
	engineCap    = 4
	leaseTTLSecs = 3
	sleepSecs    = 9
)

// engineFleet is a control plane and workers in front of one PostgreSQL cluster.
type engineFleet struct {
	*fleet
	engineDB string // the cluster's database: its backends are the ones counted
	workers  map[string]string
	procs    map[string]*daemontest.Proc
	// frontends are the workers' other frontends (newEngineFleetServing): each one's
	// address by frontend name (as the worker's config names it), then by worker.
	frontends map[string]map[string]string
}

func newEngineFleet(t *testing.T) *engineFleet { return newEngineFleetServing(t) }

// newEngineFleetServing is newEngineFleet whose workers also serve the frontends named (as a
// worker's config names them: "mysql", ...) on ports of their own (ef.frontends).
func newEngineFleetServing(t *testing.T, frontends ...string) *engineFleet {
	engineURL, db := engineDatabases(t)
	coordination := fmt.Sprintf("coordination: {mode: controlPlane, leaseTtlSecs: %d, driftMarginSecs: 1, sweepEverySecs: 1}", leaseTTLSecs)
	f := startEngineControlPlane(t, engineURL, db, coordination, engineCap, 120)
	ef := &engineFleet{fleet: f, engineDB: strings.TrimPrefix(engineURL.Path, "/"), workers: map[string]string{},
		procs: map[string]*daemontest.Proc{}, frontends: map[string]map[string]string{}}
	for _, frontend := range frontends {
		ef.frontends[frontend] = map[string]string{}
	}
	for _, name := range []string{"w1", "w2", "w3"} {
		addrs, p := startWorkerOn(t, name, f.apiAddr, coordination, "", append([]string{"postgres"}, frontends...)...)
		ef.workers[name], ef.procs[name] = addrs["postgres"], p
		for _, frontend := range frontends {
			ef.frontends[frontend][name] = addrs[frontend]
		}
	}
	awaitPG(t, slices.Collect(maps.Values(ef.workers))...)
	return ef
}

// startEngineControlPlane starts a control plane on database db in front of the PostgreSQL
// cluster pg at engineURL (engineControlPlane's config); several on one db are its replicas.
func startEngineControlPlane(t *testing.T, engineURL *url.URL, db, coordination string, cap, waitSecs int) *fleet {
	f := &fleet{t: t, apiAddr: daemontest.FreeAddr(t)}
	f.cpConfig = engineControlPlane(t, f, engineURL, db, coordination, cap, waitSecs, "")
	f.startControlPlane()
	return f
}

// startPGWorker starts worker name of the control plane at cpAddr, with its coordination line
// (as the control plane's), more lines of its queryflux: section (indented by two, each ending
// in a newline) and its PostgreSQL frontend on a free port; it returns that port's address.
func startPGWorker(t *testing.T, name, cpAddr, coordination, more string) (string, *daemontest.Proc) {
	addrs, p := startWorkerOn(t, name, cpAddr, coordination, more, "postgres")
	return addrs["postgres"], p
}

// startWorkerOn is startPGWorker with frontends (each on a free port, by name: "postgres",
// "flightsql", ...); it returns their addresses by name.
func startWorkerOn(t *testing.T, name, cpAddr, coordination, more string, frontends ...string) (map[string]string, *daemontest.Proc) {
	addrs := daemontest.FreeAddrs(t, len(frontends)+1)
	byName := map[string]string{}
	var lines strings.Builder
	for i, fe := range frontends {
		byName[fe] = addrs[i]
		fmt.Fprintf(&lines, "    %s: {enabled: true, listen: %q}\n", fe, addrs[i])
	}
	cfg := daemontest.WriteFile(t, name+".yaml", fmt.Sprintf(`queryflux:
  role: worker
  controlPlane: {url: "http://%s", secret: %q}
  %s
%s  frontends:
%s`, cpAddr, workerSecret, coordination, more, lines.String()))
	p := daemontest.Start(t, name, "serve", "--config", cfg, "--name", name, "--ops-listen", addrs[len(frontends)],
		"--heartbeat-interval", heartbeat.String(), "--allow-short-timeouts")
	return byName, p
}

// awaitPG waits until a query runs through each PostgreSQL frontend of addrs.
func awaitPG(t *testing.T, addrs ...string) {
	ctx := context.Background()
	for _, addr := range addrs {
		daemontest.EventuallyNil(t, 30*time.Second, func() error {
			c, err := pgx.Connect(ctx, "postgres://queryflux@"+addr+"/pg?sslmode=disable&connect_timeout=5")
			if err != nil {
				return fmt.Errorf("%s: %w", addr, err)
			}
			defer c.Close(ctx)
			return c.QueryRow(ctx, "SELECT 1").Scan(new(int))
		})
	}
}

// engineControlPlane writes the config of a control plane on database db in front of the
// PostgreSQL cluster pg at engineURL (group main, up to 200 queued, waitSecs of capacity wait),
// plus the extra clusters' YAML list items.
func engineControlPlane(t *testing.T, f *fleet, engineURL *url.URL, db, coordination string, cap, waitSecs int, extra string) string {
	return daemontest.WriteFile(t, "cp.yaml", f.controlPlaneYAML(db, fmt.Sprintf(`  %s
clusters:
  - name: pg
    engine: postgres
    endpoint: %q
    database: %q
    credentials: {user: %q}
    maxRunningQueries: %d
%sclusterGroups:
  - {name: main, members: [pg], maxQueuedQueries: 200, capacityWaitTimeoutSecs: %d}
routingFallback: main
settings: {security: {trustLoopback: true}}
`, coordination, engineURL.Host, strings.TrimPrefix(engineURL.Path, "/"), engineURL.User.Username(), cap, extra, waitSecs)))
}

// leases lists the control plane's leases of the cluster, by holder.
func (ef *engineFleet) leases() map[string]int {
	code, _, body := daemontest.Call("GET", "http://"+ef.apiAddr+controlplane.PathAdminLeases+"?cluster=pg", adminToken, "", nil)
	var ls []capacity.Lease
	if code != 200 || json.Unmarshal([]byte(body), &ls) != nil {
		return nil
	}
	out := map[string]int{}
	for _, l := range ls {
		out[capacity.HolderWorker(l.Holder)]++
	}
	return out
}

// load runs n clients on worker name, each running sleep queries back to back until ctx ends.
func (ef *engineFleet) load(ctx context.Context, wg *sync.WaitGroup, name string, n int, ran *atomic.Int64) {
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				c, err := pgx.Connect(ctx, "postgres://queryflux@"+ef.workers[name]+"/pg?sslmode=disable&connect_timeout=5")
				if err != nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				for ctx.Err() == nil {
					if _, err := c.Exec(ctx, fmt.Sprintf("SELECT pg_sleep(%d)", sleepSecs)); err != nil {
						break
					}
					ran.Add(1)
				}
				c.Close(context.Background())
			}
		}()
	}
}

// sampler counts, every 50 ms, the backends of the cluster's database that are running a
// query: those tagged with a lease of the fleet, and every pg_sleep whatever its tag.
type sampler struct {
	maxTagged, maxSleeping, samples atomic.Int64
	tagged                          atomic.Int64 // the last sample
}

func (s *sampler) run(ctx context.Context, t *testing.T, db string) {
	conn, err := pgx.Connect(ctx, pgtest.ServerURL())
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close(context.Background())
	for ctx.Err() == nil {
		var tagged, sleeping int64
		err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE application_name LIKE 'qf-lease:%'),
				count(*) FILTER (WHERE query ILIKE '%pg_sleep%')
			FROM pg_stat_activity WHERE datname = $1 AND state = 'active' AND pid <> pg_backend_pid()`, db).Scan(&tagged, &sleeping)
		if err != nil {
			if ctx.Err() == nil {
				t.Error(err)
			}
			return
		}
		s.tagged.Store(tagged)
		s.samples.Add(1)
		for _, m := range []struct {
			max *atomic.Int64
			v   int64
		}{{&s.maxTagged, tagged}, {&s.maxSleeping, sleeping}} {
			if m.v > m.max.Load() {
				m.max.Store(m.v)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestEngineCapHoldsWhenWorkersDieOrFreeze: a real control plane, three real workers and a real
// PostgreSQL cluster with cap 4; queries run three times longer than a lease. w1 fills the cap
// and is killed with SIGKILL; w2 takes the freed slots and is frozen with SIGSTOP; w3 takes them
// after the control plane fenced w2's work on the engine. pg_stat_activity, sampled every 50 ms,
// never shows more than 4 queries running. A registered rogue worker then cannot renew or
// release another worker's lease (403), nor acquire past the cap or on an unknown cluster; nor
// can a registration under w3's live name touch the leases of w3's session.
func TestEngineCapHoldsWhenWorkersDieOrFreeze(t *testing.T) {
	ef := newEngineFleet(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var s sampler
	wg.Add(1)
	go func() { defer wg.Done(); s.run(ctx, t, ef.engineDB) }()
	defer func() {
		ef.procs["w2"].Signal(syscall.SIGCONT)
		cancel()
		wg.Wait()
	}()
	var ran [4]atomic.Int64
	wait := func(what string, cond func() bool) { daemontest.Eventually(t, 60*time.Second, what, cond) }

	ef.load(ctx, &wg, "w1", engineCap, &ran[1])
	wait("w1 runs 4 queries on the engine", func() bool { return ef.leases()["w1"] == engineCap && s.tagged.Load() == engineCap })
	ef.load(ctx, &wg, "w2", engineCap, &ran[2])
	time.Sleep(time.Second) // w2's clients queue for the full cap
	ef.procs["w1"].Kill(t)
	t.Logf("w1 killed with 4 queries running")
	wait("w2 holds the whole cap after w1's leases were reclaimed", func() bool { return ef.leases()["w2"] == engineCap && s.tagged.Load() == engineCap })
	ef.load(ctx, &wg, "w3", engineCap, &ran[3])
	time.Sleep(time.Second)
	ef.procs["w2"].Signal(syscall.SIGSTOP)
	t.Logf("w2 frozen with 4 queries running")
	wait("w3 holds the whole cap after w2's leases were fenced and reclaimed", func() bool {
		ls := ef.leases()
		return ls["w3"] == engineCap && ls["w2"] == 0 && s.tagged.Load() == engineCap
	})
	// Longer than w2's queries had left to run: had they not been stopped on the engine, they
	// would be running beside w3's now.
	time.Sleep(sleepSecs * time.Second / 2)

	t.Run("rogue", func(t *testing.T) { rogueWorker(t, ef) })

	t.Logf("engine samples %d: at most %d tagged queries running, %d pg_sleep backends (cap %d)",
		s.samples.Load(), s.maxTagged.Load(), s.maxSleeping.Load(), engineCap)
	if s.maxTagged.Load() > engineCap || s.maxSleeping.Load() > engineCap {
		t.Fatalf("the engine ran more than the cap: %d tagged, %d pg_sleep, cap %d", s.maxTagged.Load(), s.maxSleeping.Load(), engineCap)
	}
	if s.maxTagged.Load() < engineCap || s.samples.Load() < 100 {
		t.Fatalf("the test did not load the engine: max %d over %d samples", s.maxTagged.Load(), s.samples.Load())
	}
	if out := ef.cp.Output(); !strings.Contains(out, "fence=fenced") {
		t.Fatalf("the control plane never fenced a reclaimed lease on the engine:\n%s", daemontest.Tail(out, 4000))
	}
}

// rogueWorker registers with the bootstrap secret and attacks the leases w3 holds.
func rogueWorker(t *testing.T, ef *engineFleet) {
	code, eb, body := ef.post(workerapi.PathRegister, workerSecret, workerapi.MediaWorkerRegister, `{"name":"rogue","version":"1"}`)
	var reg workerapi.RegisterResponse
	if code != 200 || json.Unmarshal(body, &reg) != nil {
		t.Fatalf("rogue registration: %d %+v", code, eb)
	}
	code, _, raw := daemontest.Call("GET", "http://"+ef.apiAddr+controlplane.PathAdminLeases+"?cluster=pg", adminToken, "", nil)
	var ls []capacity.Lease
	if code != 200 || json.Unmarshal([]byte(raw), &ls) != nil || len(ls) == 0 {
		t.Fatalf("admin leases: %d %s", code, raw)
	}
	victim := ls[0]
	ref := fmt.Sprintf(`{"id":%q,"generation":%d}`, victim.ID, victim.Generation)
	if code, eb, _ := ef.post(capacity.PathRenew, reg.Token, capacity.MediaJSON, `{"lease":`+ref+`,"ttlMillis":86400000}`); code != 403 {
		t.Errorf("rogue renewing %s's lease: %d %+v, want 403", victim.Holder, code, eb)
	}
	if code, eb, _ := ef.post(capacity.PathReleaseBatch, reg.Token, capacity.MediaJSON, `{"leases":[`+ref+`]}`); code != 403 {
		t.Errorf("rogue releasing %s's lease: %d %+v, want 403", victim.Holder, code, eb)
	}
	code, _, body = ef.post(capacity.PathAcquire, reg.Token, capacity.MediaJSON, `{"cluster":"pg","cap":100000,"ttlMillis":86400000}`)
	var acq capacity.AcquireResponse
	if code != 200 || json.Unmarshal(body, &acq) != nil || acq.Granted {
		t.Errorf("rogue acquiring over the cap: %d %s, want a denial", code, body)
	}
	if code, eb, _ := ef.post(capacity.PathAcquire, reg.Token, capacity.MediaJSON, `{"cluster":"elsewhere","cap":1}`); code != 400 || !strings.Contains(eb.Error, "unknown cluster") {
		t.Errorf("rogue acquiring an unknown cluster: %d %+v, want 400", code, eb)
	}
	if now := ef.leases(); now[capacity.HolderWorker(victim.Holder)] != engineCap || now["rogue"] != 0 {
		t.Errorf("leases after the rogue's attempts: %v", now)
	}
	// Registering under the victim's live name starts a new session, which cannot touch the
	// old session's leases either: they are fenced on the engine before they are freed.
	name := capacity.HolderWorker(victim.Holder)
	code, eb, body = ef.post(workerapi.PathRegister, workerSecret, workerapi.MediaWorkerRegister, `{"name":"`+name+`","version":"1"}`)
	var impostor workerapi.RegisterResponse
	if code != 200 || json.Unmarshal(body, &impostor) != nil {
		t.Fatalf("registration under %s's name: %d %+v", name, code, eb)
	}
	// 403; or 401 once the real worker, its token revoked, has registered again in turn.
	if code, eb, _ := ef.post(capacity.PathRenew, impostor.Token, capacity.MediaJSON, `{"lease":`+ref+`,"ttlMillis":30000}`); code != 403 && code != 401 {
		t.Errorf("a new session of %s renewing the old session's lease: %d %+v, want 403", name, code, eb)
	}
	if code, eb, _ := ef.post(capacity.PathReleaseBatch, impostor.Token, capacity.MediaJSON, `{"leases":[`+ref+`]}`); code != 403 && code != 401 {
		t.Errorf("a new session of %s releasing the old session's lease: %d %+v, want 403", name, code, eb)
	}
	daemontest.Eventually(t, 60*time.Second, name+" registers again and holds the cap with its new session", func() bool {
		return ef.leases()[name] == engineCap
	})
	if out := ef.cp.Output(); !strings.Contains(out, "refused a request for another worker's lease") {
		t.Errorf("the refusals were not logged")
	}
	metrics := daemontest.Get(t, "http://"+ef.apiAddr+"/metrics", "")
	if !strings.Contains(metrics, `queryflux_capacity_refused_total{op="release",reason="not-holder"}`) {
		t.Errorf("the refusals were not counted:\n%s", daemontest.Tail(metrics, 2000))
	}
}
