package querynode

import (
	"context"
	"fmt"
	"maps"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/defaultconfig"
	"github.com/queryflux/queryflux/internal/demo"
	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/engine/trinoengine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/proxy"
)

// Engines are the engine kinds the binary ships, each with its opener. The daemon hands them to
// the roles it builds (EngineFactory, in their deps) and to its engine checks; the simulator
// hands its roles simulated engines instead.
func Engines() engine.Openers {
	return engine.Openers{
		config.EnginePostgres:  pgengine.Open,
		config.EngineDuckDB:    duckengine.Open,
		config.EngineMySQL:     mysqlengine.OpenSpec,
		config.EngineStarRocks: mysqlengine.OpenSpec,
		config.EngineTrino:     trinoengine.OpenSpec,
	}
}

// EngineSpec is how to reach cluster c's engine.
func EngineSpec(c config.Cluster) engine.Spec {
	return engine.Spec{
		Name: c.Name, Kind: c.Engine, Endpoint: c.Endpoint, Database: c.Database,
		User: c.Credentials.User, Password: c.Credentials.Password.Reveal(),
		Options: maps.Clone(c.Options),
		// Every query the cap lets run needs a connection of its own.
		MaxConns: max(c.MaxRunningQueries, 0),
	}
}

// EngineFactory opens each cluster's engine with the opener of its kind (the production
// proxy.EngineFactory, over Engines()). A DuckDB cluster with options.dataset: demo gets the demo
// dataset loaded after it opens.
func EngineFactory(kinds engine.Openers) proxy.EngineFactory {
	return func(c config.Cluster) (query.Engine, error) { return openEngine(kinds, c) }
}

func openEngine(kinds engine.Openers, c config.Cluster) (query.Engine, error) {
	spec := EngineSpec(c)
	dataset := spec.Options[defaultconfig.OptionDataset]
	delete(spec.Options, defaultconfig.OptionDataset)
	if dataset != "" && (c.Engine != config.EngineDuckDB || dataset != defaultconfig.DatasetDemo) {
		return nil, fmt.Errorf("options.%s %q: only %q on a duckdb cluster is known", defaultconfig.OptionDataset, dataset, defaultconfig.DatasetDemo)
	}
	e, err := kinds.Open(spec)
	if err != nil {
		// A driver's message may quote its connection string, options and all.
		return nil, &scrubbedError{err: err, msg: scrubSecrets(err.Error(), c)}
	}
	if dataset == defaultconfig.DatasetDemo {
		// Loaded again if a fatal error makes the engine reopen its in-memory database.
		if err := e.(*duckengine.Engine).OnOpen(context.Background(), demo.Load); err != nil {
			_ = e.Close()
			return nil, err
		}
	}
	return e, nil
}

// scrubbedError is an engine's error with the cluster's secrets hidden from its text.
type scrubbedError struct {
	err error
	msg string
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }
