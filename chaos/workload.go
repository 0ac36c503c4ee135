package chaos

// The workload of a scenario on real processes: the control planes share one migrated database
// (as replicas do in production) and grant leases on clusters whose engines are real PostgreSQL
// databases; each worker serves the PostgreSQL wire; arrivals are pgx clients connecting to the
// workers; a query is a call of qf_chaos, a PL/pgSQL function created in every engine database
// that sleeps for the duration drawn for that cluster (and fails when drawn to). What the
// engine runs is sampled from pg_stat_activity. A cluster with `engine: mysql` is a MariaDB
// database instead (engine_mysql.go).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/workerapi"
	"github.com/queryflux/queryflux/scenarios"
)

// engineSampleEvery is how often the engines' process lists are read: shorter than any query the lease
// scenarios run, so a peak lasting one query is seen.
const engineSampleEvery = 20 * time.Millisecond

// endGrace is how long queries running when the scenario ends may take to finish before
// they are cancelled.
const endGrace = 3 * time.Second

// fleetWorkload is the real side of a `workload:` section.
type fleetWorkload struct {
	r       *runner
	wl      *scenarios.Workload
	engines map[string]string // cluster -> its engine database
	pg      map[string]string // worker -> its PostgreSQL wire address
	my      map[string]string // worker -> its MySQL wire address (with MariaDB engines)
	mysqlGr map[string]bool   // groups whose members are MariaDB engines: their clients speak MySQL
	cpDB    *database         // the control planes' one database

	mu        sync.Mutex
	load      map[string]*scenarios.WorkerLoad // Submitted and QueueMs by the clients
	admits    map[string]*counter              // guard grants, from each worker's /metrics
	executing map[string]int
	caps      map[string]int      // what the control planes' files say (configSet and configEdit edit them)
	granted   map[string]int      // the cap leases are held to: a lowered cap counts once the reload has applied it
	members   map[string][]string // group -> members, as configEdit changed them
	routes    map[string]string   // an arrival's group (its user) -> the group its queries go to, as configEdit changed them
	limits    map[string]int      // what the engine is held to (a lowered cap once drained under it)
	peak      map[string]int
	peakLease map[string]int
	capLog    map[string][]capFrom     // cluster -> the cap leases are held to, from when
	grantAt   map[string]time.Duration // lease id -> when it was granted (scenario time)
	leaseLook time.Duration            // the last look at the lease table
	leaseViol []string
	engViol   []string
	engWatch  []func(t time.Duration, cluster string, n int)
	finished  map[string]int // queries that ended (any outcome but a refusal before the guard)
	base      map[string]int // guard grants when counting starts (time 0, or the end of the warmup)
	warm      bool           // base was taken at the end of the warmup
	hist      map[string]*histSeen
	crashes   map[string]int
	keys      map[int][][]drawn // arrival index -> its keys' draws
	landed    []landing         // the queries PostgreSQL engines answered, where each ran

	groupSeen      map[string]*groupCounters // worker -> its cache hits and finished queries by group
	groupSubmitted map[string]int            // counted queries sent, by group
	groupErrors    map[string]int            // counted queries whose clients got an error, by group
	clientErrors   []string                  // the first clientErrorsKept of them: when, where, what
	groupBase      [2]map[string]int         // cache hits and finished by group when counting starts
	clients        sync.WaitGroup
	queries        context.Context // the queries' context: cancelled a grace after the end
	stop           chan struct{}
}

// counter sums a per-process counter across restarts of the process.
type counter struct{ base, last int }

func (c *counter) see(v int) {
	if v < c.last {
		c.base += c.last
	}
	c.last = v
}

func (c *counter) total() int { return c.base + c.last }

func newFleetWorkload(r *runner) *fleetWorkload {
	f := &fleetWorkload{r: r, wl: r.sc.Workload, engines: map[string]string{}, pg: map[string]string{}, my: map[string]string{},
		load: map[string]*scenarios.WorkerLoad{}, admits: map[string]*counter{}, executing: map[string]int{},
		caps: map[string]int{}, granted: map[string]int{}, limits: map[string]int{}, peak: map[string]int{}, peakLease: map[string]int{},
		capLog: map[string][]capFrom{}, grantAt: map[string]time.Duration{}, finished: map[string]int{}, hist: map[string]*histSeen{}, crashes: map[string]int{},
		stop: make(chan struct{}), mysqlGr: mysqlGroups(r.sc.Workload),
		members: map[string][]string{}, routes: map[string]string{},
		groupSeen: map[string]*groupCounters{}, groupSubmitted: map[string]int{}, groupErrors: map[string]int{}}
	for _, c := range f.wl.Clusters {
		f.caps[c.Name], f.granted[c.Name], f.limits[c.Name] = c.Cap, c.Cap, c.Cap
		f.capLog[c.Name] = []capFrom{{cap: c.Cap}}
	}
	return f
}

// capFrom is the cap leases are held to from time at on.
type capFrom struct {
	at  time.Duration
	cap int
}

// grantCap sets the cap leases are held to from now on; f.mu is held.
func (f *fleetWorkload) grantCap(cluster string, c int) {
	f.granted[cluster] = c
	f.capLog[cluster] = append(f.capLog[cluster], capFrom{at: f.r.now(), cap: c})
}

// capWhen is the cap leases were held to at t.
func (f *fleetWorkload) capWhen(cluster string, t time.Duration) int {
	log := f.capLog[cluster]
	c := log[0].cap
	for _, e := range log {
		if e.at <= t {
			c = e.cap
		}
	}
	return c
}

