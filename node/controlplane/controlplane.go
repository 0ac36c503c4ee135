package controlplane

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/refusallog"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

// ErrUnauthorized is returned by AuthWorker for a missing, unknown, revoked or superseded token.
var ErrUnauthorized = errors.New("session token unknown, revoked or superseded: register again")

// tokenBytes is the entropy of a session token.
const tokenBytes = 32

// ControlPlane serves the worker API and keeps the fleet registry.
type ControlPlane struct {
	e         env.Env
	cfg       Config
	reg       registry.Store
	mux       *http.ServeMux
	metrics   *metrics
	wake      env.Signal // asks the reaper to write the registry batch now
	flushDone env.Signal // a flush ended (flushes take turns)

	mu              sync.Mutex
	workers         map[string]*entry
	byToken         map[string]string // token hash -> worker name
	dirty           map[string]bool   // names whose record the store has not seen yet
	forgotten       map[string]bool   // names to delete from the store (evicted past retention)
	flushing        bool              // a Flush is writing
	supersedes      map[string]supersedeCount
	currentRevision string
	served          ServedView   // nil: every worker is compared with currentRevision
	gate            history.Gate // the history intake's check of a worker's records (nil: none)
	onEvict         []func(ctx context.Context, w workerapi.WorkerInfo)
	onSessionEnd    []func(ctx context.Context, s Session, why string)
	capStats        *capacityStats // nil without MountCapacity
	heldCount       heldCounts     // requests held open per worker (held.go)
	live            int            // workers healthy or stale: bounded by cfg.MaxWorkers (moveCount)
	// patterns are the mux patterns mounted, in order: every page a test must find free of
	// secrets, the ones mounted later included.
	patterns []string

	// refusedLog is when each kind of refused request was last logged (refusals.go); it has its own lock.
	refusedLog refusallog.Limiter[refusalKind]
	// capRefused writes the capacity API's refusal lines due at a tick (nil without
	// MountCapacity, which sets it before serving).
	capRefused func(now time.Time)
}

// supersedeCount remembers how often a name was registered while its previous registration was
// still online: more than once in a short while means two processes share the name.
type supersedeCount struct {
	count int
	last  time.Time
}

// entry is one worker in memory: its durable record and its lifecycle.
type entry struct {
	rec  registry.Record // State/StateSince/LastSeen are copied from life when written
	life Lifecycle

	// sid is sessionID(sidOf), kept for the token hash it was made from: a session's
	// endpoints are told its ID on every request, and rec.TokenHash changes in several places
	// (a registration, an eviction, another replica's record), so the ID is made again
	// whenever the hash it was made from is not the entry's any more.
	sid, sidOf string
}

// sessionID is the ID of the entry's current session (rec.TokenHash's). Call with cp.mu held.
func (en *entry) sessionID() string {
	if en.sidOf != en.rec.TokenHash || en.sid == "" {
		en.sid, en.sidOf = sessionID(en.rec.TokenHash), en.rec.TokenHash
	}
	return en.sid
}

// New returns a control plane. cfg is defaulted and must validate (see Config.Validate);
// an invalid cfg is a programming error and panics.
func New(e env.Env, cfg Config, reg registry.Store) *ControlPlane {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		panic("controlplane: invalid config: " + err.Error())
	}
	cp := &ControlPlane{
		e: e, cfg: cfg, reg: reg,
		mux:        http.NewServeMux(),
		metrics:    newMetrics(cfg.Metrics),
		wake:       e.NewSignal(),
		flushDone:  e.NewSignal(),
		supersedes: map[string]supersedeCount{},
		workers:    map[string]*entry{},
		byToken:    map[string]string{},
		dirty:      map[string]bool{},
		forgotten:  map[string]bool{},
	}
	cp.Handle("POST "+workerapi.PathRegister, http.HandlerFunc(cp.handleRegister))
	cp.Handle("POST "+workerapi.PathHeartbeat, http.HandlerFunc(cp.handleHeartbeat))
	cp.Handle("GET "+workerapi.PathAdminWorkers, http.HandlerFunc(cp.handleAdminList))
	cp.Handle("GET "+workerapi.PathAdminWorkers+"/{name}", http.HandlerFunc(cp.handleAdminShow))
	cp.HandleWorker("GET "+workerapi.PathWorkerPeers, cp.handlePeers)
	return cp
}

// Config returns the defaulted configuration.
func (cp *ControlPlane) Config() Config { return cp.cfg }

// Handler is the control plane's HTTP API.
func (cp *ControlPlane) Handler() http.Handler { return cp.mux }

