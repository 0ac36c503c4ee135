package duckengine_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// A query's SQL is tokenized once on its way through the proxy core to DuckDB: the core's
// analysis (the group's statement checks, the result cache's key) travels with the request,
// and the engine reads its words from it (transaction control, COPY to the client, SHOW
// statement_timeout, the catalog rewrite's tokens).
func TestSQLTokenizedOnceThroughTheCore(t *testing.T) {
	e := open(t)
	core := proxy.New(proxy.Options{Env: env.Real(slog.New(slog.DiscardHandler)), Registerer: prometheus.NewRegistry()})
	rt, err := proxy.NewRuntime(proxy.RuntimeSpec{
		Clusters: []proxy.ClusterSpec{{Name: "duck", Enabled: true, MaxRunningQueries: 2, Engine: e}},
		Groups: []proxy.GroupSpec{{Name: "main", Members: []proxy.MemberSpec{{Cluster: "duck"}}, MaxQueuedQueries: 10,
			BlockedStatements: []string{"drop"}, Cache: proxy.CacheSpec{TTL: time.Minute}}},
		Fallback: "main",
	})
	if err != nil {
		t.Fatal(err)
	}
	core.Activate(rt)
	ctx := context.Background()
	for _, sql := range []string{
		"select 42 as answer",
		"select g, 'x' || g from generate_series(1, 3) t(g) where g > 1 order by 1",
		"/* a comment first */ begin isolation level serializable",
		"copy (select 1) to stdout",
		"select c.relname from pg_catalog.pg_class c where c.relname OPERATOR(pg_catalog.~) '^(x)$'",
	} {
		var passes int64
		stop := sqltok.CountTokenize(&passes)
		rows, err := core.Execute(ctx, &query.Request{SQL: sql, User: "alice", Protocol: query.ProtocolPostgres})
		if err == nil {
			for _, err = rows.Next(ctx); err == nil; _, err = rows.Next(ctx) {
			}
			if err == io.EOF {
				err = rows.Close()
			} else {
				_ = rows.Close()
			}
		}
		stop()
		t.Logf("%s: %v", sql, err)
		if passes != 1 {
			t.Errorf("%q: tokenized %d times on its way to DuckDB, want once", sql, passes)
		}
	}
}
