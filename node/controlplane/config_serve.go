package controlplane

// This file serves worker config snapshots:
// GET /worker/config and the long-poll GET /worker/config/wait?revision=R, plus the loop that
// rebuilds the snapshot from the config source whenever that source says it changed.

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

// Config serving limits.
const (
	// ConfigPollTimeoutMax caps the long-poll wait a worker may ask for with ?timeoutSecs=.
	ConfigPollTimeoutMax = 5 * time.Minute
	// ConfigBuildTimeoutDefault bounds one snapshot build (a hung store must not stall serving).
	ConfigBuildTimeoutDefault = 30 * time.Second
)

// ConfigSource builds the current worker snapshot: from a YAML file, Postgres
// (pgconfig.Source.Snapshot) or, in the simulator, memory. It must honour ctx's deadline.
type ConfigSource func(ctx context.Context) (*snapshot.WorkerSnapshotV1, error)

// ConfigServer holds the snapshot the control plane serves and wakes long-polls when it changes.
type ConfigServer struct {
	env         env.Env
	changed     env.Signal
	pollTimeout time.Duration

	mu       sync.Mutex
	current  *servedConfig            // nil until the first Publish
	replaced []*servedConfig          // the givenRevisionsKept published before current, newest first
	filtered map[string]*servedConfig // current filtered per worker, by snapshot.VerdictKey
	waiting  int                      // long-polls parked now
	onChange []func(revision string)
	admin    AdminOptions // the admin endpoints' hooks (config_admin_guard.go)
	// secret keys the confirmations sent with every answer (snapshot.Confirm): the worker
	// secret, set by Mount ("" sends none).
	secret string
}

type servedConfig struct {
	snap   *snapshot.WorkerSnapshotV1
	body   []byte
	digest snapshot.Digest // of snap's content, for its confirmations (filtered ones only)
	// selective (the whole snapshot): some cluster or group has a workerSelector, so workers
	// may be sent different clusters. clusters (filtered ones): the clusters snap holds.
	selective bool
	clusters  map[string]bool
	// given (the whole snapshot): what it gives each set of selector verdicts, for the history
	// intake's gate (history_given.go); guarded by the server's mu.
	given map[string]*givenNames
}

// NewConfigServer returns a server with nothing published yet. pollTimeout is how long a
// long-poll waits by default (queryflux.controlPlane.pollTimeoutSecs).
func NewConfigServer(e env.Env, pollTimeout time.Duration) *ConfigServer {
	if pollTimeout <= 0 || pollTimeout > ConfigPollTimeoutMax {
		panic("controlplane: config poll timeout out of range: " + pollTimeout.String())
	}
	return &ConfigServer{env: e, changed: e.NewSignal(), pollTimeout: pollTimeout}
}

// Mount serves the config endpoints on cp's worker API (session token required), each worker
// the snapshot filtered for the labels it registered with, and keeps cp's view of what each
// worker should run (for /admin/workers) in step with what is published.
func (s *ConfigServer) Mount(cp *ControlPlane) {
	labelsOf := func(worker string) map[string]string {
		labels, _ := cp.Labels(worker)
		return labels
	}
	cp.HandleWorker("GET "+snapshot.PathConfig, func(w http.ResponseWriter, r *http.Request, worker string) {
		s.ServeConfig(w, r, labelsOf(worker))
	})
	cp.HandleWorker("GET "+snapshot.PathConfigWait, func(w http.ResponseWriter, r *http.Request, worker string) {
		cp.held(w, worker, "config-long-poll", func() { s.ServeWait(w, r, func() map[string]string { return labelsOf(worker) }) })
	})
	s.mu.Lock()
	s.secret = cp.cfg.WorkerSecret
	s.mu.Unlock()
	cp.SetServedView(s.ServedFor)
	cp.mu.Lock()
	cp.gate = s.HistoryGate(labelsOf)
	cp.mu.Unlock()
	if keeper, ok := cp.reg.(PublishedKeeper); ok {
		s.restorePublished(keeper)
		s.OnChange(func(string) { s.keepPublished(keeper) })
	}
	if cp.cfg.Metrics != nil {
		cp.cfg.Metrics.MustRegister(selectorCollector{cp: cp, srv: s})
	}
	s.OnChange(cp.SetCurrentRevision)
	if cur := s.Current(); cur != nil {
		cp.SetCurrentRevision(cur.Revision)
	}
}

