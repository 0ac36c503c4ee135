package controlplane

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/config"
)

// Config is what the control plane's worker API needs.
type Config struct {
	// WorkerSecret is the shared secret a worker presents to register. Empty disables registration.
	WorkerSecret string
	// AdminToken guards /admin/workers. Empty disables the admin endpoints.
	AdminToken string
	// HeartbeatInterval is what workers are told to use (default 10s).
	HeartbeatInterval time.Duration
	// StaleAfter is the silence before a worker turns stale (default 3 heartbeat intervals,
	// at least 30s).
	StaleAfter time.Duration
	// EvictGrace is how long a worker stays stale before it is evicted (default 60s).
	EvictGrace time.Duration
	// EvictedRetention is how long an evicted worker stays listed before the reaper forgets it
	// (default 24h), so a fleet of short-lived names does not grow the registry forever.
	EvictedRetention time.Duration
	// ReaperInterval is how often the reaper looks and writes the registry batch
	// (default: a third of StaleAfter, at most one heartbeat interval).
	ReaperInterval time.Duration
	// MaxWorkers bounds the worker names registered and not yet evicted (default
	// MaxWorkersDefault). Each name has its own per-worker limits (long-polls, watches, ordered
	// acquires), so anyone holding the worker secret could multiply them by inventing names: a
	// new name past the bound is refused (ErrRegistryFull) until the reaper evicts a silent one.
	// A name already registered may always register again (a restarted worker).
	MaxWorkers int
	// AllowShortTimeouts lifts the production minimums (tests and the simulator run at
	// sub-second intervals).
	AllowShortTimeouts bool
	// Metrics, if set, receives the control plane's collectors.
	Metrics prometheus.Registerer
}

// Format prints c with the worker secret and the admin token hidden, whatever the verb: a
// Config carried into a log line, an error or a panic must not hand them to whoever reads it.
func (c Config) Format(f fmt.State, verb rune) {
	type plain Config // without the method
	fmt.Fprintf(f, fmt.FormatString(f, verb), plain(c.hidden()))
}

// LogValue is c with its secrets hidden, for slog's handlers (the JSON one reads fields, not Format).
func (c Config) LogValue() slog.Value {
	return slog.StringValue(fmt.Sprintf("%+v", c))
}

// hidden is c with each secret set replaced by a mark that says it was set.
func (c Config) hidden() Config {
	for _, s := range []*string{&c.WorkerSecret, &c.AdminToken} {
		if *s != "" {
			*s = "[hidden]"
		}
	}
	return c
}

// Production minimums: shorter values make a healthy fleet flap under ordinary GC or network jitter.
const (
	HeartbeatIntervalMin = time.Second
	StaleAfterMin        = 30 * time.Second
	EvictGraceMin        = 10 * time.Second
	heartbeatsPerStale   = 3
	// MaxWorkersDefault is config.DefaultMaxWorkers, for control planes built without a file.
	MaxWorkersDefault = config.DefaultMaxWorkers
)

// WithDefaults fills the zero fields.
func (c Config) WithDefaults() Config {
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = 10 * time.Second
	}
	if c.StaleAfter == 0 {
		c.StaleAfter = heartbeatsPerStale * c.HeartbeatInterval
		if c.StaleAfter < StaleAfterMin && !c.AllowShortTimeouts {
			c.StaleAfter = StaleAfterMin
		}
	}
	if c.EvictGrace == 0 {
		c.EvictGrace = 60 * time.Second
	}
	if c.EvictedRetention == 0 {
		c.EvictedRetention = 24 * time.Hour
	}
	if c.ReaperInterval == 0 {
		c.ReaperInterval = min(c.StaleAfter/3, c.HeartbeatInterval)
	}
	if c.MaxWorkers == 0 {
		c.MaxWorkers = MaxWorkersDefault
	}
	return c
}

// Validate reports the first bad field of a defaulted Config.
func (c Config) Validate() error {
	short := !c.AllowShortTimeouts
	switch {
	case c.HeartbeatInterval <= 0 || (short && c.HeartbeatInterval < HeartbeatIntervalMin):
		return fmt.Errorf("heartbeatInterval %v: must be at least %v", c.HeartbeatInterval, HeartbeatIntervalMin)
	case c.StaleAfter < 2*c.HeartbeatInterval:
		return fmt.Errorf("staleAfter %v: must be at least two heartbeat intervals (%v)", c.StaleAfter, 2*c.HeartbeatInterval)
	case short && c.StaleAfter < StaleAfterMin:
		return fmt.Errorf("staleAfter %v: must be at least %v", c.StaleAfter, StaleAfterMin)
	case c.EvictGrace <= 0 || (short && c.EvictGrace < EvictGraceMin):
		return fmt.Errorf("evictGrace %v: must be at least %v", c.EvictGrace, EvictGraceMin)
	case c.EvictedRetention <= 0:
		return fmt.Errorf("evictedRetention %v: must be positive", c.EvictedRetention)
	case c.ReaperInterval <= 0 || c.ReaperInterval > c.StaleAfter:
		return fmt.Errorf("reaperInterval %v: must be in (0, staleAfter]", c.ReaperInterval)
	case c.MaxWorkers < 1:
		return fmt.Errorf("maxWorkers %d: must be at least 1", c.MaxWorkers)
	}
	return nil
}
