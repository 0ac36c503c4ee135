package chaos

// The `config:` section on real daemons: the control plane keeps its configuration in its
// PostgreSQL database (its own file names no cluster or group), and every edit goes through the
// admin API as an operator's would: GET /admin/config for the ETag, then PUT /admin/config
// with If-Match. The scenario's cluster c is a PostgreSQL cluster on the local server (no query
// runs on it); its cap is what the timeline edits. Each worker keeps its last good snapshot in
// its own state directory, wiped before a restart unless the file says lastGood (the
// simulator's worker keeps none); with peers, each worker may copy the others' snapshots.
// configStatus reads each worker's /worker/status: the active revision (mapped back to the
// cap this run published under it), its source and staleness.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/workerapi"
	"github.com/queryflux/queryflux/scenarios"
)

// planConfig says what of a config section real processes cannot do.
func planConfig(sc *scenarios.Scenario) []string {
	c := sc.Config
	var out []string
	for _, s := range []struct {
		what string
		d    time.Duration
	}{{"pollTimeout", c.PollTimeout}, {"maxAge", c.MaxAge}, {"retryMax", c.RetryMax}} {
		if s.d%time.Second != 0 {
			out = append(out, fmt.Sprintf("config.%s %v is not whole seconds (the binary's setting is in seconds)", s.what, s.d))
		}
	}
	return out
}

// fleetConfig is the real side of a `config:` section.
type fleetConfig struct {
	r    *runner
	spec *scenarios.ConfigSpec
	// stripped: the control planes serve snapshots without credentials and every node has its
	// own for cluster c (a file with configBad: an edit adding a cluster no worker has
	// credentials for is what the control plane accepts and every worker refuses).
	stripped bool
	db       map[string]string // control plane -> its database URL

	mu      sync.Mutex
	caps    map[string]int // revision -> the cap published under it
	current int            // the cap last published
	setMu   sync.Mutex     // one edit at a time (an edit may wait out a hang)
	hangs   []*pgx.Conn    // transactions holding the config tables locked
}

func newFleetConfig(r *runner) *fleetConfig {
	return &fleetConfig{r: r, spec: r.sc.Config, caps: map[string]int{}, db: map[string]string{}, stripped: hasEvent(r.sc, "configBad")}
}

// badCluster is the cluster a configBad edit adds: no node has credentials for it.
const badCluster = "c-new"

// document is the shared configuration of cap c, as PUT /admin/config takes it; bad adds a
// cluster (and a group of it) no worker has credentials for.
func (f *fleetConfig) document(c int, bad bool) string {
	u, _ := url.Parse(pgtest.ServerURL())
	if f.spec.Zones {
		return zonesDocument(func(name string, cap int, zone string) string {
			selector := ""
			if zone != "" {
				selector = fmt.Sprintf(", workerSelector: {zone: %s}", zone)
			}
			return fmt.Sprintf("  - {name: %s, engine: postgres, endpoint: %q, database: postgres, credentials: {user: %q}, maxRunningQueries: %d%s}\n",
				name, u.Host, u.User.Username(), cap, selector)
		}, c)
	}
	cluster := func(name string) string {
		return fmt.Sprintf("  - {name: %s, engine: postgres, endpoint: %q, database: postgres, credentials: {user: %q}, maxRunningQueries: %d}\n",
			name, u.Host, u.User.Username(), c)
	}
	clusters, groups := cluster("c"), "  - {name: g, members: [c]}\n"
	if bad {
		clusters += cluster(badCluster)
		groups += fmt.Sprintf("  - {name: g-new, members: [%s]}\n", badCluster)
	}
	return "clusters:\n" + clusters + "clusterGroups:\n" + groups + "routingFallback: g\n"
}

// credentials is a node's own credentials for cluster c (with stripped snapshots), else "".
func (f *fleetConfig) credentials() string {
	if !f.stripped {
		return ""
	}
	u, _ := url.Parse(pgtest.ServerURL())
	return fmt.Sprintf("  clusterCredentials: {c: {user: %q}}\n", u.User.Username())
}

// controlPlaneConfig is a control plane's file: its configuration lives in its database.
func (f *fleetConfig) controlPlaneConfig(api, dbURL string) string {
	creds := "embedded"
	if f.stripped {
		creds = "stripped"
	}
	return fmt.Sprintf("queryflux:\n  role: controlPlane\n  adminApi: {listen: %q, token: %q}\n  workerApi: {enabled: true, secret: %q, credentials: %s}\n  persistence: {databaseUrl: %q}\n",
		api, adminToken, workerSecret, creds, dbURL) + f.credentials()
}

