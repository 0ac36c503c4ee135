package history

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// BenchmarkStoreUplinkRecord is a standalone daemon's record of a finished statement, as its
// event loop makes it: AddRecord into its own memory store (NewStoreUplink: redacted and stored
// before it returns), under an id the proxy makes (16 hex digits), its names and routing trace
// the same strings every time, pgbench -S's text with a fresh literal, into a full store of
// 100,000 records. Count its instructions under callgrind (scripts/probelib.sh's cg_bench_count),
// as time on a shared machine says little.
func BenchmarkStoreUplinkRecord(b *testing.B) {
	const size = 100_000
	e := newTestEnv(b, 1, time.Hour)
	u := NewStoreUplink(e, UplinkConfig{Worker: "standalone"}, NewMemory(size))
	rnd := rand.New(rand.NewPCG(1, 2))
	ids := make([]string, 1<<18)
	for i := range ids {
		ids[i] = fmt.Sprintf("%016x", rnd.Uint64())
	}
	sqls := make([]string, 4096)
	for i := range sqls {
		sqls[i] = "SELECT abalance FROM pgbench_accounts WHERE aid = " + strconv.Itoa(1+i*7919%100_000) + ";"
	}
	trace := []string{"protocol: matched -> pg (postgresql)"}
	at := e.Now()
	add := func(i int) {
		rec := Record{QueryID: ids[i%len(ids)], User: "postgres", Protocol: "postgresql", Group: "pg", Cluster: "pg",
			SQL: sqls[i%len(sqls)], Status: StatusSucceeded, RoutingTrace: trace, StartedAt: at, EndedAt: at, Rows: 1, Bytes: 60}
		u.AddRecord(&rec)
	}
	for i := range size {
		add(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		add(size + i)
	}
}
