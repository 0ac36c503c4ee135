package trinohttp

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/logbuf"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// oneSlotCore is a proxy core whose one cluster, over eng, runs one query at a time.
func oneSlotCore(t *testing.T, eng query.Engine) *proxy.Core {
	t.Helper()
	core := proxy.New(proxy.Options{Env: env.Real(slog.New(slog.DiscardHandler)), Registerer: prometheus.NewRegistry()})
	rt, err := proxy.NewRuntime(proxy.RuntimeSpec{
		Clusters: []proxy.ClusterSpec{{Name: "c", Enabled: true, MaxRunningQueries: 1, Engine: eng}},
		Groups:   []proxy.GroupSpec{{Name: "g", Members: []proxy.MemberSpec{{Cluster: "c"}}, MaxQueuedQueries: 10}},
		Fallback: "g",
	})
	if err != nil {
		t.Fatal(err)
	}
	core.Activate(rt)
	return core
}

// TestAnAbandonedQueryGivesItsSlotToTheNext: with one slot on the cluster, a client POSTs a
// long statement and never follows its nextUri (nor DELETEs it). After the client timeout
// (AbandonAfter, Trino's query.client.timeout) the statement is cancelled on the engine, and
// trino-go-client's statement, queued behind it for the slot, runs; the abandonment is counted
// (bound client_timeout) and logged with the query's id and user, never its text.
func TestAnAbandonedQueryGivesItsSlotToTheNext(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	duck, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { duck.Close() })
	for _, tc := range []struct {
		name string
		eng  query.Engine
		long string
		idle func(t *testing.T, marker string)
	}{
		{"postgres", postgresBackendAt(t, dbURL).Engine, "select pg_sleep(60) /* %s */", func(t *testing.T, m string) { waitEngineIdle(t, dbURL, m) }},
		// A scan DuckDB interrupts between its chunks; its one connection runs nothing else.
		{"duckdb", duck, "select sum(range) as %s from range(1000000000000)", func(*testing.T, string) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logged logbuf.Buffer
			reg := prometheus.NewRegistry()
			ts := startServer(t, oneSlotCore(t, tc.eng), Options{AbandonAfter: 2 * time.Second, Registerer: reg,
				Logger: slog.New(slog.NewTextHandler(&logged, nil))})
			marker := "qf_abandoned_" + tc.name
			resp, qr := post(t, ts.addr, fmt.Sprintf(tc.long, marker))
			if resp.StatusCode != 200 || qr.NextURI == "" {
				t.Fatalf("POST: %s %+v", resp.Status, qr)
			}
			db := openTrino(t, trino.Config{ServerURI: "http://bob@" + ts.addr})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var v int
			if err := db.QueryRowContext(ctx, "select 42").Scan(&v); err != nil || v != 42 {
				t.Fatalf("the statement queued behind the abandoned one: %d %v", v, err)
			}
			tc.idle(t, marker)
			if n := testutil.ToFloat64(ts.refusals.WithLabelValues("trinohttp", "client_timeout")); n != 1 {
				t.Errorf("abandoned queries counted: %v, want 1", n)
			}
			out := logged.String()
			if !strings.Contains(out, "query abandoned") || !strings.Contains(out, "query="+qr.ID) || !strings.Contains(out, "user=carol") ||
				!strings.Contains(out, "running=true") {
				t.Errorf("the abandonment's log: %s", out)
			}
			if strings.Contains(out, marker) {
				t.Errorf("the log names the statement's text: %s", out)
			}
		})
	}
}