// workerConfig is a worker's file: its poll timeout, its state directory and its peers.
func (f *fleetConfig) workerConfig(name, cpURL string) string {
	s := fmt.Sprintf("queryflux:\n  role: worker\n  stateDir: %q\n", f.stateDir(name)) + f.credentials() +
		fmt.Sprintf("  controlPlane:\n    url: %q\n    secret: %q\n    pollTimeoutSecs: %d\n",
			cpURL, workerSecret, max(1, int(f.spec.PollTimeout/time.Second)))
	if f.spec.RetryMax > 0 {
		s += fmt.Sprintf("    retryMaxSecs: %d\n", int(f.spec.RetryMax/time.Second))
	}
	if f.spec.Peers {
		var peers []string
		for _, w := range workerNames(f.r.sc) {
			if w != name {
				peers = append(peers, fmt.Sprintf("%q", f.r.ops[w]))
			}
		}
		s += fmt.Sprintf("    peerBootstrap: {address: [%s], maxAgeSecs: %d}\n", strings.Join(peers, ", "), max(1, int(f.spec.MaxAge/time.Second)))
	}
	return s
}

func (f *fleetConfig) stateDir(worker string) string { return filepath.Join(f.r.dir, "state-"+worker) }

// restarting is called before a worker starts again: without lastGood it comes back with no
// kept snapshot, as the simulator's worker does.
func (f *fleetConfig) restarting(worker string) error {
	if f.spec.LastGood {
		return nil
	}
	return os.RemoveAll(f.stateDir(worker))
}

// set publishes cap c through cp's admin API: GET for the ETag, PUT with If-Match (no
// precondition for the first configuration, when nothing is served yet). bad publishes the
// current cap with a cluster no worker can use.
func (f *fleetConfig) set(cp string, c int, bad bool) error {
	f.setMu.Lock()
	defer f.setMu.Unlock()
	r := f.r
	if bad {
		f.mu.Lock()
		c = f.current
		f.mu.Unlock()
	}
	base := "http://" + r.api[cp] + controlplane.PathAdminConfig
	etag := ""
	var cur struct {
		Revision string `json:"revision"`
	}
	status, hdr, err := f.call(http.MethodGet, base, "", nil, &cur)
	switch {
	case err != nil:
		return err
	case status == http.StatusOK:
		etag = hdr.Get("ETag")
	case status != http.StatusServiceUnavailable: // 503: nothing published yet
		return fmt.Errorf("GET %s: %d", controlplane.PathAdminConfig, status)
	}
	var ans struct {
		Revision string `json:"revision"`
		Errors   []struct {
			Path, Message string
		} `json:"errors"`
		Error string `json:"error"`
	}
	status, _, err = f.call(http.MethodPut, base, etag, []byte(f.document(c, bad)), &ans)
	if err != nil {
		return err
	}
	if status != http.StatusOK || ans.Revision == "" {
		return fmt.Errorf("PUT %s (cap %d): %d %s %v", controlplane.PathAdminConfig, c, status, ans.Error, ans.Errors)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !bad {
		f.caps[ans.Revision], f.current = c, c
	}
	return nil
}

// hang makes cp's snapshot builds hang for d: a transaction locks the table every build reads
// first (an edit's PUT, which reads it too, waits as well), and SIGHUP makes cp build now,
// so a build is stuck in the store, as the simulator's configHang. After d the lock goes.
func (f *fleetConfig) hang(cp string, d time.Duration) error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, f.db[cp])
	if err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "BEGIN; LOCK TABLE config_clusters IN ACCESS EXCLUSIVE MODE"); err != nil {
		conn.Close(ctx)
		return err
	}
	f.mu.Lock()
	f.hangs = append(f.hangs, conn)
	f.mu.Unlock()
	f.r.procs[cp].signal(syscall.SIGHUP, false)
	f.r.after(d, func() { f.release(conn) })
	return nil
}

// release ends a hang (a closed connection rolls its transaction back).
func (f *fleetConfig) release(conn *pgx.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i := slices.Index(f.hangs, conn); i >= 0 {
		f.hangs = slices.Delete(f.hangs, i, i+1)
		conn.Close(context.Background())
	}
}

// releaseAll ends every hang (before the databases are dropped).
func (f *fleetConfig) releaseAll() {
	f.mu.Lock()
	hangs := slices.Clone(f.hangs)
	f.mu.Unlock()
	for _, c := range hangs {
		f.release(c)
	}
}

// editTimeout bounds one admin call: an edit may wait out a whole configHang.
const editTimeout = 2 * time.Minute

func (f *fleetConfig) call(method, url, ifMatch string, body []byte, into any) (int, http.Header, error) {
	ctx, cancel := context.WithTimeout(context.Background(), editTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	workerapi.SetBearer(req, adminToken)
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/yaml")
	}
	resp, err := f.r.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	_ = json.Unmarshal(b, into)
	return resp.StatusCode, resp.Header, nil
}

