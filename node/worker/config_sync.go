package worker

// This file is the worker's config sync: it follows
// the control plane's snapshot by long-poll, compiles each new revision strictly, swaps it in
// atomically, and remembers a rejected revision so it is neither retried nor half-applied.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

// Config sync defaults and limits.
const (
	ConfigPollTimeoutDefault = 30 * time.Second
	ConfigBackoffMinDefault  = 500 * time.Millisecond
	ConfigBackoffMaxDefault  = config.DefaultConfigRetryMaxSecs * time.Second // queryflux.controlPlane.retryMaxSecs
	// configPollMargin is how much longer than the server's poll timeout the client waits.
	configPollMargin = 10 * time.Second
	// configBodyBytesMax bounds a snapshot body.
	configBodyBytesMax  = 64 << 20
	configBackoffJitter = 0.2
)

// ConfigSyncOptions configure a ConfigSync.
type ConfigSyncOptions struct {
	// Local is the worker's node-local section, put into every config built from a snapshot
	// (only read; nil: an empty one). A pointer, as every section passed on: a configuration
	// held by value on a coroutine's stack makes the frames of the config sync's install path
	// too large for the 8 KB a simulated worker's coroutine starts with.
	Local *config.QueryFlux
	// Apply builds and swaps in the runtime for cfg (e.g. proxy.Build, then swap). An error
	// rejects the revision: the previous configuration stays active. Nil means nothing to do.
	Apply func(ctx context.Context, cfg *config.Config, snap *snapshot.WorkerSnapshotV1) error
	// PollTimeout is the long-poll wait asked of the control plane (default 30s).
	PollTimeout time.Duration
	// BackoffMin and BackoffMax bound the jittered exponential backoff after a failed poll.
	BackoffMin, BackoffMax time.Duration
	// Peers, if set, are asked for a recent snapshot while the control plane does not answer
	// and no configuration is active yet (see BootstrapFromPeers).
	Peers *PeerOptions
	// Store, if set, keeps every activated snapshot; with nothing active, the worker starts
	// from it when the control plane does not answer or offers only a revision it refuses
	// (config_cache.go).
	Store SnapshotStore
	// Decode reads the control plane's snapshot bodies (nil: snapshot.Decode). The snapshot it
	// returns is only read (the config compiled from it is a copy, see snapshot.Config), so a
	// simulated fleet shares one decoded copy of a body.
	Decode func(body []byte) (*snapshot.WorkerSnapshotV1, error)
	// Derive builds the compiled configuration snap means for a worker whose node-local section
	// is local (nil: DeriveConfig). What it returns is only read from then on (Apply must not
	// write to it), so a simulated fleet whose workers have equal inputs shares one copy.
	Derive func(snap *snapshot.WorkerSnapshotV1, local *config.QueryFlux) (*config.Config, error)
}