// planWorkload says what of a workload section real processes cannot do.
func planWorkload(sc *scenarios.Scenario) []string {
	wl := sc.Workload
	var out []string
	whole := func(what string, d time.Duration) {
		if d%time.Second != 0 {
			out = append(out, fmt.Sprintf("workload: %s %v is not whole seconds (the binary's setting is in seconds)", what, d))
		}
	}
	if wl.LeaseTable == "memory" {
		out = append(out, "workload.leaseTable: memory: every control plane here runs on a PostgreSQL database (its lease table there, on the database's clock)")
	}
	engine := map[string]string{}
	for _, c := range wl.Clusters {
		engine[c.Name] = c.Engine
		switch c.Engine {
		case config.EnginePostgres, config.EngineMySQL:
		default:
			out = append(out, fmt.Sprintf("workload.clusters %s: engine %s: the engines here are PostgreSQL and MariaDB databases", c.Name, c.Engine))
		}
	}
	for _, g := range wl.Groups {
		for _, m := range g.Members[1:] {
			if engine[m] != engine[g.Members[0]] {
				out = append(out, fmt.Sprintf("workload.groups %s: members of engines %s and %s: its clients speak one wire protocol", g.Name, engine[g.Members[0]], engine[m]))
				break
			}
		}
		whole("group "+g.Name+" waitTimeout", g.WaitTimeout)
		if g.WaitTimeout == 0 {
			out = append(out, fmt.Sprintf("workload.groups %s: an unbounded wait has no setting in the binary (0 means 30 s)", g.Name))
		}
	}
	whole("sweepEvery", wl.SweepEvery)
	return out
}

// ---- configuration ----

func (f *fleetWorkload) coordinationYAML(controlPlane bool) string {
	c := f.wl.Coordination
	if c.Mode == "local" {
		return "coordination: {mode: local}"
	}
	s := fmt.Sprintf("coordination: {mode: controlPlane, onUnavailable: %s, queue: %s, onLeaseLost: %s", c.OnUnavailable, c.Queue, c.OnLeaseLost)
	if c.LeaseTTL > 0 {
		s += fmt.Sprintf(", leaseTtlSecs: %d", int(c.LeaseTTL/time.Second))
	}
	if c.DriftMargin > 0 {
		s += fmt.Sprintf(", driftMarginSecs: %d", int(c.DriftMargin/time.Second))
	}
	if controlPlane {
		s += fmt.Sprintf(", sweepEverySecs: %d", max(1, int(f.wl.SweepEvery/time.Second)))
		if len(c.Weights) > 0 {
			var ws []string
			for _, k := range slices.Sorted(maps.Keys(c.Weights)) {
				ws = append(ws, fmt.Sprintf("%s: %d", k, c.Weights[k]))
			}
			s += ", weights: {" + strings.Join(ws, ", ") + "}"
		}
	}
	return s + "}"
}

// sharedSections are the clusters, groups and routing every control plane serves: a query
// goes to the group named by its user, as the simulator routes an arrival's queries. The
// engine sessions' client_connection_check_interval is the binary's, scaled as every other
// duration is: a killed worker's queries end as soon in scenario time as the simulator says.
func (f *fleetWorkload) sharedSections() string {
	u, _ := url.Parse(pgtest.ServerURL())
	check := max(f.r.scale(pgengine.ClientCheckInterval), time.Millisecond)
	var b strings.Builder
	b.WriteString("clusters:\n")
	for _, c := range f.wl.Clusters {
		if c.Engine == config.EngineMySQL {
			line, err := mysqlClusterYAML(c.Name, f.engines[c.Name], f.caps[c.Name])
			if err != nil {
				f.r.errorf("%v", err)
			}
			b.WriteString(line)
			continue
		}
		fmt.Fprintf(&b, "  - {name: %s, engine: postgres, endpoint: %q, database: %s, credentials: {user: %q}, maxRunningQueries: %d, options: {client_connection_check_interval: %dms}}\n",
			c.Name, u.Host, f.engines[c.Name], u.User.Username(), f.caps[c.Name], check.Milliseconds())
	}
	b.WriteString("clusterGroups:\n")
	for _, g := range f.wl.Groups {
		members := f.membersOf(g)
		strategy := g.Strategy
		if strategy == "" {
			strategy = "roundRobin"
		}
		fmt.Fprintf(&b, "  - {name: %s, members: [%s], strategy: %s, maxQueuedQueries: %d, capacityWaitTimeoutSecs: %d%s}\n",
			g.Name, strings.Join(members, ", "), strategy, g.MaxQueued, int(g.WaitTimeout/time.Second), cacheYAML(g.Cache))
	}
	b.WriteString("routers:\n")
	for _, g := range f.wl.Groups {
		fmt.Fprintf(&b, "  - {type: compound, group: %s, conditions: [{type: user, user: %s}]}\n", f.routeOf(g.Name), g.Name)
	}
	fmt.Fprintf(&b, "routingFallback: %s\nsettings: {security: {trustLoopback: true}}\n", f.wl.Groups[0].Name)
	return b.String()
}

// membersOf is group g's members as the control planes' files say now.
func (f *fleetWorkload) membersOf(g scenarios.WorkloadGroup) []string {
	if m, ok := f.members[g.Name]; ok {
		return m
	}
	return g.Members
}

// routeOf is the group the files route user's queries to now (an arrival's group is its user).
func (f *fleetWorkload) routeOf(user string) string {
	if t, ok := f.routes[user]; ok {
		return t
	}
	return user
}

// routing is, for each user, the clusters the files let its queries run on now: the members of
// the group its router names.
func (f *fleetWorkload) routing() map[string][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string][]string{}
	for _, user := range f.wl.Groups {
		for _, g := range f.wl.Groups {
			if g.Name == f.routeOf(user.Name) {
				out[user.Name] = f.membersOf(g)
			}
		}
	}
	return out
}

