package config

import (
	"cmp"
	"maps"
	"slices"
)

// Defaults for fields left out of a configuration.
const (
	DefaultPollTimeoutSecs       = 30
	DefaultConfigRetryMaxSecs    = 30
	DefaultPeerMaxAgeSecs        = 300
	DefaultLeaseTTLSecs          = 30
	DefaultDriftMarginSecs       = 2
	DefaultFlushIntervalSecs     = 5
	DefaultBufferRecords         = 10000
	DefaultBatchRecords          = 500
	DefaultSendTimeoutMs         = 10000
	DefaultHeartbeatIntervalSecs = 10
	DefaultStaleAfterSecs        = 30
	DefaultGraceSecs             = 60
	// DefaultMaxWorkers is well above a real fleet's size (the simulator plans 10,000 workers).
	DefaultMaxWorkers    = 20000
	DefaultRetentionDays = 30
)

// ApplyDefaults fills every field left empty with its default. Parse calls it; call it yourself on
// a Config built in code. It is idempotent.
func ApplyDefaults(cfg *Config) {
	q := &cfg.QueryFlux
	setDefault(&q.Role, RoleStandalone)
	if q.Role == RoleWorker {
		setDefault(&q.Coordination.Mode, CoordinationControlPlane)
	}
	setDefault(&q.Coordination.Mode, CoordinationLocal)
	setDefault(&q.WorkerAPI.Credentials, CredentialsEmbedded)
	setDefault(&q.Coordination.OnUnavailable, OnUnavailableFailClosed)
	setDefault(&q.Coordination.Queue, QueueRetry)
	setDefault(&q.Coordination.LeaseTTLSecs, DefaultLeaseTTLSecs)
	setDefault(&q.Coordination.DriftMarginSecs, DefaultDriftMarginSecs)
	setDefault(&q.Coordination.OnLeaseLost, OnLeaseLostCancel)
	setDefault(&q.ControlPlane.PollTimeoutSecs, DefaultPollTimeoutSecs)
	setDefault(&q.ControlPlane.RetryMaxSecs, DefaultConfigRetryMaxSecs)
	setDefault(&q.ControlPlane.PeerBootstrap.MaxAgeSecs, DefaultPeerMaxAgeSecs)
	setDefault(&q.HistoryUplink.FlushIntervalSecs, DefaultFlushIntervalSecs)
	setDefault(&q.HistoryUplink.BufferRecords, DefaultBufferRecords)
	setDefault(&q.HistoryUplink.BatchRecords, DefaultBatchRecords)
	setDefault(&q.HistoryUplink.SendTimeoutMs, DefaultSendTimeoutMs)
	setDefault(&q.HeartbeatIntervalSecs, DefaultHeartbeatIntervalSecs)
	setDefault(&q.Registry.StaleAfterSecs, DefaultStaleAfterSecs)
	setDefault(&q.Registry.GraceSecs, DefaultGraceSecs)
	setDefault(&q.Registry.MaxWorkers, DefaultMaxWorkers)
	applySharedDefaults(cfg)
}

// applySharedDefaults fills the sections a worker snapshot carries.
func applySharedDefaults(cfg *Config) {
	for i := range cfg.ClusterGroups {
		setDefault(&cfg.ClusterGroups[i].Strategy, StrategyRoundRobin)
	}
	for i := range cfg.Routers {
		if cfg.Routers[i].Type == RouterCompound {
			setDefault(&cfg.Routers[i].Combine, "all")
		}
	}
	setDefault(&cfg.Translation.Mode, TranslationOff)
	setDefault(&cfg.Settings.Catalog.Provider, CatalogNone)
	for i := range cfg.Settings.AccessControl.Rules {
		setDefault(&cfg.Settings.AccessControl.Rules[i].Effect, EffectAllow)
	}
	// Literals can hold personal data or secrets; keeping them is an explicit choice.
	setDefault(&cfg.HistoryPolicy.Redaction, RedactionMaskLiterals)
	setDefault(&cfg.HistoryPolicy.RetentionDays, DefaultRetentionDays)
}

func setDefault[T comparable](field *T, value T) {
	var zero T
	if *field == zero {
		*field = value
	}
}

// sortedKeys returns m's keys in order: the one way this package iterates a map.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}