// DeriveConfig is the configuration snap means for a worker whose node-local section is local:
// snap.WorkerConfig(local), compiled strictly. It is a pure function of its inputs (the result
// is a fresh copy that shares nothing with snap or local).
func DeriveConfig(snap *snapshot.WorkerSnapshotV1, local *config.QueryFlux) (*config.Config, error) {
	cfg, err := snap.WorkerConfig(local)
	if err == nil {
		err = config.Compile(cfg)
	}
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// ConfigSync keeps a worker's configuration in step with the control plane's snapshot.
type ConfigSync struct {
	w       *Worker
	e       env.Env
	opts    ConfigSyncOptions
	applied env.Signal // notified after each swap

	mu          sync.Mutex
	active      *snapshot.WorkerSnapshotV1
	activeCfg   *config.Config
	source      string    // where the active config came from: controlPlane, peer, cache
	confirmedAt time.Time // when the control plane last confirmed the active revision
	// proof is the control plane's last confirmation of the active snapshot (its
	// HeaderConfirmedAt and HeaderConfirmation), lent with it to peers; zero when it sent none.
	proof       confirmation
	lastSeen    string // newest revision received, accepted or not
	cpAnswered  bool   // the control plane has answered a poll since this process started
	rejected    string // newest revision that failed to compile or apply
	rejectedErr error
	cacheTried  bool // the Store's snapshot was tried (once per process)
	lastSyncAt  time.Time
	lastAttempt time.Time
	lastError   string
	failures    uint64
	consecutive uint64
	metrics     configMetrics
}

// NewConfigSync returns a config sync for w; it adds w's heartbeat fields (revision, config
// status) and a readiness check that fails until a configuration is active. Call Run.
func NewConfigSync(w *Worker, opts ConfigSyncOptions) *ConfigSync {
	if opts.PollTimeout <= 0 {
		opts.PollTimeout = ConfigPollTimeoutDefault
	}
	if opts.BackoffMin <= 0 {
		opts.BackoffMin = ConfigBackoffMinDefault
	}
	if opts.BackoffMax < opts.BackoffMin {
		opts.BackoffMax = max(ConfigBackoffMaxDefault, opts.BackoffMin)
	}
	if opts.Local == nil {
		opts.Local = &config.QueryFlux{}
	}
	if opts.Decode == nil {
		opts.Decode = snapshot.Decode
	}
	if opts.Derive == nil {
		opts.Derive = DeriveConfig
	}
	s := &ConfigSync{w: w, e: w.e, opts: opts, applied: w.e.NewSignal()}
	s.registerMetrics(w.Metrics())
	w.AddHeartbeatContributor(s.contribute)
	w.AddReadinessCheck("config", func() error {
		if cfg, _ := s.Active(); cfg == nil {
			return errors.New("no configuration yet")
		}
		return nil
	})
	return s
}

// Active is the configuration in force and its snapshot (nil, nil before the first).
func (s *ConfigSync) Active() (*config.Config, *snapshot.WorkerSnapshotV1) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.activeCfg, s.active
}

// Rejected is the newest revision that was refused, with why ("" if none).
func (s *ConfigSync) Rejected() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rejected, s.rejectedErr
}

// ConfirmedAt is when the control plane last confirmed the active revision as current.
func (s *ConfigSync) ConfirmedAt() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.confirmedAt
}

// WaitActive returns once a configuration with a revision other than notRev is active
// ("" waits for any), or ctx.Err().
func (s *ConfigSync) WaitActive(ctx context.Context, notRev string) error {
	for {
		seen := s.applied.Seq()
		if _, snap := s.Active(); snap != nil && snap.Revision != notRev {
			return nil
		}
		if err := s.applied.Wait(ctx, seen); err != nil {
			return err
		}
	}
}

// Run follows the control plane until ctx ends: it fetches the current snapshot, then long-polls
// for the next revision, backing off (jittered, exponential) after failures. It returns ctx.Err().
func (s *ConfigSync) Run(ctx context.Context) error {
	for {
		err := s.pollOnce(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			continue
		}
		delay := s.recordFailure(err)
		s.e.Logger().Warn("config sync failed", "worker", s.w.Name(), "err", redact.Error(err), "retryIn", delay)
		if cfg, _ := s.Active(); cfg == nil && s.opts.Peers != nil {
			if err := s.BootstrapFromPeers(ctx, *s.opts.Peers); err != nil {
				s.e.Logger().Warn("no peer could lend a configuration", "worker", s.w.Name(), "err", redact.Error(err))
			}
		}
		// A peer's recent configuration beats this worker's own older one.
		s.startFromCache(ctx, "the control plane did not answer")
		if err := s.e.Sleep(ctx, delay); err != nil {
			return err
		}
	}
}

// Seed installs a snapshot obtained elsewhere (a peer, a local cache) before the control plane
// answers, under the same strict compile as a polled one. confirmedAt is when the control plane
// last confirmed it (as the peer reports).
func (s *ConfigSync) Seed(ctx context.Context, snap *snapshot.WorkerSnapshotV1, source string, confirmedAt time.Time) error {
	return s.install(ctx, snap, source, confirmedAt, confirmation{})
}