func (f *fleetWorkload) controlPlaneConfig(api, dbURL string) string {
	return fmt.Sprintf("queryflux:\n  role: controlPlane\n  adminApi: {listen: %q, token: %q}\n  workerApi: {enabled: true, secret: %q}\n  persistence: {databaseUrl: %q}\n  %s\n%s",
		api, adminToken, workerSecret, dbURL, f.coordinationYAML(true), f.sharedSections())
}

func (f *fleetWorkload) workerConfig(cpURL, pgAddr, myAddr string) string {
	s := fmt.Sprintf("queryflux:\n  role: worker\n  controlPlane: {url: %q, secret: %q}\n  %s\n  frontends:\n    postgres: {enabled: true, listen: %q}\n",
		cpURL, workerSecret, f.coordinationYAML(false), pgAddr)
	if myAddr != "" {
		s += fmt.Sprintf("    mysql: {enabled: true, listen: %q}\n", myAddr)
	}
	if h := f.wl.History; h != nil {
		s += "  " + h.ConfigYAML() + "\n"
	}
	return s
}

// mysqlGroups are the groups whose members are MariaDB engines.
func mysqlGroups(wl *scenarios.Workload) map[string]bool {
	mysqlEngine := map[string]bool{}
	for _, c := range wl.Clusters {
		mysqlEngine[c.Name] = c.Engine == config.EngineMySQL
	}
	out := map[string]bool{}
	for _, g := range wl.Groups {
		out[g.Name] = len(g.Members) > 0 && mysqlEngine[g.Members[0]]
	}
	return out
}

// usesMySQL reports whether any cluster is a MariaDB engine (the workers then serve MySQL too).
func (f *fleetWorkload) usesMySQL() bool {
	for _, my := range f.mysqlGr {
		if my {
			return true
		}
	}
	return false
}

// createEngines makes one engine database per cluster, with the query function on PostgreSQL.
func (f *fleetWorkload) createEngines(ctx context.Context) error {
	for i, c := range f.wl.Clusters {
		if c.Engine == config.EngineMySQL {
			db, err := newMySQLDatabase(ctx)
			if err != nil {
				return err
			}
			f.r.dbs = append(f.r.dbs, db)
			f.engines[c.Name] = db.name
			continue
		}
		db, err := newDatabase(ctx, false)
		if err != nil {
			return err
		}
		f.r.dbs = append(f.r.dbs, db)
		f.engines[c.Name] = db.name
		conn, err := pgx.Connect(ctx, db.url)
		if err != nil {
			return fmt.Errorf("chaos: engine database of %s: %w", c.Name, err)
		}
		// Index i+1 picks this cluster's drawn duration and outcome out of every cluster's, and
		// the answer names the cluster that ran the query (where the worker's routing sent it).
		_, err = conn.Exec(ctx, fmt.Sprintf(`CREATE FUNCTION qf_chaos(d float8[], fail bool[]) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_sleep(d[%d]);
	IF fail[%d] THEN RAISE EXCEPTION 'drawn engine failure'; END IF;
	RETURN %d;
END $$`, i+1, i+1, i+1))
		conn.Close(context.Background())
		if err != nil {
			return fmt.Errorf("chaos: engine function of %s: %w", c.Name, err)
		}
	}
	return nil
}

// ---- arrivals ----

// start runs every arrival's clients until the scenario ends.
func (f *fleetWorkload) start(ctx context.Context) {
	f.keys = map[int][][]drawn{}
	for i, a := range f.wl.Arrivals {
		if a.Keys > 0 {
			f.keys[i] = f.keyDraws(i, a)
		}
	}
	for i, a := range f.wl.Arrivals {
		members, _ := f.r.sc.Resolve(a.Workers)
		weights := scenarios.WorkerWeights(len(members), a.Skew)
		for j, name := range members {
			rng := &lockedRand{r: rand.New(rand.NewPCG(f.r.opts.Seed, uint64(i)<<32|uint64(j)))}
			gen := &arrivals{f: f, index: i, a: a, worker: name, rate: a.Rate * weights[j], rng: rng}
			for range a.Clients {
				f.clients.Add(1)
				go func() { defer f.clients.Done(); gen.closedLoop(ctx) }()
			}
			f.clients.Add(1)
			go func() { defer f.clients.Done(); gen.poisson(ctx) }()
			if a.Burst != nil {
				f.clients.Add(1)
				go func() { defer f.clients.Done(); gen.bursts(ctx) }()
			}
		}
	}
}

type arrivals struct {
	f      *fleetWorkload
	index  int // the arrival's index in the file (its keys)
	a      scenarios.Arrival
	worker string
	rate   float64
	rng    *lockedRand
}

// lockedRand is an env.Rand for the clients (an arrival's bursts and Poisson stream share one).
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (l *lockedRand) Float64() float64 { l.mu.Lock(); defer l.mu.Unlock(); return l.r.Float64() }
func (l *lockedRand) Uint64() uint64   { l.mu.Lock(); defer l.mu.Unlock(); return l.r.Uint64() }
func (l *lockedRand) Int64N(n int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Int64N(n)
}
func (l *lockedRand) Read(p []byte) {
	for i := range p {
		p[i] = byte(l.Uint64())
	}
}

// waitActive sleeps until the arrival is active (inside [from, to), in an on phase).
func (g *arrivals) waitActive(ctx context.Context) bool {
	r := g.f.r
	for {
		now := r.now()
		switch {
		case now >= g.a.To:
			return false
		case now < g.a.From:
			if !r.sleepUntil(ctx, g.a.From) {
				return false
			}
			continue
		}
		if o := g.a.OnOff; o != nil && o.Off > 0 {
			phase := (now - g.a.From) % (o.On + o.Off)
			if phase >= o.On {
				if !r.sleepUntil(ctx, now+o.On+o.Off-phase) {
					return false
				}
				continue
			}
		}
		return true
	}
}

