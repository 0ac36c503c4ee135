package history

import (
	"context"
	"fmt"
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
		got := u.redactSQL(p, d, sql)
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
// memo's key reuse their buffers from batch to batch.
func TestUplinkSendAllocatesPerBatchNotPerRecord(t *testing.T) {
	e := newTestEnv(t, 5, time.Hour)
	u := NewUplink(e, UplinkConfig{Worker: "w1", BatchMax: 500}, func(context.Context, *QueryRecordBatchV1) error { return nil })
	rec := mkRec(e, 1)
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
