package trinohttp

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// SELECT 1 through trino-go-client and the Trino HTTP frontend (→ MySQL engine → MariaDB):
// one POST and at least one GET per query. Compare with BenchmarkSelect1DirectMariaDB in
// mysqlwire for the same engine without the proxy.
//
//	go test -run '^$' -bench Select1 ./internal/frontend/trinohttp/
func BenchmarkSelect1ThroughTrinoHTTP(b *testing.B) {
	eng, _, _ := frontendtest.MariaDB(b)
	ts := startServer(b, frontendtest.NewBackend(eng), Options{})
	db := openTrino(b, trino.Config{ServerURI: "http://bench@" + ts.addr})
	var n int64
	if err := db.QueryRow("SELECT 1").Scan(&n); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := db.QueryRow("SELECT 1").Scan(&n); err != nil || n != 1 {
			b.Fatal(err)
		}
	}
}

// SELECT 1 through the frontend to PostgreSQL (pgengine, no proxy core) over one kept-alive
// HTTP/1.1 connection, as scripts/benchtrino sends it: a POST, then GETs of nextUri until a
// document has none. Only this package and the engine's driver lie between client and
// PostgreSQL, so A/B runs of two builds of the package compare the frontend alone.
//
//	go test -run '^$' -bench Select1OnPostgres -count 10 ./internal/frontend/trinohttp/
func BenchmarkSelect1OnPostgres(b *testing.B) {
	benchSelect1(b, startServer(b, postgresBackendAt(b, pgtest.NewDatabase(b)), Options{}))
}

// BenchmarkSelect1ViaCore is BenchmarkSelect1OnPostgres through a real proxy core (routing,
// checks, a capacity slot, metrics, a history record per query) to pgengine: the path a Trino
// statement takes in the daemon, in one process, so that -benchmem counts its allocations
// (the client's included, the same in every build).
//
//	go test -run '^$' -bench Select1ViaCore -benchmem -count 10 ./internal/frontend/trinohttp/
func BenchmarkSelect1ViaCore(b *testing.B) {
	backend := postgresBackendAt(b, pgtest.NewDatabase(b))
	records := &frontendtest.Records{}
	core := proxy.New(proxy.Options{Env: env.Real(slog.New(slog.DiscardHandler)), Registerer: prometheus.NewRegistry(), OnFinish: records.Add})
	rt, err := proxy.NewRuntime(proxy.RuntimeSpec{
		Clusters: []proxy.ClusterSpec{{Name: "pg", Enabled: true, MaxRunningQueries: 16, Engine: backend.Engine}},
		Groups:   []proxy.GroupSpec{{Name: "pg", Members: []proxy.MemberSpec{{Cluster: "pg"}}, MaxQueuedQueries: 1000}},
		Fallback: "pg", NoPassthrough: true,
	})
	if err != nil {
		b.Fatal(err)
	}
	core.Activate(rt)
	benchSelect1(b, startServer(b, core, Options{}))
	if n := len(records.Find("SELECT 1")); n < b.N {
		b.Fatalf("%d history records of SELECT 1, want at least %d", n, b.N)
	}
}

// BenchmarkSelect1OnDuckDB is BenchmarkSelect1OnPostgres on the embedded DuckDB engine, which builds a new Arrow schema for
// every query (pgengine hands every run of a statement the same one): the frontend's shape
// cache must see through that.
//
//	go test -run '^$' -bench Select1OnDuckDB -benchmem -count 10 ./internal/frontend/trinohttp/
func BenchmarkSelect1OnDuckDB(b *testing.B) {
	benchSelect1(b, startServer(b, duckBackend(b), Options{}))
}

// benchSelect1 times SELECT 1 through ts as scripts/benchtrino sends it, after 20 to warm up,
// and reports the CPU the process (client and server) spent per query.
func benchSelect1(b *testing.B, ts *testServer) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1, DisableCompression: true}}
	selectOne := func() {
		req, _ := http.NewRequest(http.MethodPost, "http://"+ts.addr+"/v1/statement", strings.NewReader("SELECT 1"))
		var rows [][]any
		for req != nil {
			req.Header.Set("X-Trino-User", "bench")
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			var doc QueryResults
			err = json.NewDecoder(resp.Body).Decode(&doc)
			resp.Body.Close()
			if err != nil || doc.Error != nil {
				b.Fatalf("%s: %v %+v", resp.Status, err, doc.Error)
			}
			rows, req = append(rows, doc.Data...), nil
			if doc.NextURI != "" {
				req, _ = http.NewRequest(http.MethodGet, doc.NextURI, nil)
			}
		}
		if len(rows) != 1 {
			b.Fatalf("rows %v", rows)
		}
	}
	for range 20 {
		selectOne()
	}
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	for b.Loop() {
		selectOne()
	}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op") // the client's and the server's
	b.ReportAllocs()
}