func (g *arrivals) poisson(ctx context.Context) {
	if g.rate <= 0 {
		return
	}
	r := g.f.r
	for g.waitActive(ctx) {
		gap := time.Duration(-math.Log(1-g.rng.Float64()) / g.rate * float64(time.Second))
		if !r.sleepUntil(ctx, r.now()+gap) {
			return
		}
		if r.now() < g.a.To {
			g.f.submit(ctx, g.worker, g.a.Group, g.next())
		}
	}
}

// closedLoop is one closed-loop client: its next query as soon as the last one ended (a
// failed one at least scenarios.ClientRefusedPause after it started, as in the simulator).
func (g *arrivals) closedLoop(ctx context.Context) {
	r := g.f.r
	for ctx.Err() == nil && g.waitActive(ctx) {
		sent := r.now()
		if g.f.submitWait(g.worker, g.a.Group, g.next()) != outSucceeded &&
			!r.sleepUntil(ctx, sent+scenarios.ClientRefusedPause) {
			return
		}
	}
}

func (g *arrivals) bursts(ctx context.Context) {
	r := g.f.r
	for g.waitActive(ctx) {
		for range g.a.Burst.Size {
			g.f.submit(ctx, g.worker, g.a.Group, g.next())
		}
		if !r.sleepUntil(ctx, r.now()+g.a.Burst.Every) {
			return
		}
	}
}

// next is the arrival's next query: one of its keys, or a fresh draw.
func (g *arrivals) next() pick {
	if g.a.Keys <= 0 {
		return pick{draws: g.draw()}
	}
	k := g.rng.Int64N(int64(g.a.Keys))
	return pick{draws: g.f.keys[g.index][k], alias: fmt.Sprintf(" AS q%d", k)}
}

// pick is one query: its durations and outcomes, and for a key the alias that makes its
// statement text that key's own.
type pick struct {
	draws []drawn
	alias string
}

// draw is one query's duration and outcome on every cluster (the engine it lands on picks its own).
func (g *arrivals) draw() []drawn {
	out := make([]drawn, len(g.f.wl.Clusters))
	for i, c := range g.f.wl.Clusters {
		dist, _ := c.Duration.Distribution() // validated when the file loaded
		out[i] = drawn{d: g.f.r.scale(dist.Sample(g.rng)), fail: g.rng.Float64() < c.FailureRate}
	}
	return out
}

type drawn struct {
	d    time.Duration
	fail bool
}

// submit runs one query on worker through its PostgreSQL wire, as the arrival's group's user.
func (f *fleetWorkload) submit(ctx context.Context, worker, group string, q pick) {
	counted := f.count(worker, group)
	f.clients.Add(1)
	go func() {
		defer f.clients.Done()
		f.runCounted(worker, group, q, counted)
	}()
}

// submitWait runs one query on worker as submit does, returning when it ended.
func (f *fleetWorkload) submitWait(worker, group string, q pick) string {
	return f.runCounted(worker, group, q, f.count(worker, group))
}

// count counts a query about to be sent to worker, and says whether its end counts: after
// the warmup, and only while the worker runs. The simulator's arrivals run inside the worker,
// so a killed worker receives none, and the queries it was running end unseen with it.
func (f *fleetWorkload) count(worker, group string) bool {
	if f.r.now() < f.wl.Warmup || !f.r.procs[worker].running() {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loadOf(worker).Submitted++
	f.groupSubmitted[group]++
	return true
}

func (f *fleetWorkload) runCounted(worker, group string, q pick, counted bool) string {
	sent := time.Now()
	crashes := f.crashCount(worker)
	outcome, ran, err := f.run(f.queries, worker, group, q)
	f.finish(worker, group, counted && f.crashCount(worker) == crashes, outcome, time.Since(sent), ran, err)
	return outcome
}

func (f *fleetWorkload) crashCount(worker string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.crashes[worker]
}

// Outcomes of one query as its client sees them.
const (
	outSucceeded = "succeeded"
	outFailed    = "failed"     // admitted, then the engine or the lease failed it
	outTimedOut  = "timed out"  // no slot within the group's wait
	outQueueFull = "queue full" // refused: the queue was full
	outRefused   = "refused"    // no connection, or refused before it could wait
	outCancelled = "cancelled"  // the run ended while it waited or ran
	outLost      = "lost"       // admitted, then failed after a run time the client cannot know (connection broken)
	outLeaseLost = "lease lost" // admitted, then ended because its capacity lease was lost (counted as lost too)
)

// run sends the query; ran is how long the engine was asked to run it (to subtract from the
// client's time for the queue wait).
func (f *fleetWorkload) run(ctx context.Context, worker, group string, q pick) (string, time.Duration, error) {
	draws := q.draws
	if f.mysqlGr[group] {
		return f.runMySQL(ctx, worker, group, f.mysqlStatement(draws)+q.alias, draws)
	}
	ds, fails := make([]string, len(draws)), make([]string, len(draws))
	for i, d := range draws {
		ds[i], fails[i] = fmt.Sprintf("%.3f", d.d.Seconds()), fmt.Sprint(d.fail)
	}
	sql := fmt.Sprintf("SELECT qf_chaos(ARRAY[%s]::float8[], ARRAY[%s])%s", strings.Join(ds, ","), strings.Join(fails, ","), q.alias)
	connURL := fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable&connect_timeout=5", group, f.pg[worker], f.clientDatabase())
	conn, err := pgx.Connect(ctx, connURL)
	if err != nil {
		return outRefused, 0, err
	}
	defer conn.Close(context.Background())
	sent := f.r.now()
	var cluster int
	err = conn.QueryRow(ctx, sql, pgx.QueryExecModeSimpleProtocol).Scan(&cluster)
	var pe *pgconn.PgError
	switch {
	case err == nil:
		f.ranOn(landing{worker: worker, user: group, cluster: f.wl.Clusters[cluster-1].Name, from: sent, to: f.r.now()})
		return outSucceeded, maxDraw(draws), err
	case errors.As(err, &pe) && leaseLost(pe.Code == query.CodeLeaseLost, pe.Message):
		return outLeaseLost, 0, err
	case errors.As(err, &pe) && pe.Code == query.CodeCapacityTimeout:
		return outTimedOut, 0, err
	case errors.As(err, &pe) && pe.Code == query.CodeQueueFull:
		return outQueueFull, 0, err
	case errors.As(err, &pe) && strings.Contains(pe.Message, "drawn engine failure"):
		return outFailed, maxDraw(draws), err
	case errors.As(err, &pe):
		return outFailed, 0, err
	case ctx.Err() != nil:
		return outCancelled, 0, err
	}
	return outLost, 0, err // the connection broke while the query ran
}

// clientDatabase is the database the arrivals' PostgreSQL clients name: an engine database,
// which the workers accept and no group is named after, so the routers decide where a query
// goes, as they do for the simulator's arrivals (a database naming a group would decide before
// them, and a configEdit of routes would change nothing).
func (f *fleetWorkload) clientDatabase() string {
	for _, c := range f.wl.Clusters {
		if c.Engine != config.EngineMySQL {
			return f.engines[c.Name]
		}
	}
	return ""
}

// landing is one query an engine answered: the worker and user (arrival group) it was sent
// as, the cluster whose engine ran it, and when it was sent and answered (scenario time).
type landing struct {
	worker, user, cluster string
	from, to              time.Duration
}

func (f *fleetWorkload) ranOn(l landing) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.landed = append(f.landed, l)
}