// confirmation is the control plane's word that a snapshot was current at a time: the
// HeaderConfirmedAt and HeaderConfirmation of its answer, exactly as sent (snapshot.Confirm).
type confirmation struct{ at, proof string }

// confirmationOf reads an answer's confirmation (zero from a control plane that sends none).
func confirmationOf(h http.Header) confirmation {
	c := confirmation{at: h.Get(snapshot.HeaderConfirmedAt), proof: h.Get(snapshot.HeaderConfirmation)}
	if c.at == "" || c.proof == "" {
		return confirmation{}
	}
	return c
}

// pollOnce makes one request: GET /worker/config when nothing was seen yet, else the long-poll
// for a revision newer than the last one seen.
func (s *ConfigSync) pollOnce(ctx context.Context) error {
	now := s.e.Now()
	s.mu.Lock()
	seen, answered := s.lastSeen, s.cpAnswered
	s.lastAttempt = now
	s.mu.Unlock()

	// Until the control plane has answered once, ask plainly (a config copied from a peer is
	// confirmed at once by a 304); after that, long-poll for a revision newer than the last seen.
	path := snapshot.PathConfig
	if seen != "" && answered {
		q := url.Values{"revision": {seen}, "timeoutSecs": {strconv.Itoa(max(1, int(s.opts.PollTimeout/time.Second)))}}
		path = snapshot.PathConfigWait + "?" + q.Encode()
	}
	rctx, cancel := s.e.WithTimeout(ctx, s.opts.PollTimeout+configPollMargin)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	if seen != "" && !answered {
		req.Header.Set("If-None-Match", snapshot.ETag(seen))
	}
	resp, err := s.w.Do(rctx, req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusNotModified {
		s.mu.Lock()
		s.cpAnswered = true
		s.mu.Unlock()
	}
	switch resp.StatusCode {
	case http.StatusNotModified:
		s.confirmed(resp.Header.Get(snapshot.HeaderConfirmedAt), confirmationOf(resp.Header))
		return nil
	case http.StatusOK:
		body, err := workerapi.ReadAtMost(resp.Body, resp.ContentLength, configBodyBytesMax+1)
		if err != nil {
			return fmt.Errorf("reading snapshot: %w", err)
		}
		if len(body) > configBodyBytesMax {
			return fmt.Errorf("snapshot larger than %d bytes", configBodyBytesMax)
		}
		return s.receive(ctx, body, confirmationOf(resp.Header))
	default:
		return fmt.Errorf("GET %s: %d %s", snapshot.PathConfig, resp.StatusCode, workerapi.ReadError(resp).Error)
	}
}

// receive decodes a snapshot body and installs it unless it is active or was rejected already.
func (s *ConfigSync) receive(ctx context.Context, body []byte, proof confirmation) error {
	snap, err := s.opts.Decode(body)
	if err != nil {
		return err // a broken or foreign body: the poll failed, back off
	}
	now := s.e.Now()
	s.mu.Lock()
	s.lastSeen = snap.Revision
	isActive := s.active != nil && s.active.Revision == snap.Revision
	if isActive {
		// Already running it (copied from a peer, say): the control plane now vouches for it.
		s.confirmedAt, s.source, s.proof = now, "controlPlane", proof
	}
	known := isActive || s.rejected == snap.Revision
	s.mu.Unlock()
	s.succeeded() // the poll worked, whatever becomes of the revision
	if known {
		return nil
	}
	if err := s.install(ctx, snap, "controlPlane", now, proof); err != nil {
		// The revision is bad, not the poll: waiting on lastSeen blocks until a newer one.
		s.e.Logger().Error("config revision rejected; keeping the previous configuration",
			"worker", s.w.Name(), "revision", snap.Revision, "err", redact.Error(err))
		s.startFromCache(ctx, "the control plane offers only a revision this worker refuses")
	}
	return nil
}

// install compiles snap strictly, applies it, and swaps it in; on any error nothing changes and
// the revision is remembered as rejected.
func (s *ConfigSync) install(ctx context.Context, snap *snapshot.WorkerSnapshotV1, source string, confirmedAt time.Time, proof confirmation) error {
	// A stripped snapshot takes credentials from the worker's own queryflux.clusterCredentials;
	// one that leaves a cluster without any is refused like any bad revision.
	// A peer's copy or one saved before a restart may have been filtered for other labels: it
	// could hold groups this worker must not serve, or lack groups it should.
	var cfg *config.Config
	err := snap.CheckFor(s.w.cfg.Labels)
	if err != nil {
		err = fmt.Errorf("not this worker's snapshot: %w", err)
	} else {
		cfg, err = s.opts.Derive(snap, s.opts.Local)
	}
	if err == nil && s.opts.Apply != nil {
		err = s.opts.Apply(ctx, cfg, snap)
	}
	s.mu.Lock()
	if err != nil {
		s.rejected, s.rejectedErr = snap.Revision, err
		s.mu.Unlock()
		s.metrics.activateFailures.Inc()
		return err
	}
	prev := s.active
	s.active, s.activeCfg, s.source, s.confirmedAt, s.proof = snap, cfg, source, confirmedAt, proof
	if s.lastSeen == "" {
		s.lastSeen = snap.Revision
	}
	s.mu.Unlock()
	s.saveLastGood(snap, source)
	s.applied.Notify()
	s.w.HeartbeatNow()
	s.e.Logger().Info("config revision active", "worker", s.w.Name(), "revision", snap.Revision, "source", source,
		"changes", snapshot.Changes{Prev: prev, Next: snap})
	return nil
}

func (s *ConfigSync) confirmed(header string, proof confirmation) {
	at := s.e.Now()
	if t, err := time.Parse(time.RFC3339Nano, header); err == nil {
		at = t
	}
	s.mu.Lock()
	if s.active != nil && s.active.Revision == s.lastSeen {
		s.confirmedAt, s.source, s.proof = at, "controlPlane", proof
	}
	s.mu.Unlock()
	s.succeeded()
}

func (s *ConfigSync) succeeded() {
	now := s.e.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastSyncAt = now
	s.lastError = ""
	s.consecutive = 0
}

// recordFailure counts a failed poll and returns the backoff before the next: no sooner than
// a 429's or 503's Retry-After (the poll's, or the registration's before it).
func (s *ConfigSync) recordFailure(err error) time.Duration {
	msg := s.w.redact(err.Error()) // outside s.mu: the worker's lock is never taken under ours
	s.mu.Lock()
	s.failures++
	s.consecutive++
	s.lastError = msg
	consecutive := s.consecutive
	s.mu.Unlock()
	d := s.opts.BackoffMin
	for i := uint64(1); i < consecutive && d < s.opts.BackoffMax; i++ {
		d *= 2
	}
	return max(env.Jitter(s.e.Rand(), min(d, s.opts.BackoffMax), configBackoffJitter), workerapi.RetryAfter(err))
}

func (s *ConfigSync) contribute(hb *workerapi.Heartbeat) {
	now := s.e.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active != nil {
		hb.Revision.Active = s.active.Revision
	}
	hb.Revision.LastSeen = s.lastSeen
	hb.Config = workerapi.ConfigStatus{
		Source: s.source, LastSyncAt: s.lastSyncAt, LastSyncAttemptAt: s.lastAttempt,
		LastSyncError: s.lastError, SyncFailures: s.failures, ConsecutiveSyncFailures: s.consecutive,
		Stale: s.source != "" && s.source != "controlPlane",
	}
	if !s.confirmedAt.IsZero() {
		hb.Config.StalenessSecs = now.Sub(s.confirmedAt).Seconds()
	}
}