// Mux is the ServeMux behind Handler, for mounting more endpoints.
func (cp *ControlPlane) Mux() *http.ServeMux { return cp.mux }

// Handle mounts h on the control plane's server (Go 1.22 ServeMux patterns: "POST /worker/x").
func (cp *ControlPlane) Handle(pattern string, h http.Handler) {
	cp.mu.Lock()
	cp.patterns = append(cp.patterns, pattern)
	cp.mu.Unlock()
	cp.mux.Handle(pattern, h)
}

// HandleWorker mounts a worker endpoint: the request must carry a valid session token, and h is
// told which worker sent it. Otherwise the answer is 401 with a JSON error body.
func (cp *ControlPlane) HandleWorker(pattern string, h func(w http.ResponseWriter, r *http.Request, worker string)) {
	cp.HandleSession(pattern, func(w http.ResponseWriter, r *http.Request, s Session) { h(w, r, s.Worker) })
}

// HandleSession is HandleWorker for endpoints that must tell one registration of a worker
// from the next (capacity leases): h is told the session that sent the request.
func (cp *ControlPlane) HandleSession(pattern string, h func(w http.ResponseWriter, r *http.Request, s Session)) {
	cp.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := cp.authSession(r)
		if err != nil {
			cp.noteRefusedCall(pattern, "unauthorized", "", err)
			workerapi.WriteError(w, http.StatusUnauthorized, err.Error(), "Authorization")
			return
		}
		h(w, r, s)
	}))
}

// Session is one registration of a worker: it begins when the worker registers and ends when
// it is evicted or another registration under its name supersedes it (a restarted process, or
// anyone else holding the worker secret). Whatever a session holds (capacity leases) is its
// own: a later session of the same name cannot touch it.
type Session struct {
	Worker string
	// ID names the session: a digest of its token's hash, so it can be logged and stored
	// without revealing anything of the token. It survives control-plane restarts (the token's
	// hash is in the registry).
	ID string
}

// sessionID is the ID of the session whose token hashes to tokenHash.
func sessionID(tokenHash string) string {
	h := sha256.Sum256([]byte("queryflux worker session\x00" + tokenHash))
	return hex.EncodeToString(h[:6])
}

// HandleAdmin mounts an admin endpoint guarded by the admin token.
func (cp *ControlPlane) HandleAdmin(pattern string, h http.Handler) {
	cp.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !cp.authAdmin(w, r) {
			return
		}
		h.ServeHTTP(w, r)
	}))
}

// OnEvict adds a hook called (outside any lock, from the reaper task) for every evicted worker.
func (cp *ControlPlane) OnEvict(fn func(ctx context.Context, w workerapi.WorkerInfo)) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.onEvict = append(cp.onEvict, fn)
}

// OnSessionEnd adds a hook called (outside any lock) when a worker's session ends: why is
// "evicted" (from the reaper task) or "superseded" (a registration under its name, from the
// registration's handler before it answers).
func (cp *ControlPlane) OnSessionEnd(fn func(ctx context.Context, s Session, why string)) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.onSessionEnd = append(cp.onSessionEnd, fn)
}

// endSession runs the OnSessionEnd hooks for the session of tokenHash ("" when there is none).
func (cp *ControlPlane) endSession(ctx context.Context, worker, tokenHash, why string) {
	if tokenHash == "" {
		return
	}
	cp.mu.Lock()
	hooks := slices.Clone(cp.onSessionEnd)
	cp.mu.Unlock()
	for _, hook := range hooks {
		hook(ctx, Session{Worker: worker, ID: sessionID(tokenHash)}, why)
	}
}

// SetCurrentRevision tells the control plane which config revision is current; /admin/workers
// marks each worker current or not against it.
func (cp *ControlPlane) SetCurrentRevision(rev string) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.currentRevision = rev
}

// ServedView answers what the control plane serves a worker with the given labels: the
// revision of its filtered snapshot and the cluster groups in it (nil before any snapshot).
type ServedView func(labels map[string]string) (revision string, groups []string)

// SetServedView makes /admin/workers and the registration and heartbeat answers compare each
// worker with its own snapshot's revision, and list the groups it serves.
func (cp *ControlPlane) SetServedView(v ServedView) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.served = v
}

// servedFor is what the worker labelled labels should run; callers hold mu.
func (cp *ControlPlane) servedFor(labels map[string]string) (string, []string) {
	if cp.served == nil {
		return cp.currentRevision, nil
	}
	return cp.served(labels)
}