func (f *fleetWorkload) landings() []landing {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.landed)
}

// leaseLost tells, of an error with the lost lease's code, an admitted query whose lease was
// lost: on MySQL the code (1213) is also an engine's deadlock, which the message tells apart.
func leaseLost(leaseCode bool, message string) bool {
	return leaseCode && strings.Contains(message, "capacity lease") && strings.Contains(message, "was lost")
}

// maxDraw bounds what the engine ran: one cluster's draw (with one cluster, exactly it).
func maxDraw(ds []drawn) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d.d)
	}
	return m
}

// leaseLost is the number of counted queries that ended because their capacity lease was lost.
func (f *fleetWorkload) leaseLost() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, l := range f.load { //determinism:ok a sum is the same in any order
		n += l.LeaseLost
	}
	return n
}

func (f *fleetWorkload) loadOf(worker string) *scenarios.WorkerLoad {
	l := f.load[worker]
	if l == nil {
		l = &scenarios.WorkerLoad{}
		f.load[worker] = l
	}
	return l
}

// clientErrorsKept bounds the client errors a report names: enough to see what failed.
const clientErrorsKept = 5

func (f *fleetWorkload) finish(worker, group string, counted bool, outcome string, took, ran time.Duration, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if outcome != outRefused {
		f.finished[worker]++
	}
	if !counted {
		return
	}
	if outcome == outRefused {
		// No connection: the query never reached the worker (starting, or just killed), as
		// no simulated arrival reaches a worker that is not serving.
		f.loadOf(worker).Submitted--
		f.groupSubmitted[group]--
		return
	}
	if outcome != outSucceeded && outcome != outCancelled {
		f.groupErrors[group]++
		if len(f.clientErrors) < clientErrorsKept {
			f.clientErrors = append(f.clientErrors, fmt.Sprintf("at %.1fs, %s's client of %s (%s after %v): %v",
				f.r.now().Seconds(), group, worker, outcome, took.Round(time.Millisecond), err))
		}
	}
	l := f.loadOf(worker)
	if outcome == outLeaseLost {
		l.LeaseLost++
		outcome = outLost
	}
	switch outcome {
	case outRefused:
		return
	case outQueueFull:
		l.QueueFull++
		return
	case outTimedOut:
		l.TimedOut++
	case outCancelled:
		return
	}
	if outcome == outLost {
		// Its wait is not took, and the client cannot tell its run time: the simulator reads
		// the true wait off the proxy's record; here the query gives no queue sample.
		return
	}
	queue := max(took-ran, 0)
	l.QueueMs = append(l.QueueMs, int64(float64(queue.Milliseconds())/f.r.opts.TimeScale))
}

// ---- the engine's view ----

// sampleEngines reads, every engineSampleEvery, how many workload statements each engine
// database runs (pg_stat_activity, information_schema.processlist): the queries of crashed and
// frozen workers included, as long as the engine runs them.
func (f *fleetWorkload) sampleEngines(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, pgtest.ServerURL())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var pgDBs, myClusters []string
	byDB := map[string]string{}
	for _, c := range f.wl.Clusters {
		if c.Engine == config.EngineMySQL {
			myClusters = append(myClusters, c.Name)
			continue
		}
		pgDBs = append(pgDBs, f.engines[c.Name])
		byDB[f.engines[c.Name]] = c.Name
	}
	var my *mysqlSampler
	if len(myClusters) > 0 {
		if my, err = newMySQLSampler(f.engines, myClusters); err != nil {
			return err
		}
		defer my.close()
	}
	tick := time.NewTicker(engineSampleEvery)
	defer tick.Stop()
	for {
		select {
		case <-f.stop:
			return nil
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		counts := map[string]int{}
		err := samplePostgres(ctx, conn, pgDBs, byDB, counts)
		if err == nil && my != nil {
			err = my.sample(ctx, counts)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		t := f.r.now()
		if t > f.r.sc.Duration {
			continue
		}
		for _, c := range f.wl.Clusters {
			f.engineChanged(t, c.Name, counts[c.Name])
		}
	}
}

func samplePostgres(ctx context.Context, conn *pgx.Conn, dbs []string, byDB map[string]string, counts map[string]int) error {
	if len(dbs) == 0 {
		return nil
	}
	rows, err := conn.Query(ctx, `SELECT datname, count(*) FROM pg_stat_activity
		WHERE datname = ANY($1) AND state = 'active' AND query LIKE 'SELECT qf_chaos(%' GROUP BY datname`, dbs)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var db string
		var n int
		if err := rows.Scan(&db, &n); err != nil {
			return err
		}
		counts[byDB[db]] = n
	}
	return rows.Err()
}

