package history

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/redact"
)

// A standalone node writes its records straight into its memory store (NewStoreUplink); the
// history API must answer exactly as it did when they went through the uplink's queue,
// batches and sender into the same store: the same records, redacted alike under each policy
// (set between records), with the same ids refused, held or forgotten, and the same counters.
func TestDirectWriteStoresWhatTheUplinkSends(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		e := newTestEnv(t, 1, time.Hour)
		size := rapid.IntRange(1, 12).Draw(rt, "size")
		viaQueue, direct := NewMemory(size), NewMemory(size)
		cfg := UplinkConfig{Worker: "standalone", Policy: drawPolicy(rt, "policy")}
		queued := NewUplink(e, cfg, NewLocalSender(viaQueue))
		written := NewStoreUplink(e, cfg, direct)
		if written.direct == nil || NewStoreUplink(e, cfg, countingStore{viaQueue}).direct != nil {
			rt.Fatal("only a *Memory is written directly")
		}
		ctx := context.Background()
		for i := range rapid.IntRange(0, 40).Draw(rt, "records") {
			if rapid.IntRange(0, 5).Draw(rt, "newPolicy") == 0 {
				p := drawPolicy(rt, "setPolicy")
				if queued.SetPolicy(p) != nil || written.SetPolicy(p) != nil {
					rt.Fatal("SetPolicy failed")
				}
			}
			rec := drawRecord(rt, e.Now().Add(time.Duration(i)*time.Millisecond))
			twin := rec
			twin.RoutingTrace = append([]string(nil), rec.RoutingTrace...)
			queued.AddRecord(&rec)
			written.AddRecord(&twin)
			if err := queued.flush(ctx); err != nil { // sent before the policy can change
				rt.Fatalf("flush: %v", err)
			}
		}
		if err := queued.Shutdown(ctx); err != nil {
			rt.Fatalf("shutdown: %v", err)
		}
		if err := written.Shutdown(ctx); err != nil {
			rt.Fatalf("direct shutdown: %v", err)
		}
		late := drawRecord(rt, e.Now())
		lateTwin := late
		queued.AddRecord(&late)
		written.AddRecord(&lateTwin)
		if a, b := queued.Counters(), written.Counters(); a != b {
			rt.Fatalf("counters: through the queue %+v, direct %+v", a, b)
		}
		all := Filter{Limit: QueryLimitMax}
		want, _ := viaQueue.Query(ctx, all)
		got, _ := direct.Query(ctx, all)
		if !reflect.DeepEqual(want, got) {
			rt.Fatalf("direct store holds\n%+v\nthe uplink's\n%+v", got.Records, want.Records)
		}
	})
}

// countingStore is a store that embeds a Memory (the simulator's kind: it counts what it is
// given), which must get the uplink's batches.
type countingStore struct{ *Memory }

func drawPolicy(rt *rapid.T, label string) redact.Policy {
	return rapid.SampledFrom([]redact.Policy{redact.None, redact.MaskLiterals, redact.Metadata}).Draw(rt, label)
}

// drawRecord is a record as the core hands it, or a broken one: ids that repeat (held or
// foreign), texts with literals, numbers, quotes and comments, errors, traces, names past their
// limit, negative counts, unknown statuses and missing times.
func drawRecord(rt *rapid.T, at time.Time) Record {
	words := []string{"SELECT", "a", "FROM t", "WHERE", "id =", "42", "7", "'secret'", "\"Q1\"", "x1", "-- note\n", "/* c */", "IN (1, 2, 3)", ";", "`b`"}
	var sql []string
	for range rapid.IntRange(0, 10).Draw(rt, "words") {
		sql = append(sql, rapid.SampledFrom(words).Draw(rt, "word"))
	}
	rec := Record{
		QueryID:  rapid.SampledFrom([]string{"", "0000000000000001", "00000000000000a2", "0000000000000003", "q-4", "q-5", "00000000000000F6"}).Draw(rt, "id"),
		Worker:   rapid.SampledFrom([]string{"", "", "", "other"}).Draw(rt, "worker"),
		User:     rapid.SampledFrom([]string{"alice", "bob", strings.Repeat("u", NameLengthMax+3)}).Draw(rt, "user"),
		Protocol: rapid.SampledFrom([]string{"postgres", "mysql", "trino", ""}).Draw(rt, "protocol"),
		Group:    "g", Cluster: rapid.SampledFrom([]string{"", "c1"}).Draw(rt, "cluster"),
		SQL:     strings.Join(sql, " "),
		Status:  Status(rapid.SampledFrom([]string{"succeeded", "failed", "cancelled", "rejected", "odd"}).Draw(rt, "status")),
		QueueMs: rapid.Int64Range(-2, 5).Draw(rt, "queue"), ExecMs: rapid.Int64Range(-2, 5).Draw(rt, "exec"),
		Rows: rapid.Int64Range(-1, 3).Draw(rt, "rows"), Bytes: rapid.Int64Range(-1, 3).Draw(rt, "bytes"),
		CacheHit: rapid.Bool().Draw(rt, "hit"),
	}
	if rapid.Bool().Draw(rt, "failed") {
		rec.ErrorCode, rec.Error = "42P01", "relation \"t\" does not exist near 'secret' 42"
	}
	for range rapid.IntRange(0, 2).Draw(rt, "steps") {
		rec.RoutingTrace = append(rec.RoutingTrace, rapid.SampledFrom([]string{"header#0: matched -> g (user alice)", "tags: no (tag 'x' = 5)"}).Draw(rt, "step"))
	}
	switch rapid.IntRange(0, 3).Draw(rt, "times") {
	case 0: // none: stamped at Add
	case 1:
		rec.StartedAt = at
	default:
		rec.StartedAt, rec.EndedAt = at, at.Add(time.Duration(rapid.IntRange(-3, 3).Draw(rt, "took"))*time.Microsecond+time.Nanosecond)
	}
	return rec
}
