package history

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// The redaction memo must never change what a record becomes: repeated statements (memo hits),
// a flood of unique ones (memo emptied, then bypassed) and every policy give exactly what
// redact.Apply gives.
func TestUplinkRedactionMemoSameAsApply(t *testing.T) {
	e := newTestEnv(t, 4, time.Minute)
	u := NewUplink(e, UplinkConfig{Worker: "w1"}, func(context.Context, *QueryRecordBatchV1) error { return nil })
	d := sqltok.DialectForProtocol("postgres")
	check := func(p redact.Policy, sql string) {
		t.Helper()
		want := redact.Apply(p, d, redact.Query{SQL: sql})
		got := u.redactSQL(p, d, sql, nil)
		if got.SQL != want.SQL || got.Digest != want.Digest {
			t.Fatalf("policy %s, %q: memo gave (%q, %s), Apply (%q, %s)", p, sql, got.SQL, got.Digest, want.SQL, want.Digest)
		}
	}
	for _, p := range []redact.Policy{redact.MaskLiterals, redact.None, redact.Metadata} {
		for range 3 {
			check(p, "select abalance from pgbench_accounts where aid = $1")
			check(p, "select * from t where name = 'alice' and id = 7")
		}
	}
	for i := range 3 {
		check(redact.None, fmt.Sprintf("select abalance from pgbench_accounts where aid = %d", i))
		check(redact.MaskLiterals, fmt.Sprintf("select abalance from pgbench_accounts where aid = %d", i))
	}
	// One text in two dialects, in turn: a double-quoted word is MySQL's string, PostgreSQL's
	// name (the memo's last statement is its dialect's only).
	for range 2 {
		for _, d2 := range []sqltok.Dialect{sqltok.DialectForProtocol("mysql"), d} {
			sql := `select "secret" from t where a = 5`
			want := redact.Apply(redact.MaskLiterals, d2, redact.Query{SQL: sql})
			if got := u.redactSQL(redact.MaskLiterals, d2, sql, nil); got.SQL != want.SQL || got.Digest != want.Digest {
				t.Fatalf("dialect %v: memo gave (%q, %s), Apply (%q, %s)", d2, got.SQL, got.Digest, want.SQL, want.Digest)
			}
		}
	}
	for i := range 3 * sqlMemoMax {
		check(redact.MaskLiterals, fmt.Sprintf("select abalance from pgbench_accounts_%d where aid = 1", i))
	}
	if u.memoSkip.Load() == 0 {
		t.Fatal("a memo that only missed is still consulted")
	}
	check(redact.None, "select 1")
}

// At a busy node's rate the sender's garbage is most of what the collector works for: once
// warm, sending a batch of repeated statements allocates a few objects for the batch (its id,
// the send's deadline) and none per record. The batch, its prepared copy, its ids and the
// memo's key reuse their buffers from batch to batch; a routing trace is redacted once.
func TestUplinkSendAllocatesPerBatchNotPerRecord(t *testing.T) {
	e := newTestEnv(t, 5, time.Hour)
	u := NewUplink(e, UplinkConfig{Worker: "w1", BatchMax: 500}, func(context.Context, *QueryRecordBatchV1) error { return nil })
	rec := mkRec(e, 1)
	rec.RoutingTrace = []string{"tags: no", "user: matched -> adhoc (user alice)"} // as most records have
	batch := func() {
		for range 500 {
			u.Add(rec)
		}
		if err := u.flush(context.Background()); err != nil || u.Counters().Pending != 0 {
			t.Fatalf("flush: %v, %+v", err, u.Counters())
		}
	}
	batch() // the buffers and the memo, warmed
	if n := testing.AllocsPerRun(20, batch); n > 20 {
		t.Fatalf("%.0f allocations per batch of 500 records: want a few per batch", n)
	}
}

// The trace memo must never change what a record's routing trace becomes: the same trace
// again (a hit), under another policy, another trace, one past the wire's limits, and a flood
// of distinct traces (the memo emptied) all give what redact.Apply gives, cut to the limits;
// and the memo's shared slice is never the caller's.
func TestUplinkTraceMemoSameAsApply(t *testing.T) {
	e := newTestEnv(t, 6, time.Minute)
	u := NewUplink(e, UplinkConfig{Worker: "w1"}, func(context.Context, *QueryRecordBatchV1) error { return nil })
	check := func(p redact.Policy, trace []string) {
		t.Helper()
		in := slices.Clone(trace)
		got := u.redactTrace(p, trace)
		want := redact.Apply(p, sqltok.Generic, redact.Query{RoutingTrace: trace}).RoutingTrace
		if len(want) > TraceStepsMax {
			want = want[:TraceStepsMax]
		}
		for i := range want {
			want[i] = truncate(want[i], TraceStepLenMax)
		}
		if !slices.Equal(got, want) || (got == nil) != (want == nil) {
			t.Fatalf("policy %s, %q: memo gave %q, Apply %q", p, trace, got, want)
		}
		if !slices.Equal(trace, in) || len(got) > 0 && &got[0] == &trace[0] {
			t.Fatalf("policy %s: the caller's trace %q was changed or shared", p, trace)
		}
	}
	secret := []string{"user: matched -> adhoc (password 's3cret', pin 1234)"}
	long := []string{strings.Repeat("x", 2*TraceStepLenMax)}
	many := make([]string, TraceStepsMax+3)
	for i := range many {
		many[i] = fmt.Sprintf("r%d: no", i)
	}
	for range 2 {
		for _, p := range []redact.Policy{redact.MaskLiterals, redact.None, redact.Metadata} {
			check(p, secret)
			check(p, []string{"user: matched -> adhoc (password 'other', pin 99)"})
			check(p, long)
			check(p, many)
			check(p, []string{})
			check(p, nil)
		}
	}
	for i := range 2 * traceMemoMax {
		check(redact.MaskLiterals, []string{fmt.Sprintf("rule%d: matched -> g ('v%d')", i, i)})
	}
	check(redact.MaskLiterals, secret)
	// The same slice again and again (a node's records share their trace's slice), the policy
	// changing between them: the last trace's answer is its own policy's only.
	for _, p := range []redact.Policy{redact.None, redact.None, redact.Metadata, redact.MaskLiterals, redact.MaskLiterals, redact.None} {
		check(p, secret)
	}
}