// engineChanged applies the simulator's engine oracle to one sample.
func (f *fleetWorkload) engineChanged(t time.Duration, cluster string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.executing[cluster] = n
	f.peak[cluster] = max(f.peak[cluster], n)
	for _, w := range f.engWatch {
		w(t, cluster, n)
	}
	if n <= f.granted[cluster] {
		f.limits[cluster] = f.granted[cluster]
	}
	if limit := f.limits[cluster]; n > limit && len(f.engViol) < 5 {
		f.engViol = append(f.engViol, fmt.Sprintf("at %v: %d queries executing on cluster %s, cap %d", t.Round(time.Millisecond), n, cluster, limit))
	}
}

// leasesSeen applies the control plane's lease oracle to one look at the lease table: a lease
// is judged at its grant (the control plane's clock: its expiry less its TTL, within the looks
// that did not and did see it), against the cap of that moment and the leases of this look
// granted no later, which the control plane held then. Judged at the look instead, a lease
// granted under a cap that was lowered before the look would count against the lower one.
func (f *fleetWorkload) leasesSeen(t time.Duration, leases map[string][]capacity.Lease) {
	f.mu.Lock()
	defer f.mu.Unlock()
	prev := f.leaseLook
	f.leaseLook = t
	for cluster, ls := range leases {
		f.peakLease[cluster] = max(f.peakLease[cluster], len(ls))
		var fresh []capacity.Lease
		for _, l := range ls {
			if _, seen := f.grantAt[l.ID]; !seen {
				granted := f.r.sinceStart(l.ExpiresAt.Add(-time.Duration(l.TTLMillis) * time.Millisecond))
				f.grantAt[l.ID] = min(max(granted, prev), t)
				fresh = append(fresh, l)
			}
		}
		for _, l := range fresh {
			g := f.grantAt[l.ID]
			held := 0
			for _, o := range ls {
				if f.grantAt[o.ID] <= g {
					held++
				}
			}
			if limit := f.capWhen(cluster, g); held > limit && len(f.leaseViol) < 5 {
				f.leaseViol = append(f.leaseViol, fmt.Sprintf("at %v: lease %s to %s granted on cluster %s while %d were held, cap %d (seen at %v)",
					g.Round(time.Millisecond), l.ID, l.Holder, cluster, held, limit, t.Round(time.Millisecond)))
			}
		}
	}
}

// admitted reads each worker's guard grants off its /metrics (queue waits that ended with a
// cluster: the core observes one per admission).
func (f *fleetWorkload) admitted(worker string, metrics string) {
	n := 0
	for line := range strings.Lines(metrics) {
		if !strings.HasPrefix(line, "queryflux_queue_duration_seconds_count{") || strings.Contains(line, `cluster=""`) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
			n += int(v)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.groupSeen[worker]
	if g == nil {
		g = &groupCounters{hits: map[string]*counter{}, finished: map[string]*counter{}}
		f.groupSeen[worker] = g
	}
	g.see(metrics)
	c := f.admits[worker]
	if c == nil {
		c = &counter{}
		f.admits[worker] = c
	}
	c.see(n)
}

// stats are the run's numbers in the simulator's terms (its Summary computes the same figures).
func (f *fleetWorkload) stats(base map[string]int) *scenarios.WorkloadStats {
	groups := f.groupLoads()
	f.mu.Lock()
	defer f.mu.Unlock()
	st := &scenarios.WorkloadStats{Workers: map[string]*scenarios.WorkerLoad{}, Groups: groups, CPRequests: map[string]int{},
		MaxExecuting: f.peak, MaxLeases: f.peakLease, LeaseViolations: len(f.leaseViol), EngineViolations: len(f.engViol)}
	for name, l := range f.load {
		cp := *l
		if c := f.admits[name]; c != nil {
			cp.Admitted = c.total() - base[name]
		}
		st.Workers[name] = &cp
	}
	return st
}

func (f *fleetWorkload) admittedTotals() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for name, c := range f.admits {
		out[name] = c.total()
	}
	return out
}

// serving reports whether every worker answers a query through its PostgreSQL wire (its
// config arrived, its frontend listens, a lease can be had). That query counts as finished.
func (f *fleetWorkload) serving(ctx context.Context) bool {
	for _, name := range slices.Sorted(maps.Keys(f.pg)) {
		if f.finished[name] > 0 {
			continue
		}
		if !f.answers(ctx, name) {
			return false
		}
		f.finished[name]++
	}
	return true
}