// revisionOf is the revision the named worker should run.
func (cp *ControlPlane) revisionOf(name string) string {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	var labels map[string]string
	if en := cp.workers[name]; en != nil {
		labels = en.rec.Labels
	}
	rev, _ := cp.servedFor(labels)
	return rev
}

// Labels are the labels the named worker registered with (false for an unknown worker).
func (cp *ControlPlane) Labels(name string) (map[string]string, bool) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	en := cp.workers[name]
	if en == nil {
		return nil, false
	}
	return en.rec.Labels, true
}

// CurrentRevision is the revision last given to SetCurrentRevision.
func (cp *ControlPlane) CurrentRevision() string {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.currentRevision
}

// AuthWorker resolves the request's session token to the worker it was issued to.
func (cp *ControlPlane) AuthWorker(r *http.Request) (string, error) {
	name, _, err := cp.authWorker(r)
	return name, err
}

// authWorker is AuthWorker that also returns the token's hash, so a handler need not hash again.
func (cp *ControlPlane) authWorker(r *http.Request) (name, hash string, err error) {
	var buf [64]byte
	key, err := tokenKey(r, buf[:0])
	if err != nil {
		return "", "", err
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	name, en, err := cp.byKeyLocked(key)
	if err != nil {
		return "", "", err
	}
	return name, en.rec.TokenHash, nil // the same string, held already
}

// authSession is the session the request's token belongs to.
func (cp *ControlPlane) authSession(r *http.Request) (Session, error) {
	var buf [64]byte
	key, err := tokenKey(r, buf[:0])
	if err != nil {
		return Session{}, err
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	name, en, err := cp.byKeyLocked(key)
	if err != nil {
		return Session{}, err
	}
	return Session{Worker: name, ID: en.sessionID()}, nil
}

// tokenKey appends the hash of the request's session token to dst (a buffer on the caller's
// stack: every request of every worker is hashed).
func tokenKey(r *http.Request, dst []byte) ([]byte, error) {
	token, ok := workerapi.BearerToken(r)
	if !ok {
		return nil, ErrUnauthorized
	}
	return workerapi.AppendTokenHash(dst, token), nil
}

// byKeyLocked is the worker whose session token hashes to key, and its entry. Call with cp.mu
// held.
func (cp *ControlPlane) byKeyLocked(key []byte) (string, *entry, error) {
	name, ok := cp.byToken[string(key)] // a lookup by a converted key copies nothing
	if !ok {
		return "", nil, ErrUnauthorized
	}
	// An invariant, not a check of the secret (the map lookup was that): plain comparison.
	en := cp.workers[name]
	if en == nil || !en.life.Online() || string(key) != en.rec.TokenHash {
		panic(fmt.Sprintf("controlplane: token index names %q but its entry disagrees", name))
	}
	return name, en, nil
}

// Start loads the registry, gives every known worker a fresh window (a restart must not evict
// the fleet), and starts the reaper task.
func (cp *ControlPlane) Start(ctx context.Context) error {
	records, err := cp.reg.List(ctx)
	if err != nil {
		return fmt.Errorf("controlplane: loading the worker registry: %w", err)
	}
	now := cp.e.Now()
	cp.mu.Lock()
	for _, rec := range records {
		en := &entry{rec: rec, life: Lifecycle{State: rec.State, StateSince: rec.StateSince, LastSeen: rec.LastSeen}}
		en.life.FreshWindow(now)
		cp.workers[rec.Name] = en
		if en.life.Online() && rec.TokenHash != "" {
			cp.byToken[rec.TokenHash] = rec.Name
		}
		cp.dirty[rec.Name] = en.life.Online()
		cp.moveCount("", en.life.State)
	}
	cp.mu.Unlock()
	cp.e.Logger().Info("worker registry loaded", "workers", len(records), "freshWindow", cp.cfg.StaleAfter)
	cp.e.Go(ctx, "controlplane-reaper", cp.runReaper)
	return nil
}

// newToken draws a session token from the Env's random source.
func (cp *ControlPlane) newToken() string {
	var b [tokenBytes]byte
	cp.e.Rand().Read(b[:])
	return "qfw_" + base64.RawURLEncoding.EncodeToString(b[:])
}

// ErrRegistryFull refuses the registration of a new worker name while Config.MaxWorkers names
// are registered and not evicted.
var ErrRegistryFull = errors.New("the control plane's registry is full")

// register records a registration at now and returns the session token. A registration under
// a name already known replaces it: the older token stops working at once. A new name while
// the registry is full is refused (ErrRegistryFull).
func (cp *ControlPlane) register(req workerapi.RegisterRequest, token string, now time.Time) (superseded *registry.Record, err error) {
	hash := workerapi.TokenHash(token)
	cp.mu.Lock()
	defer cp.mu.Unlock()
	old := cp.workers[req.Name]
	if (old == nil || !old.life.Online()) && cp.live >= cp.cfg.MaxWorkers {
		return nil, fmt.Errorf("%w: %d worker names are registered and not evicted (queryflux.registry.maxWorkers); "+
			"a new name is refused until the registry evicts a silent worker", ErrRegistryFull, cp.live)
	}
	if old != nil {
		if old.life.Online() {
			prev := old.rec
			superseded = &prev
			sc := cp.supersedes[req.Name]
			sc.count, sc.last = sc.count+1, now
			cp.supersedes[req.Name] = sc
		}
		delete(cp.byToken, old.rec.TokenHash)
		cp.moveCount(old.life.State, "")
	}
	cp.workers[req.Name] = &entry{
		rec: registry.Record{
			Name: req.Name, Version: req.Version, Labels: maps.Clone(req.Labels),
			Frontends: slices.Clone(req.Frontends), Endpoints: maps.Clone(req.Endpoints), TokenHash: hash, RegisteredAt: now,
		},
		life: NewLifecycle(now),
	}
	cp.byToken[hash] = req.Name
	cp.dirty[req.Name] = true
	delete(cp.forgotten, req.Name)
	cp.moveCount("", workerapi.StateHealthy)
	return superseded, nil
}

// ErrReplayedHeartbeat refuses a heartbeat whose sequence number is not after the last one
// kept for its session: a worker numbers every beat it builds one more than the last, and each
// reaches one replica, so such a beat is a replay (of a beat seen on the wire, by whoever holds
// the session's token) or one delayed past its successor (its sender has long stopped waiting
// for the answer). It is not taken as a sign of life.
var ErrReplayedHeartbeat = errors.New("controlplane: heartbeat sequence number not after the last one kept for this session (replayed or reordered)")

// heartbeat records hb from worker name at now; ok=false if the worker is no longer online, and
// err ErrReplayedHeartbeat if hb's sequence number is not after the last kept.
func (cp *ControlPlane) heartbeat(name, tokenHash string, hb workerapi.Heartbeat, now time.Time) (Transition, bool, error) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	en := cp.workers[name]
	if en == nil || en.rec.TokenHash != tokenHash {
		return Transition{}, false, nil // evicted or superseded since AuthWorker
	}
	if en.rec.Heartbeat != nil && hb.Seq <= en.rec.Heartbeat.Seq {
		return Transition{}, true, fmt.Errorf("%w: seq %d, the last kept %d", ErrReplayedHeartbeat, hb.Seq, en.rec.Heartbeat.Seq)
	}
	tr, ok := en.life.Heartbeat(now)
	if !ok {
		return tr, false, nil
	}
	en.rec.Heartbeat = &hb
	en.rec.LastHeartbeat = now
	if len(hb.Frontends) > 0 {
		en.rec.Frontends = slices.Clone(hb.Frontends)
	}
	cp.dirty[name] = true
	if tr.Changed() {
		cp.moveCount(tr.From, tr.To)
	}
	return tr, true, nil
}

// sortedNames returns the worker names in order; callers hold mu.
func (cp *ControlPlane) sortedNames() []string {
	names := make([]string, 0, len(cp.workers))
	for name := range cp.workers { //determinism:ok collecting keys, sorted below
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// snapshot returns the durable record of en; callers hold mu.
func (en *entry) snapshot() registry.Record {
	r := en.rec
	r.State, r.StateSince, r.LastSeen = en.life.State, en.life.StateSince, en.life.LastSeen
	return registry.Normalize(r)
}

// Workers returns every known worker as /admin/workers shows it, sorted by name.
func (cp *ControlPlane) Workers() []workerapi.WorkerInfo {
	now := cp.e.Now()
	cp.mu.Lock()
	defer cp.mu.Unlock()
	out := make([]workerapi.WorkerInfo, 0, len(cp.workers))
	for _, name := range cp.sortedNames() {
		out = append(out, cp.info(cp.workers[name], now))
	}
	return out
}

// Worker returns one worker as /admin/workers/{name} shows it.
func (cp *ControlPlane) Worker(name string) (workerapi.WorkerInfo, bool) {
	now := cp.e.Now()
	cp.mu.Lock()
	defer cp.mu.Unlock()
	en := cp.workers[name]
	if en == nil {
		return workerapi.WorkerInfo{}, false
	}
	return cp.info(en, now), true
}
