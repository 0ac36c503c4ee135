package history

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/internal/sqltok"
)

const secret = "hunter2"

// secretRec is a record whose SQL, error and routing trace quote the secret.
func secretRec(e *testEnv, i int) Record {
	r := mkRec(e, i)
	r.SQL = "select * from users where password = '" + secret + "' and pin = 4711"
	r.Error = "duplicate key value: Key (password)=(" + secret + ")"
	r.RoutingTrace = []string{"user: matched -> adhoc (password '" + secret + "')"}
	return r
}

// Add must do no redaction (it runs on the query's path): the record sits in the queue raw and
// the redaction memo is untouched.
func TestUplinkAddDoesNotRedact(t *testing.T) {
	e := newTestEnv(t, 20, time.Hour)
	u := NewUplink(e, UplinkConfig{Worker: "w1"}, func(context.Context, *QueryRecordBatchV1) error { return nil })
	r := secretRec(e, 1)
	u.Add(r)
	if u.queue.len() != 1 {
		t.Fatalf("queue holds %d records, want 1", u.queue.len())
	}
	q := u.queue.buf[u.queue.head]
	if q.policy != redact.MaskLiterals || q.rec.SQL != r.SQL || q.rec.Error != r.Error || q.rec.SQLDigest != "" {
		t.Fatalf("Add did more than queue the raw record: %+v", q)
	}
	if u.memo != nil {
		t.Fatal("Add consulted the redaction memo")
	}
}

// Whatever way a record goes (first attempt, retry after an outage, retry after a lost reply),
// the send func never sees the secret, and a retried record's digest stays the digest of the
// original SQL.
func TestUplinkSecretNeverReachesTheSink(t *testing.T) {
	e := newTestEnv(t, 21, 2*time.Minute)
	p := newEndpoint(e)
	p.down = true
	e.At(10*time.Second, func() { p.down = false; p.lostReply = true })
	e.At(20*time.Second, func() { p.lostReply = false })
	attempts := 0
	send := func(ctx context.Context, b *QueryRecordBatchV1) error {
		attempts++
		if body := string(EncodeBatch(b)); strings.Contains(body, secret) || strings.Contains(body, "4711") {
			t.Fatalf("the secret left the uplink: %s", body)
		}
		return p.send(ctx, b)
	}
	u := NewUplink(e, UplinkConfig{Worker: "w1", BatchMax: 3}, send)
	for i := range 10 {
		e.At(time.Duration(i)*time.Second, func() { u.Add(secretRec(e, i)) })
	}
	u.Start(context.Background())
	e.Run()
	if c := u.Counters(); c.Sent != 10 || p.store.Len() != 10 || p.received <= 10 || attempts <= 4 {
		t.Fatalf("counters %+v, %d stored, %d received after %d attempts: want all sent, with retries", c, p.store.Len(), p.received, attempts)
	}
	want := sqltok.DigestNormalized(sqltok.NormalizeDialect(secretRec(e, 0).SQL, sqltok.DialectForProtocol("postgres")))
	page, _ := p.store.Query(context.Background(), Filter{})
	for _, r := range page.Records {
		if r.SQLDigest != want || !strings.Contains(r.SQL, "password = ?") {
			t.Fatalf("record %s: SQL %q digest %s, want the masked SQL with digest %s", r.QueryID, r.SQL, r.SQLDigest, want)
		}
	}
}

// A huge statement is cut when queued (bounded memory) and the cut can fall inside a literal:
// the literal is still masked, not sent.
func TestUplinkHugeStatementIsBoundedAndStillRedacted(t *testing.T) {
	e := newTestEnv(t, 22, time.Hour)
	p := newEndpoint(e)
	u := NewUplink(e, UplinkConfig{Worker: "w1"}, p.send)
	r := mkRec(e, 1)
	r.SQL = "select '" + strings.Repeat(secret, rawSlack*SQLLengthMax/len(secret)+1) + "'"
	r.Error = strings.Repeat("x", rawSlack*ErrorLengthMax+1)
	u.Add(r)
	q := u.queue.buf[u.queue.head].rec
	if len(q.SQL) > rawSlack*SQLLengthMax || len(q.Error) > rawSlack*ErrorLengthMax {
		t.Fatalf("queued raw record holds %d bytes of SQL, %d of error", len(q.SQL), len(q.Error))
	}
	if err := u.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	page, _ := p.store.Query(context.Background(), Filter{})
	if len(page.Records) != 1 || page.Records[0].SQL != "select ?" {
		t.Fatalf("stored %+v, want one record with SQL %q", page.Records, "select ?")
	}
}

// A batch that failed under none goes back raw: when the policy is tightened before the retry,
// the retry sends no text.
func TestUplinkTightenedPolicyAppliesToRetries(t *testing.T) {
	e := newTestEnv(t, 23, time.Hour)
	p := newEndpoint(e)
	var sent []Record
	send := func(ctx context.Context, b *QueryRecordBatchV1) error {
		sent = append(sent, b.Records...)
		return p.send(ctx, b)
	}
	u := NewUplink(e, UplinkConfig{Worker: "w1", Policy: redact.None}, send)
	u.Add(secretRec(e, 1))
	p.down = true
	if err := u.flush(context.Background()); err == nil || len(sent) != 1 || !strings.Contains(sent[0].SQL, secret) {
		t.Fatalf("first attempt under none: err %v, sent %+v", err, sent)
	}
	p.down = false
	if err := u.SetPolicy(redact.Metadata); err != nil {
		t.Fatal(err)
	}
	if err := u.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := sent[len(sent)-1]; len(sent) != 2 || got.SQL != "" || got.Error != "" || got.RoutingTrace != nil || got.SQLDigest != sent[0].SQLDigest {
		t.Fatalf("retry after tightening to metadata sent %+v", got)
	}
}

// Every name of a record is cut to NameLengthMax on its way out (and bounded when queued),
// whichever one is long and whatever the others: the uplink checks their lengths before it
// loops over them.
func TestUplinkCutsEveryLongName(t *testing.T) {
	long := strings.Repeat("n", NameLengthMax+1)
	set := []func(*Record){
		func(r *Record) { r.Worker = long }, func(r *Record) { r.User = long },
		func(r *Record) { r.Protocol = long }, func(r *Record) { r.Group = long },
		func(r *Record) { r.Cluster = long }, func(r *Record) { r.ErrorCode = long },
	}
	for i, setLong := range set {
		e := newTestEnv(t, uint64(30+i), time.Hour)
		var got []Record
		u := NewUplink(e, UplinkConfig{Worker: "w1"}, func(_ context.Context, b *QueryRecordBatchV1) error {
			got = append(got, b.Records...)
			return nil
		})
		r := mkRec(e, i)
		setLong(&r)
		u.Add(r)
		q := u.queue.buf[u.queue.head].rec
		for _, s := range []string{q.Worker, q.User, q.Protocol, q.Group, q.Cluster, q.ErrorCode} {
			if len(s) > NameLengthMax {
				t.Fatalf("field %d: queued a name of %d bytes", i, len(s))
			}
		}
		if err := u.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("field %d: sent %d records", i, len(got))
		}
		g := got[0]
		for _, s := range []string{g.Worker, g.User, g.Protocol, g.Group, g.Cluster, g.ErrorCode} {
			if len(s) > NameLengthMax {
				t.Fatalf("field %d: sent a name of %d bytes: %+v", i, len(s), g)
			}
		}
	}
}
