package history

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// BenchmarkUplinkAdd is the cost Add puts on a finished query's goroutine (before the client
// gets its answer). "prepared" repeats one statement text (pgbench -S over the extended
// protocol); "literals" has a fresh literal in every text (pgbench -S over the simple protocol).
// Nothing sends: the queue stays full and Add drops the oldest record, its steady state when
// the flusher lags.
func BenchmarkUplinkAdd(b *testing.B) {
	for _, c := range []struct {
		name string
		sql  func(i int) string
	}{
		{"prepared", func(int) string { return "SELECT abalance FROM pgbench_accounts WHERE aid = $1" }},
		{"literals", func(i int) string {
			return "SELECT abalance FROM pgbench_accounts WHERE aid = " + strconv.Itoa(1+i%100_000) + ";"
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			e := newTestEnv(b, 1, time.Hour)
			u := NewUplink(e, UplinkConfig{Worker: "w1"}, func(context.Context, *QueryRecordBatchV1) error { return nil })
			sqls := make([]string, 4096)
			for i := range sqls {
				sqls[i] = c.sql(i * 7919)
			}
			rec := mkRec(e, 1)
			rec.RoutingTrace = []string{"tags: no", "user: matched -> adhoc (user alice)"}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				rec.SQL = sqls[i%len(sqls)]
				u.Add(rec)
			}
		})
	}
}
