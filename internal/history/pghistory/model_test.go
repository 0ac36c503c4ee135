package pghistory

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/history/historytest"
	"pgregory.net/rapid"
)

// foreignIDs is the ids an Insert refused as another worker's ("" for none); any other error
// fails rt.
func foreignIDs(rt *rapid.T, err error) string {
	var fe *history.ForeignError
	if err != nil && !errors.As(err, &fe) {
		rt.Fatalf("insert: %v", err)
	}
	if fe == nil {
		return ""
	}
	return strings.Join(fe.IDs, ",")
}

// TestModelAgainstMemory runs one random sequence of inserts (retries and duplicates included,
// and ids another worker recorded first)
// and paged, filtered queries against Postgres and against history.Memory, and requires the
// same answers: the simulator's store means what Postgres means.
func TestModelAgainstMemory(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	pick := func(rt *rapid.T, label string, from ...string) string { return rapid.SampledFrom(from).Draw(rt, label) }
	statuses := []history.Status{history.StatusSucceeded, history.StatusFailed, history.StatusCancelled, history.StatusRejected}
	genRecord := rapid.Custom(func(rt *rapid.T) history.Record {
		// Few ids and coarse times, so duplicates and equal start times are common.
		at := historytest.Epoch.Add(time.Duration(rapid.IntRange(0, 20).Draw(rt, "sec"))*time.Second +
			time.Duration(rapid.IntRange(0, 3).Draw(rt, "nanos"))*333*time.Nanosecond)
		var trace []string
		if rapid.Bool().Draw(rt, "traced") {
			trace = []string{pick(rt, "trace", "fallback: matched", "header: no (x-tenant 'a')")}
		}
		return history.Record{
			QueryID: fmt.Sprintf("%s%d", pick(rt, "idp", "q", "Q", "q-", "é"), rapid.IntRange(0, 40).Draw(rt, "id")),
			Worker:  pick(rt, "worker", "w1", "w2"), User: pick(rt, "user", "alice", "bob", ""),
			Group: pick(rt, "group", "g1", "g2"), Cluster: pick(rt, "cluster", "c1", "c2"),
			Status: rapid.SampledFrom(statuses).Draw(rt, "status"), SQL: "select ?", SQLDigest: "d",
			QueueMs: int64(rapid.IntRange(0, 5).Draw(rt, "q")), Rows: int64(rapid.IntRange(0, 5).Draw(rt, "rows")),
			CacheHit: rapid.Bool().Draw(rt, "cache"), RoutingTrace: trace, StartedAt: at, EndedAt: at.Add(time.Millisecond),
		}
	})
	rapid.Check(t, func(rt *rapid.T) {
		if _, err := pool.Exec(ctx, "DELETE FROM query_records"); err != nil {
			rt.Fatal(err)
		}
		mem := history.NewMemory(1 << 16)
		for i := range rapid.IntRange(1, 8).Draw(rt, "steps") {
			if rapid.IntRange(0, 2).Draw(rt, "op") > 0 {
				recs := rapid.SliceOfN(genRecord, 0, 30).Draw(rt, "batch")
				nm, errm := mem.Insert(ctx, recs)
				np, errp := s.Insert(ctx, recs)
				if nm != np || foreignIDs(rt, errm) != foreignIDs(rt, errp) {
					rt.Fatalf("step %d: insert: memory %d (%v), postgres %d (%v)", i, nm, errm, np, errp)
				}
				continue
			}
			f := history.Filter{
				Worker: pick(rt, "fworker", "", "w1"), User: pick(rt, "fuser", "", "alice", "bob"),
				Group: pick(rt, "fgroup", "", "g2"), Status: history.Status(pick(rt, "fstatus", "", "failed")),
				Limit: rapid.IntRange(1, 7).Draw(rt, "limit"),
			}
			if rapid.Bool().Draw(rt, "ranged") {
				f.Since = historytest.Epoch.Add(time.Duration(rapid.IntRange(0, 10).Draw(rt, "since")) * time.Second)
				f.Until = f.Since.Add(time.Duration(rapid.IntRange(0, 12000).Draw(rt, "span")) * time.Millisecond)
			}
			for page := 0; ; page++ {
				pm, errm := mem.Query(ctx, f)
				pp, errp := s.Query(ctx, f)
				if errm != nil || errp != nil {
					rt.Fatalf("query: %v / %v", errm, errp)
				}
				if !reflect.DeepEqual(pm, pp) {
					rt.Fatalf("step %d page %d, filter %+v:\nmemory   %+v\npostgres %+v", i, page, f, pm, pp)
				}
				if pm.Next == "" || page > 50 {
					break
				}
				f.Before = pm.Next
			}
		}
	})
}
