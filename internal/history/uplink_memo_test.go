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
