package scenarios

// A simulated fleet's workers mostly have equal node-local sections and follow the same
// snapshots, so each would build the same configuration from the same inputs: the node-local
// section defaulted and compiled at boot, then for every revision the snapshot's WorkerConfig (a
// deep copy with defaults) compiled strictly, which was most of a worker's first install. The
// fleet builds each once per distinct input and the workers share it, as they share the decoded
// snapshot; and each shared configuration is compiled for the query runtime once (proxy.Plan),
// where every worker compiled its own. What is shared is only read: the end of every run checks that no shared
// configuration was written to (sharedUntouched), and RunOpts.NoSharedConfig runs the fleet
// without sharing, which must give the same trace.

import (
	"fmt"
	"reflect"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/node/proxy"
	"github.com/queryflux/queryflux/node/worker"
)

// sharedLocalsMax bounds the distinct node-local sections shared per run: beyond it (a fleet
// whose every worker names its peers) each worker compiles its own, as finding an equal one
// would cost more than compiling.
const sharedLocalsMax = 64

// sharedConfigs are a run's shared configurations.
type sharedConfigs struct {
	locals  map[string]*config.Config // by the key of their section (see local)
	derived map[derivedKey]*derivedConfig
	order   []*derivedConfig // as built, for sharedUntouched
	plans   map[*config.Config]compiledPlan
}

// compiledPlan is proxy.Compile's answer for one shared configuration.
type compiledPlan struct {
	plan *proxy.Plan
	err  error
}

// derivedKey names a derivation's inputs by identity: the shared decoder returns one snapshot
// per distinct body, and sharedConfigs.local one configuration per distinct section.
type derivedKey struct {
	snap  *snapshot.WorkerSnapshotV1
	local *config.Config
}

type derivedConfig struct {
	cfg      *config.Config
	err      error
	pristine *config.Config // a deep copy taken when cfg was built
	what     string
}

func newSharedConfigs() any {
	return &sharedConfigs{locals: map[string]*config.Config{}, derived: map[derivedKey]*derivedConfig{},
		plans: map[*config.Config]compiledPlan{}}
}

func sharedConfigsOf(w *World) *sharedConfigs {
	return w.Durable("shared-configs", newSharedConfigs).(*sharedConfigs)
}

// local is q defaulted and compiled (compiled), shared by every worker whose section has the
// same key; shared is false when it is this worker's own. key names whatever sets one worker's
// q apart from another's (workerRole's sectionKey), so equal keys are equal sections: comparing
// the sections themselves (reflect.DeepEqual) was 1.3 % of a 1,000-worker run's instructions.
func (s *sharedConfigs) local(key string, q config.QueryFlux) (cfg *config.Config, shared bool, err error) {
	if cfg, ok := s.locals[key]; ok {
		return cfg, true, nil
	}
	if cfg, err = compiled(q); err != nil || len(s.locals) >= sharedLocalsMax {
		return cfg, false, err
	}
	s.locals[key] = cfg
	s.remember(cfg, nil, "the node-local section of workers")
	return cfg, true, nil
}

// deriver is worker.DeriveConfig for the workers whose shared node-local configuration is
// local, built once per snapshot.
func (s *sharedConfigs) deriver(local *config.Config) func(*snapshot.WorkerSnapshotV1, *config.QueryFlux) (*config.Config, error) {
	return func(snap *snapshot.WorkerSnapshotV1, q *config.QueryFlux) (*config.Config, error) {
		k := derivedKey{snap, local}
		if d, ok := s.derived[k]; ok {
			return d.cfg, d.err
		}
		cfg, err := worker.DeriveConfig(snap, q)
		s.derived[k] = s.remember(cfg, err, "revision "+snap.Revision)
		return cfg, err
	}
}

// compile is proxy.Compile once per configuration: the workers sharing a configuration share
// its plan. The configurations it sees are the shared ones, which the run keeps (derived), so a
// pointer names one configuration for the whole run.
func (s *sharedConfigs) compile(cfg *config.Config) (*proxy.Plan, error) {
	c, ok := s.plans[cfg]
	if !ok {
		c.plan, c.err = proxy.Compile(cfg)
		s.plans[cfg] = c
	}
	return c.plan, c.err
}

func (s *sharedConfigs) remember(cfg *config.Config, err error, what string) *derivedConfig {
	d := &derivedConfig{cfg: cfg, err: err, pristine: config.Clone(cfg), what: what}
	s.order = append(s.order, d)
	return d
}

// untouched reports the first shared configuration that no longer equals the copy taken when it
// was built (a worker wrote to what the others read).
func (s *sharedConfigs) untouched() error {
	for _, d := range s.order {
		if d.cfg != nil && !reflect.DeepEqual(config.Clone(d.cfg), d.pristine) {
			return fmt.Errorf("the configuration the fleet's workers share (%s) was written to during the run", d.what)
		}
	}
	return nil
}