// OnChange adds fn, called (outside any lock) with the new revision after each change.
func (s *ConfigServer) OnChange(fn func(revision string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onChange = append(s.onChange, fn)
}

// Publish makes snap the served snapshot. A snapshot with the current revision only refreshes
// confirmedAt and wakes nobody; a new revision wakes every long-poll.
func (s *ConfigServer) Publish(snap *snapshot.WorkerSnapshotV1) error {
	body, err := snapshot.Encode(snap)
	if err != nil {
		return err
	}
	s.mu.Lock()
	var prev *snapshot.WorkerSnapshotV1
	if s.current != nil {
		prev = s.current.snap
	}
	changed := prev == nil || prev.Revision != snap.Revision
	if changed {
		s.filtered = nil
		if s.current != nil {
			s.replaced = append([]*servedConfig{s.current}, s.replaced[:min(len(s.replaced), givenRevisionsKept-1)]...)
		} else { // the revisions restored from before a restart: the one now published is not one before it
			s.replaced = slices.DeleteFunc(s.replaced, func(c *servedConfig) bool { return c.snap.Revision == snap.Revision })
			s.replaced = s.replaced[:min(len(s.replaced), givenRevisionsKept)]
		}
	}
	s.current = &servedConfig{snap: snap, body: body, selective: len(snap.Verdicts(nil)) > 0}
	hooks := append([]func(string){}, s.onChange...)
	s.mu.Unlock()
	if changed {
		s.env.Logger().Info("config published", "revision", snap.Revision, "changes", snapshot.Diff(prev, snap))
		s.changed.Notify()
		for _, fn := range hooks {
			fn(snap.Revision)
		}
	}
	return nil
}

// filteredFor is the current snapshot filtered for a worker labelled labels (snapshot.For), built once
// per distinct set of selector verdicts; nil before the first Publish.
func (s *ConfigServer) filteredFor(labels map[string]string) (*servedConfig, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current == nil {
		return nil, nil
	}
	key := snapshot.VerdictKey(s.current.snap.Verdicts(labels))
	if cur := s.filtered[key]; cur != nil {
		return cur, nil
	}
	snap, err := s.current.snap.For(labels)
	if err != nil {
		return nil, err
	}
	body, err := snapshot.Encode(snap)
	if err != nil {
		return nil, err
	}
	digest, err := snapshot.DigestOf(snap)
	if err != nil {
		return nil, err
	}
	if s.filtered == nil {
		s.filtered = map[string]*servedConfig{}
	}
	clusters := make(map[string]bool, len(snap.Clusters))
	for _, c := range snap.Clusters {
		clusters[c.Name] = true
	}
	s.filtered[key] = &servedConfig{snap: snap, body: body, digest: digest, clusters: clusters}
	return s.filtered[key], nil
}

// ServedFor is the revision a worker labelled labels should run and the groups its snapshot
// holds ("" and nil before the first Publish).
func (s *ConfigServer) ServedFor(labels map[string]string) (string, []string) {
	cur, err := s.filteredFor(labels)
	if err != nil || cur == nil {
		return "", nil
	}
	groups := make([]string, 0, len(cur.snap.ClusterGroups))
	for _, g := range cur.snap.ClusterGroups {
		groups = append(groups, g.Name)
	}
	return cur.snap.Revision, groups
}

// Serves reports whether the snapshot a worker labelled labels is sent holds cluster (true
// before the first Publish, when there is nothing to tell). Without any workerSelector every
// worker is sent every cluster, and nothing is filtered to tell.
func (s *ConfigServer) Serves(labels map[string]string, cluster string) bool {
	s.mu.Lock()
	selective := s.current != nil && s.current.selective
	s.mu.Unlock()
	if !selective {
		return true
	}
	cur, err := s.filteredFor(labels)
	if err != nil || cur == nil {
		return err == nil
	}
	return cur.clusters[cluster]
}

// Current is the served snapshot, or nil before the first Publish.
func (s *ConfigServer) Current() *snapshot.WorkerSnapshotV1 {
	if cur := s.load(); cur != nil {
		return cur.snap
	}
	return nil
}

func (s *ConfigServer) load() *servedConfig {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current
}

// Waiting is the number of long-polls parked now.
func (s *ConfigServer) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}

// ServeConfig answers GET /worker/config: 200 with the snapshot filtered for labels, 304 when
// If-None-Match names its revision, 503 before anything is published.
func (s *ConfigServer) ServeConfig(w http.ResponseWriter, r *http.Request, labels map[string]string) {
	cur, err := s.filteredFor(labels)
	if err != nil {
		workerapi.WriteError(w, http.StatusInternalServerError, err.Error(), "")
		return
	}
	if cur == nil {
		workerapi.WriteError(w, http.StatusServiceUnavailable, "no configuration published yet", "")
		return
	}
	if r.Header.Get("If-None-Match") == snapshot.ETag(cur.snap.Revision) {
		s.writeNotModified(w, cur)
		return
	}
	s.writeSnapshot(w, cur)
}

// ServeWait answers GET /worker/config/wait?revision=R[&timeoutSecs=N]: the snapshot filtered
// for the worker's labels (asked again at every change, as a re-registration may change them)
// as soon as its revision is not R, or once the timeout passes, 304 naming the current revision
// (R) or 503 when nothing is published yet. A publish that leaves this worker's filtered
// snapshot as it was sends it nothing. timeoutSecs outside 1..ConfigPollTimeoutMax is refused
// (a worker's pollTimeoutSecs is validated to that range).
func (s *ConfigServer) ServeWait(w http.ResponseWriter, r *http.Request, labels func() map[string]string) {
	have := r.URL.Query().Get("revision")
	timeout := s.pollTimeout
	if v := r.URL.Query().Get("timeoutSecs"); v != "" {
		const most = int(ConfigPollTimeoutMax / time.Second)
		secs, err := strconv.Atoi(v)
		if err != nil || secs < 1 || secs > most {
			workerapi.WriteError(w, http.StatusBadRequest, fmt.Sprintf("timeoutSecs must be a whole number of seconds from 1 to %d, got %q", most, v), "timeoutSecs")
			return
		}
		timeout = time.Duration(secs) * time.Second
	}
	ctx, cancel := s.env.WithTimeout(r.Context(), timeout)
	defer cancel()
	s.setWaiting(+1)
	defer s.setWaiting(-1)
	for timedOut := false; ; {
		seen := s.changed.Seq()
		cur, err := s.filteredFor(labels())
		switch {
		case err != nil:
			workerapi.WriteError(w, http.StatusInternalServerError, err.Error(), "")
			return
		case cur != nil && cur.snap.Revision != have:
			s.writeSnapshot(w, cur)
			return
		case timedOut && cur == nil:
			workerapi.WriteError(w, http.StatusServiceUnavailable, "no configuration published yet", "")
			return
		case timedOut:
			// Looked at once more after the timeout: a publish racing it is served, not denied.
			s.writeNotModified(w, cur)
			return
		}
		if err := s.changed.Wait(ctx, seen); err != nil {
			if r.Context().Err() != nil {
				return // the worker went away; nobody reads an answer
			}
			timedOut = true
		}
	}
}

func (s *ConfigServer) setWaiting(d int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting += d
}

func (s *ConfigServer) writeNotModified(w http.ResponseWriter, cur *servedConfig) {
	w.Header().Set("ETag", snapshot.ETag(cur.snap.Revision))
	s.confirm(w, cur)
	w.WriteHeader(http.StatusNotModified)
}

func (s *ConfigServer) writeSnapshot(w http.ResponseWriter, cur *servedConfig) {
	w.Header().Set("Content-Type", snapshot.MediaType)
	w.Header().Set("ETag", snapshot.ETag(cur.snap.Revision))
	s.confirm(w, cur)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(cur.body)
}

// confirm says when the control plane vouched for cur's content, with the proof a worker hands
// on to peers that copy it (snapshot.Confirm).
func (s *ConfigServer) confirm(w http.ResponseWriter, cur *servedConfig) {
	at := s.env.Now().UTC().Format(time.RFC3339Nano)
	w.Header().Set(snapshot.HeaderConfirmedAt, at)
	s.mu.Lock()
	secret := s.secret
	s.mu.Unlock()
	if secret != "" {
		w.Header().Set(snapshot.HeaderConfirmation, snapshot.Confirm(secret, cur.digest, at))
	}
}

// RunConfigRefresh builds a snapshot from src now and again each time wake is notified (a
// Postgres NOTIFY, a file reload), publishing each one that builds. A build that fails (an
// invalid config, a store outage, a build past buildTimeout) is logged, the previous snapshot
// stays served, and the build is retried after ConfigRetryInterval (or at the next wake).
// It returns ctx.Err() when ctx ends.
func (s *ConfigServer) RunConfigRefresh(ctx context.Context, src ConfigSource, wake env.Signal, buildTimeout time.Duration) error {
	if buildTimeout <= 0 {
		buildTimeout = ConfigBuildTimeoutDefault
	}
	log := s.env.Logger()
	for {
		seen := wake.Seq()
		waitCtx, cancel := ctx, context.CancelFunc(func() {})
		if err := s.refresh(ctx, src, buildTimeout); err != nil {
			log.Warn("config: snapshot not rebuilt; serving the previous one", "err", redact.Error(err))
			waitCtx, cancel = s.env.WithTimeout(ctx, ConfigRetryInterval)
		}
		_ = wake.Wait(waitCtx, seen)
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// ConfigRetryInterval is how soon a failed snapshot build is tried again without a wake.
const ConfigRetryInterval = 5 * time.Second

func (s *ConfigServer) refresh(ctx context.Context, src ConfigSource, buildTimeout time.Duration) error {
	bctx, cancel := s.env.WithTimeout(ctx, buildTimeout)
	defer cancel()
	snap, err := src(bctx)
	if err != nil {
		return err
	}
	return s.Publish(snap)
}
