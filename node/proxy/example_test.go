package proxy_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/simengine"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// Wiring a core: parse config, Build a runtime with an engine factory, Activate, Execute.
// In production the factory calls querynode.EngineFactory(querynode.Engines()) from the config.Cluster; on a
// config change, Build(cfg, factory, proxy.Reuse(core.Runtime())) then Activate.
func Example() {
	cfg, err := config.Parse([]byte(`
clusters:
  - {name: sim1, engine: sim, endpoint: sim, maxRunningQueries: 2}
clusterGroups:
  - {name: main, members: [sim1], maxQueuedQueries: 10, capacityWaitTimeoutSecs: 5}
routers:
  - {type: protocolBased, trino: main}
routingFallback: main
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	e := env.Real(slog.New(slog.DiscardHandler))
	factory := func(c config.Cluster) (query.Engine, error) {
		return simengine.New(e, c.Name, simengine.Params{Rows: 3}), nil
	}
	core := proxy.New(proxy.Options{
		Env:        e,
		Registerer: prometheus.NewRegistry(),
		OnFinish:   func(r *proxy.Record) { fmt.Println("finished:", r.Group, r.Cluster, r.Status, r.Rows, "rows") },
	})
	rt, err := proxy.Build(cfg, factory, proxy.Reuse(core.Runtime()))
	if err != nil {
		fmt.Println(err)
		return
	}
	core.Activate(rt)

	ctx := context.Background()
	rows, err := core.Execute(ctx, &query.Request{SQL: "select n from t", User: "alice", Protocol: query.ProtocolTrino})
	if err != nil {
		fmt.Println(err)
		return
	}
	for {
		batch, err := rows.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			break
		}
		fmt.Println("batch of", batch.NumRows())
	}
	_ = rows.Close()
	fmt.Println(rows.Tag())
	// Output:
	// batch of 3
	// finished: main sim1 succeeded 3 rows
	// SELECT 3
}