// answers reports whether worker name answers one query within servingProbeTimeout: a probe
// that hangs (once seen: admitted, never answered) is asked again rather than waited on forever.
func (f *fleetWorkload) answers(ctx context.Context, name string) bool {
	ctx, cancel := context.WithTimeout(ctx, servingProbeTimeout)
	defer cancel()
	g := f.wl.Groups[0].Name
	if f.mysqlGr[g] {
		return probeMySQL(ctx, f.my[name], g)
	}
	c, err := pgx.Connect(ctx, fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", g, f.pg[name], g))
	if err != nil {
		return false
	}
	defer c.Close(context.Background())
	return c.QueryRow(ctx, "SELECT 1").Scan(new(int)) == nil
}

const servingProbeTimeout = 10 * time.Second

// histSeen is a worker's history uplink counters as last read, summed across its restarts.
type histSeen struct {
	dropped counter
	pending int
}

// historyTotals is what the control planes stored and the workers dropped, per worker.
type historyTotals struct {
	stored, dropped, pending map[string]int
	err                      error
}

// look adds the workload's view to a snapshot: the lease table (from the first control plane
// that answers), each worker's guard grants and history counters.
func (f *fleetWorkload) look(s *snapshot) {
	r := f.r
	s.routing = f.routing()
	for _, cp := range slices.Sorted(maps.Keys(r.api)) {
		if !s.cpUp[cp] {
			continue
		}
		leases := map[string][]capacity.Lease{}
		ok := true
		for _, c := range f.wl.Clusters {
			var ls []capacity.Lease
			if err := r.get("http://"+r.api[cp]+controlplane.PathAdminLeases+"?cluster="+c.Name, adminToken, 500*time.Millisecond, &ls); err != nil {
				ok = false
				break
			}
			leases[c.Name] = ls
		}
		if ok {
			s.leases = leases
			f.leasesSeen(s.t, leases)
			break
		}
	}
	var wg sync.WaitGroup
	for w, addr := range r.ops {
		wg.Go(func() {
			if text, err := r.getText("http://"+addr+"/metrics", 500*time.Millisecond); err == nil {
				f.admitted(w, text)
			}
			if f.wl.History == nil {
				return
			}
			var st struct {
				History workerapi.HistoryCounters `json:"history"`
			}
			if r.get("http://"+addr+workerapi.PathWorkerStatus, "", 500*time.Millisecond, &st) == nil {
				f.mu.Lock()
				h := f.hist[w]
				if h == nil {
					h = &histSeen{}
					f.hist[w] = h
				}
				h.dropped.see(int(st.History.Dropped))
				h.pending = int(st.History.Pending)
				f.mu.Unlock()
			}
		})
	}
	wg.Wait()
	s.admitted = f.admittedTotals()
	hits, finished := f.groupTotals()
	f.mu.Lock()
	if f.groupBase[0] == nil || (!f.warm && f.wl.Warmup > 0 && s.t >= f.wl.Warmup) {
		f.groupBase = [2]map[string]int{hits, finished}
	}
	if !f.warm && f.wl.Warmup > 0 && s.t >= f.wl.Warmup {
		f.base, f.warm = s.admitted, true
	}
	f.mu.Unlock()
}

// storeTimes reads the control planes' queryflux_capacity_store_seconds (each call of the lease
// table in PostgreSQL, from the control plane's side) and says the mean per operation over the
// run: the service time a simulated control plane takes for it (workload.controlPlane).
func (f *fleetWorkload) storeTimes() string {
	sum, count := map[string]float64{}, map[string]float64{}
	for _, cp := range slices.Sorted(maps.Keys(f.r.api)) {
		text, err := f.r.getText("http://"+f.r.api[cp]+"/metrics", time.Second)
		if err != nil {
			continue
		}
		for line := range strings.Lines(text) {
			name, rest, ok := strings.Cut(line, `{op="`)
			if !ok || !strings.HasPrefix(name, "queryflux_capacity_store_seconds_") {
				continue
			}
			op, value, _ := strings.Cut(rest, `"} `)
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				continue
			}
			switch name {
			case "queryflux_capacity_store_seconds_sum":
				sum[op] += v
			case "queryflux_capacity_store_seconds_count":
				count[op] += v
			}
		}
	}
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(count)) {
		if count[op] > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f ms over %.0f", op, 1000*sum[op]/count[op], count[op]))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "control planes' lease store, mean per call (queryflux_capacity_store_seconds): " + strings.Join(parts, ", ")
}

// historySettleMax bounds the wait for the workers' uplinks to send what they hold at the end.
const historySettleMax = 15 * time.Second

// nonePending reports whether no worker's uplink held a record at the last look.
func (f *fleetWorkload) nonePending() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range f.hist {
		if h.pending > 0 {
			return false
		}
	}
	return true
}

// crashed notes that worker was killed: what its uplink still held is lost with it.
func (f *fleetWorkload) crashed(worker string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.crashes[worker]++
}

// readHistory counts what the control planes stored, per worker.
func (f *fleetWorkload) readHistory(ctx context.Context) historyTotals {
	h := historyTotals{stored: map[string]int{}, dropped: map[string]int{}, pending: map[string]int{}}
	conn, err := pgx.Connect(ctx, f.cpDB.url)
	if err != nil {
		h.err = err
		return h
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, "SELECT worker, count(*) FROM query_records GROUP BY worker")
	if err != nil {
		h.err = err
		return h
	}
	for rows.Next() {
		var w string
		var n int
		if h.err = rows.Scan(&w, &n); h.err != nil {
			break
		}
		h.stored[w] = n
	}
	rows.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	for w, hs := range f.hist {
		h.dropped[w], h.pending[w] = hs.dropped.total(), hs.pending
	}
	return h
}

// summary is the real run's workload in the simulator's numbers.
func (r *runner) summary() *scenarios.WorkloadSummary {
	r.wl.mu.Lock()
	base := r.wl.base
	r.wl.mu.Unlock()
	return r.wl.stats(base).Summary(r.sc)
}

// clientErrorList is the first client errors of the real run's counted queries.
func (r *runner) clientErrorList() []string {
	r.wl.mu.Lock()
	defer r.wl.mu.Unlock()
	return slices.Clone(r.wl.clientErrors)
}

// startWorkload starts the engine sampler and the clients at scenario time 0; the function it
// returns stops them (the clients' queries still running are cancelled, as the simulation
// ends with them unfinished) and reads the history the control planes stored.
func (r *runner) startWorkload(ctx context.Context, checks []realCheck) func() {
	f := r.wl
	if f == nil {
		return func() {}
	}
	for _, c := range checks {
		if em, ok := c.(*engineMaxCheck); ok {
			f.engWatch = append(f.engWatch, em.watch)
		}
	}
	f.base = r.snapshot(false).admitted
	for _, w := range workerNames(r.sc) {
		if _, ok := f.base[w]; !ok {
			r.errorf("no /metrics from %s at time 0: its admissions cannot be counted", w)
		}
	}
	sampled := make(chan error, 1)
	go func() { sampled <- f.sampleEngines(ctx) }()
	qctx, cancelQueries := context.WithCancel(ctx)
	f.queries = qctx
	gctx, stopArrivals := context.WithCancel(ctx)
	f.start(gctx)
	return func() {
		stopArrivals()
		// Queries still running get a short grace to end on their own, then are cancelled
		// (the worker records them as cancelled).
		done := make(chan struct{})
		go func() { f.clients.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(endGrace):
		}
		cancelQueries()
		<-done
		r.storeTimes = f.storeTimes()
		close(f.stop)
		if err := <-sampled; err != nil {
			r.errorf("sampling the engines' process lists: %v", err)
		}
		if f.wl.History != nil {
			// What was pending when the clients stopped gets flushes to arrive. The store is
			// read once no worker holds a pending record (a record counted pending at the
			// last look and stored by the read would count twice), or after historySettleMax.
			settled := time.Now().Add(historySettleMax)
			for {
				time.Sleep(r.scale(f.wl.History.FlushInterval) + time.Second)
				r.snapshot(false)
				if f.nonePending() || time.Now().After(settled) {
					break
				}
			}
			r.history = f.readHistory(ctx)
		}
	}
}

// planCapSet maps configSet {cluster, cap} of a workload scenario onto the control planes:
// their configuration file gets the new cap and each reloads it (POST /admin/config/reload),
// which publishes it to the workers as an operator's edit would.
func planCapSet(sc *scenarios.Scenario, ev *scenarios.Event, st step) (step, string) {
	var args struct {
		Cluster string `yaml:"cluster"`
		Cap     int    `yaml:"cap"`
	}
	if err := ev.Params.Decode(&args); err != nil {
		return st, err.Error()
	}
	if sc.Workload == nil || args.Cluster == "" {
		return st, "configSet of the config: section's cluster is not supported in chaos"
	}
	st.do = func(r *runner) error { return r.wl.setCap(args.Cluster, args.Cap) }
	return st, ""
}

func (f *fleetWorkload) setCap(cluster string, c int) error {
	return f.editCaps(map[string]int{cluster: c}, nil)
}

// editCaps writes new caps into the control planes' files and reloads them. The oracle moves
// the safe way round: a raised cap counts from before the reload (the control plane may grant
// under it as soon as it applies it), a lowered one from when the reload has returned (until
// the control plane applies it, grants under the old cap are legitimate). also runs with the
// lock held, for the rest of an edit.
func (f *fleetWorkload) editCaps(caps map[string]int, also func()) error {
	f.mu.Lock()
	for c, v := range caps {
		f.caps[c] = v
		if v > f.granted[c] {
			f.grantCap(c, v)
			f.limits[c] = max(v, f.limits[c])
		}
	}
	if also != nil {
		also()
	}
	f.mu.Unlock()
	if err := f.reload(""); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for c, v := range caps {
		if v != f.granted[c] {
			f.grantCap(c, v)
		}
		if v > f.limits[c] || f.executing[c] <= v {
			f.limits[c] = v
		}
	}
	return nil
}

// reload writes every control plane's file and has each reload it (POST
// /admin/config/reload), as an operator's edit would. fallback, if not "", replaces the
// routingFallback: a bad edit, which each control plane must refuse; then the good file is
// written back.
func (f *fleetWorkload) reload(fallback string) error {
	r := f.r
	for _, cp := range slices.Sorted(maps.Keys(r.api)) {
		doc := f.controlPlaneConfig(r.api[cp], f.cpDB.url)
		if fallback != "" {
			doc = strings.Replace(doc, "routingFallback: "+f.wl.Groups[0].Name+"\n", "routingFallback: "+fallback+"\n", 1)
		}
		if _, err := r.writeFile(cp+".yaml", doc); err != nil {
			return err
		}
		if !r.procs[cp].running() {
			continue // it reads the file when it starts again
		}
		err := r.post("http://"+r.api[cp]+controlplane.PathAdminConfigReload, adminToken)
		switch {
		case fallback == "" && err != nil:
			return fmt.Errorf("reload on %s: %w", cp, err)
		case fallback != "" && err == nil:
			return fmt.Errorf("reload on %s: a configuration whose routingFallback names no group was accepted", cp)
		}
	}
	if fallback != "" {
		return f.reload("")
	}
	return nil
}

// planConfigEdit maps configEdit onto the control planes' files: caps, members and routes
// edited and reloaded; bad: a file whose routingFallback names no group, which every control
// plane must refuse (so no worker ever sees it), then the good one again.
func planConfigEdit(sc *scenarios.Scenario, ev *scenarios.Event, st step) (step, string) {
	var e scenarios.ConfigEdit
	if err := ev.Params.Decode(&e); err != nil {
		return st, err.Error()
	}
	if sc.Workload == nil {
		return st, "configEdit without a workload: section"
	}
	st.do = func(r *runner) error { return r.wl.edit(e) }
	return st, ""
}

func (f *fleetWorkload) edit(e scenarios.ConfigEdit) error {
	if e.Bad {
		return f.reload("qf-no-such-group")
	}
	return f.editCaps(e.Caps, func() {
		maps.Copy(f.members, e.Members)
		maps.Copy(f.routes, e.Routes)
	})
}