// booted reports whether worker runs the first configuration: its cap, or with zones (each
// worker's revision filtered for its labels) the revision the control plane serves it.
func (f *fleetConfig) booted(s *snapshot, worker string) bool {
	if !f.spec.Zones {
		return s.config[worker].cap == f.spec.Cap
	}
	info := s.registry[f.r.sc.ControlPlaneOf(worker)][worker]
	return s.config[worker].active && info.Current && info.Revision != ""
}

// capOf is the cap published under revision (false: a revision this run did not publish).
func (f *fleetConfig) capOf(revision string) (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.caps[revision]
	return c, ok
}

// workerConfigState is a worker's config as its /worker/status and /metrics show it.
type workerConfigState struct {
	active   bool
	cap      int // 0: a revision this run did not publish
	source   string
	stale    bool
	rejected bool // this incarnation refused a revision (queryflux_config_reload_failures_total)
}

func (f *fleetConfig) stateOf(st *workerStatus, metrics string) workerConfigState {
	c, _ := f.capOf(st.Revision.Active)
	return workerConfigState{active: st.Revision.Active != "", cap: c, source: st.Config.Source, stale: st.Config.Stale,
		rejected: metricValue(metrics, `queryflux_config_reload_failures_total{stage="worker_activate"}`) > 0}
}

// metricValue is the value of series (name and labels, as /metrics prints them); 0 if absent.
func metricValue(metrics, series string) float64 {
	for line := range strings.Lines(metrics) {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			var v float64
			if _, err := fmt.Sscan(rest, &v); err == nil {
				return v
			}
		}
	}
	return 0
}

// planConfigEvent maps the config section's events: configSet and configBad are edits through
// the admin API (configBad's adds a cluster no worker has credentials for: the control plane
// stores and serves it, every worker refuses it); configHang locks the store the control
// plane builds snapshots from. An edit runs beside the timeline: it may wait out a hang.
func planConfigEvent(sc *scenarios.Scenario, ev *scenarios.Event, st step) (step, string) {
	var a struct {
		Cap int           `yaml:"cap"`
		For time.Duration `yaml:"for"`
	}
	if err := ev.Params.Decode(&a); err != nil {
		return st, err.Error()
	}
	cp := controlPlanes(sc)
	if len(cp) != 1 {
		return st, fmt.Sprintf("%s with %d control planes: chaos edits through one", ev.Kind, len(cp))
	}
	if ev.Kind == "configHang" {
		st.do = func(r *runner) error { return r.cfg.hang(cp[0], r.scale(a.For)) }
		return st, ""
	}
	bad := ev.Kind == "configBad"
	st.do = func(r *runner) error {
		r.after(0, func() {
			if err := r.cfg.set(cp[0], a.Cap, bad); err != nil {
				r.errorf("%s: %v", st.what, err)
			}
		})
		return nil
	}
	return st, ""
}

func controlPlanes(sc *scenarios.Scenario) []string {
	var out []string
	for _, s := range sc.Nodes() {
		if s.Role == "controlplane" {
			out = append(out, s.Name)
		}
	}
	return out
}

// configStatusCheck mirrors the simulator's configStatus over /worker/status.
type configStatusParams struct {
	Worker           string `yaml:"worker"`
	Cap              *int   `yaml:"cap"`
	Source           string `yaml:"source"`
	Stale            *bool  `yaml:"stale"`
	Rejected         *bool  `yaml:"rejected"`
	Active           *bool  `yaml:"active"`
	scenarios.Window `yaml:",inline"`
}

func planConfigStatus(sc *scenarios.Scenario, c *scenarios.CheckSpec) (realCheck, string) {
	var p configStatusParams
	if err := c.Params.Decode(&p); err != nil {
		return nil, err.Error()
	}
	if p.Mode == "" {
		p.Mode = "sometime"
	}
	if p.To == 0 {
		p.To = sc.Duration
	}
	names, err := sc.Resolve(p.Worker)
	if err != nil {
		return nil, err.Error()
	}
	ch := newStateCheck("configStatus", names, "as wanted", p.Window)
	ch.probeFn = func(s *snapshot, name string) (string, bool) {
		st, ok := s.config[name]
		if !ok {
			return "", false
		}
		var got []string
		mismatch := false
		want := func(ok bool, desc string) {
			got = append(got, desc)
			mismatch = mismatch || !ok
		}
		if p.Active != nil {
			want(st.active == *p.Active, fmt.Sprintf("active=%v", st.active))
		}
		if p.Cap != nil {
			want(st.cap == *p.Cap, fmt.Sprintf("cap=%d", st.cap))
		}
		if p.Source != "" {
			want(st.source == p.Source, "source="+st.source)
		}
		if p.Stale != nil {
			want(st.stale == *p.Stale, fmt.Sprintf("stale=%v", st.stale))
		}
		if p.Rejected != nil {
			want(st.rejected == *p.Rejected, fmt.Sprintf("rejected=%v", st.rejected))
		}
		if !mismatch {
			return "as wanted", true
		}
		return strings.Join(got, ","), true
	}
	return ch, ""
}
