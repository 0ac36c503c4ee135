package history

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/node/workerapi"
	"pgregory.net/rapid"
)

// endpoint is a fake control plane for the uplink: it stores batches in a Memory store and can
// be down, reject batches, or store a batch and still fail the call (a lost answer).
type endpoint struct {
	env       *testEnv
	store     *Memory
	down      bool
	lostReply bool
	lostAny   bool // a reply was ever lost: the store may hold records the uplink still has
	status    int
	attempts  []time.Time
	received  int // records delivered, duplicates included
}

func newEndpoint(e *testEnv) *endpoint { return &endpoint{env: e, store: NewMemory(1 << 20)} }

func (p *endpoint) send(ctx context.Context, b *QueryRecordBatchV1) error {
	p.attempts = append(p.attempts, p.env.Now())
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(b.Records) == 0 || len(b.Records) > BatchRecordsMax || b.BatchID == "" {
		panic(fmt.Sprintf("uplink sent a bad batch: %d records, id %q", len(b.Records), b.BatchID))
	}
	switch {
	case p.down:
		return &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	case p.status != 0 && !p.holds(b):
		return &workerapi.StatusError{Status: p.status}
	}
	if _, err := p.store.Insert(ctx, b.Records); err != nil {
		return err
	}
	p.received += len(b.Records)
	if p.lostReply {
		p.lostAny = true
		return errors.New("read: connection reset")
	}
	return nil
}

// holds reports whether the store has every record of b: a control plane refuses a batch for
// what it carries, so one it took before (its answer lost) it takes again.
func (p *endpoint) holds(b *QueryRecordBatchV1) bool {
	for _, r := range b.Records {
		if _, held := p.store.ids.get(keyOf(r.QueryID)); !held {
			return false
		}
	}
	return true
}

func mkRec(e *testEnv, i int) Record {
	return Record{
		QueryID: fmt.Sprintf("q%06d", i), User: "alice", Protocol: "postgres", Group: "adhoc", Cluster: "pg-1",
		SQL: fmt.Sprintf("select * from t where id = %d and name = 'bob%d'", 1000000+i, i), Status: StatusSucceeded,
		StartedAt: e.Now(), EndedAt: e.Now().Add(time.Millisecond), Rows: 1,
	}
}

// checkConservation: every record added is sent, dropped or pending, and the store holds each
// sent record once.
func checkConservation(t interface {
	Helper()
	Fatalf(string, ...any)
}, u *Uplink, p *endpoint, added int) workerapi.HistoryCounters {
	t.Helper()
	c := u.Counters()
	if c.Sent+c.Dropped+c.Pending != uint64(added) {
		t.Fatalf("conservation broken: sent %d + dropped %d + pending %d != added %d", c.Sent, c.Dropped, c.Pending, added)
	}
	if stored := uint64(p.store.Len()); stored != c.Sent && !p.lostAny || stored < c.Sent || stored > c.Sent+c.Pending {
		t.Fatalf("store holds %d records, uplink says %d sent, %d pending", stored, c.Sent, c.Pending)
	}
	if p.received != p.store.Len() && !p.lostAny {
		t.Fatalf("endpoint received %d records but stored %d distinct: duplicates sent", p.received, p.store.Len())
	}
	return c
}

func TestUplinkSendsEveryIntervalInBatches(t *testing.T) {
	e := newTestEnv(t, 1, 2500*time.Millisecond)
	p := newEndpoint(e)
	u := NewUplink(e, UplinkConfig{Worker: "w1", BatchMax: 500}, p.send)
	for i := range 300 { // less than a batch: it waits for the interval
		u.Add(mkRec(e, i))
	}
	u.Start(context.Background())
	e.Run()
	if len(p.attempts) != 1 || !p.attempts[0].Equal(testEpoch.Add(2*time.Second)) {
		t.Fatalf("attempts at %v, want one batch at +2s", p.attempts)
	}
	c := checkConservation(t, u, p, 300)
	if c.Sent != 300 || c.Pending != 0 {
		t.Fatalf("counters %+v", c)
	}
	page, _ := p.store.Query(context.Background(), Filter{Limit: 1})
	got := page.Records[0]
	if got.Worker != "w1" || strings.Contains(got.SQL, "bob") || strings.Contains(got.SQL, "100") || got.SQLDigest == "" {
		t.Fatalf("record not redacted under the default maskLiterals policy: %+v", got)
	}
}

// A whole batch does not wait out the interval: a busy node sends at its own pace instead of
// overflowing its buffer between intervals (a standalone node under pgbench dropped 85% of its
// records that way).
func TestUplinkSendsAWholeBatchWithoutWaiting(t *testing.T) {
	e := newTestEnv(t, 1, 10*time.Second)
	p := newEndpoint(e)
	u := NewUplink(e, UplinkConfig{Worker: "w1", BatchMax: 500, BufferMax: 1000, FlushInterval: 5 * time.Second}, p.send)
	next := 0
	for _, at := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond} {
		e.At(at, func() {
			for range 600 {
				u.Add(mkRec(e, next))
				next++
			}
		})
	}
	u.Start(context.Background())
	e.Run()
	if len(p.attempts) < 3 || !p.attempts[0].Equal(testEpoch.Add(100*time.Millisecond)) {
		t.Fatalf("attempts at %v: the first whole batch must go at +100ms, not at the 5s interval", p.attempts)
	}
	c := checkConservation(t, u, p, 1800)
	if c.Dropped != 0 || c.Sent != 1800 {
		t.Fatalf("1,800 records in 300ms through a 1,000-record buffer: %+v, want all sent", c)
	}
}

func TestUplinkDropsOldestWhileDownAndCountsThem(t *testing.T) {
	e := newTestEnv(t, 2, 120*time.Second)
	p := newEndpoint(e)
	p.down = true
	reg := prometheus.NewRegistry()
	u := NewUplink(e, UplinkConfig{Worker: "w1", BufferMax: 100, BatchMax: 20}, p.send)
	if err := u.Register(reg); err != nil {
		t.Fatal(err)
	}
	added := 0
	for i := range 300 {
		e.At(time.Duration(i)*100*time.Millisecond, func() { u.Add(mkRec(e, i)); added++ })
	}
	e.At(40*time.Second, func() { p.down = false })
	u.Start(context.Background())
	e.Run()
	c := checkConservation(t, u, p, added)
	if added != 300 || c.Pending != 0 || c.Dropped != 200 || c.Sent != 100 {
		t.Fatalf("added %d, counters %+v: want 100 sent, 200 dropped", added, c)
	}
	// The newest survive: the last 100 records were kept.
	page, _ := p.store.Query(context.Background(), Filter{Limit: 1000})
	for _, r := range page.Records {
		var i int
		fmt.Sscanf(r.QueryID, "q%d", &i)
		if i < 200 {
			t.Fatalf("record %s survived but an older one should have been dropped first", r.QueryID)
		}
	}
	if got := gatherValue(t, reg, "queryflux_history_dropped_total"); got != 200 {
		t.Fatalf("queryflux_history_dropped_total = %v, want 200", got)
	}
	// Backoff: the gaps between failed attempts grow, with jitter, up to RetryMax.
	var gaps []time.Duration
	for i := 1; i < len(p.attempts) && p.attempts[i].Before(testEpoch.Add(40*time.Second)); i++ {
		gaps = append(gaps, p.attempts[i].Sub(p.attempts[i-1]))
	}
	if len(gaps) < 4 || gaps[3] <= gaps[0] || gaps[len(gaps)-1] > UplinkRetryMaxDefault*12/10 {
		t.Fatalf("retry gaps %v do not back off", gaps)
	}
}

func gatherValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}

func TestUplinkFinalFlushSendsEverything(t *testing.T) {
	e := newTestEnv(t, 3, time.Hour)
	p := newEndpoint(e)
	u := NewUplink(e, UplinkConfig{Worker: "w1", BatchMax: 7}, p.send)
	u.Start(context.Background())
	for i := range 50 {
		u.Add(mkRec(e, i))
	}
	if err := u.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.Run() // the flusher task sees its cancelled context and ends
	c := checkConservation(t, u, p, 50)
	if c.Sent != 50 || e.Now() != testEpoch {
		t.Fatalf("final flush: counters %+v at %v", c, e.Now())
	}
	u.Add(mkRec(e, 99))
	if c := u.Counters(); c.Dropped != 1 {
		t.Fatalf("a record added after Shutdown must count as dropped: %+v", c)
	}
}

func TestUplinkFinalFlushGivesUpAtDeadline(t *testing.T) {
	e := newTestEnv(t, 4, time.Hour)
	p := newEndpoint(e)
	p.down = true
	u := NewUplink(e, UplinkConfig{Worker: "w1", FinalFlushTimeout: 3 * time.Second}, p.send)
	for i := range 10 {
		u.Add(mkRec(e, i))
	}
	err := u.Shutdown(context.Background())
	if err == nil || !strings.Contains(err.Error(), "10 records unsent") {
		t.Fatalf("Shutdown = %v, want an error about 10 unsent records", err)
	}
	if got := e.Now().Sub(testEpoch); got != 3*time.Second || len(p.attempts) < 3 {
		t.Fatalf("gave up after %v with %d attempts, want 3s and several retries", got, len(p.attempts))
	}
	if c := checkConservation(t, u, p, 10); c.Dropped != 10 {
		t.Fatalf("counters %+v", c)
	}
}

func TestUplinkRejectedBatchIsDroppedNotRetried(t *testing.T) {
	e := newTestEnv(t, 5, 10*time.Second)
	p := newEndpoint(e)
	p.status = http.StatusBadRequest
	u := NewUplink(e, UplinkConfig{Worker: "w1"}, p.send)
	for i := range 3 {
		u.Add(mkRec(e, i))
	}
	u.Start(context.Background())
	e.Run()
	if c := checkConservation(t, u, p, 3); c.Dropped != 3 || len(p.attempts) != 1 {
		t.Fatalf("counters %+v after %d attempts", c, len(p.attempts))
	}
}

func TestUplinkRetryAfterLostReplyStoresOnce(t *testing.T) {
	e := newTestEnv(t, 6, 30*time.Second)
	p := newEndpoint(e)
	p.lostReply = true
	e.At(5*time.Second, func() { p.lostReply = false })
	u := NewUplink(e, UplinkConfig{Worker: "w1"}, p.send)
	for i := range 20 {
		u.Add(mkRec(e, i))
	}
	u.Start(context.Background())
	e.Run()
	if p.received <= 20 || p.store.Len() != 20 || u.Counters().Sent != 20 {
		t.Fatalf("received %d, stored %d, counters %+v: want retries stored once", p.received, p.store.Len(), u.Counters())
	}
}

// A batch whose answer was lost may be stored: while the control plane stays down and the
// buffer overflows, it is kept apart and sent again first, never dropped for room, so no
// stored record is also counted dropped (the counts would say one record more than there was).
func TestUplinkKeepsABatchTheControlPlaneMayHold(t *testing.T) {
	e := newTestEnv(t, 7, 60*time.Second)
	p := newEndpoint(e)
	dropped := map[string]bool{}
	u := NewUplink(e, UplinkConfig{Worker: "w1", BufferMax: 10, BatchMax: 5, FlushInterval: time.Second,
		OnDrop: func(id string) { dropped[id] = true }}, p.send)
	for i := range 5 {
		u.Add(mkRec(e, i))
	}
	p.lostReply = true
	e.At(1500*time.Millisecond, func() { p.lostReply, p.down = false, true })
	for i := 5; i < 45; i++ {
		e.At(time.Duration(i)*200*time.Millisecond, func() { u.Add(mkRec(e, i)) })
	}
	e.At(20*time.Second, func() { p.down = false })
	u.Start(context.Background())
	e.Run()
	c := checkConservation(t, u, p, 45)
	for id := range dropped {
		if _, held := p.store.ids.get(keyOf(id)); held {
			t.Fatalf("record %s is stored and was counted dropped (counters %+v)", id, c)
		}
	}
	if c.Pending != 0 || c.Sent != uint64(p.store.Len()) || c.Sent+c.Dropped != 45 || c.Sent != 15 {
		t.Fatalf("counters %+v, %d stored: want the 5 unanswered and the newest 10 sent, the rest dropped", c, p.store.Len())
	}
}

// TestUplinkSetPolicy: the sender redacts a queued record with the stricter of the policy
// active when it was added and the one active when it is sent, so a policy change never lets
// more of a queued record out than either policy allows.
func TestUplinkSetPolicy(t *testing.T) {
	e := newTestEnv(t, 7, time.Hour)
	p := newEndpoint(e)
	u := NewUplink(e, UplinkConfig{Worker: "w1", Policy: redact.None}, p.send)
	add := func(i int) Record {
		r := mkRec(e, i)
		r.Error = "boom 'secret'"
		r.RoutingTrace = []string{"group adhoc"}
		u.Add(r)
		return r
	}
	setPolicy := func(pol redact.Policy) {
		if err := u.SetPolicy(pol); err != nil {
			t.Fatal(err)
		}
	}
	flush := func() {
		if err := u.flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	kept := add(1) // none, sent under none
	flush()
	add(2) // none, then tightened to metadata before it is sent
	setPolicy(redact.Metadata)
	add(3)
	flush()
	add(4) // metadata, then loosened to none before it is sent
	setPolicy(redact.None)
	add(5)
	flush()
	if err := u.SetPolicy("bogus"); err == nil {
		t.Fatal("SetPolicy accepted a bad policy")
	}
	page, _ := p.store.Query(context.Background(), Filter{})
	byID := map[string]Record{}
	for _, rec := range page.Records {
		byID[rec.QueryID] = rec
	}
	for _, i := range []int{1, 5} {
		if got := byID[mkRec(e, i).QueryID]; got.SQL != mkRec(e, i).SQL || got.Error != kept.Error || len(got.RoutingTrace) != 1 {
			t.Fatalf("record %d: policy none changed it: %+v", i, got)
		}
	}
	for _, i := range []int{2, 3, 4} {
		if got := byID[mkRec(e, i).QueryID]; got.SQL != "" || got.Error != "" || got.RoutingTrace != nil || got.SQLDigest != byID[kept.QueryID].SQLDigest {
			t.Fatalf("record %d: policy metadata kept text: %+v", i, got)
		}
	}
}

// TestUplinkThroughIngestHandler runs the uplink's HTTP sender against the real Ingest handler
// (in process, no network): records arrive stamped with the session's worker.
func TestUplinkThroughIngestHandler(t *testing.T) {
	e := newTestEnv(t, 8, time.Hour)
	store := NewMemory(1000)
	ingest := NewIngest(store, func(r *http.Request) (string, error) {
		if tok, _ := workerapi.BearerToken(r); tok == "s3cret" {
			return "worker-a", nil
		}
		return "", errors.New("bad token")
	}, nil)
	client := &http.Client{Transport: handlerTransport{ingest}}
	token := "s3cret"
	u := NewUplink(e, UplinkConfig{Worker: "claims-to-be-b"}, NewHTTPSender(client, "http://cp", func() string { return token }, e.Now))
	for i := range 5 {
		u.Add(mkRec(e, i))
	}
	if err := u.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	page, _ := store.Query(context.Background(), Filter{Worker: "worker-a"})
	if len(page.Records) != 5 {
		t.Fatalf("stored %d records for worker-a, want 5", len(page.Records))
	}
	// A bad token is a 401: retried (the worker re-registers), never dropped as rejected.
	token = "wrong"
	sender := NewHTTPSender(client, "http://cp", func() string { return token }, e.Now)
	err := sender(context.Background(), &QueryRecordBatchV1{BatchID: "b", Records: []Record{mkRec(e, 9)}})
	var se *workerapi.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusUnauthorized || rejected(err) {
		t.Fatalf("bad token: %v", err)
	}
}

type handlerTransport struct{ h http.Handler }

func (h handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	rec := httptest.NewRecorder()
	h.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// checkEveryID: each record added is, by its id, exactly once sent, dropped
// (told to OnDrop) or pending, and OnDrop heard of exactly the drops counted.
func checkEveryID(t *rapid.T, u *Uplink, p *endpoint, added []string, sent, dropped map[string]int) {
	pending := map[string]int{}
	for _, id := range u.PendingIDs() {
		pending[id]++
	}
	total := 0
	for _, n := range dropped {
		total += n
	}
	if c := u.Counters(); uint64(total) != c.Dropped || uint64(len(u.PendingIDs())) != c.Pending {
		t.Fatalf("ids told to OnDrop %d, pending ids %d; counters %+v", total, len(u.PendingIDs()), c)
	}
	for _, id := range added {
		if _, held := p.store.ids.get(keyOf(id)); held && dropped[id] > 0 {
			t.Fatalf("record %s is stored and was counted dropped: the counts say one record more than there was", id)
		}
		if n := sent[id] + dropped[id] + pending[id]; n != 1 {
			t.Fatalf("record %s: sent %d, dropped %d, pending %d times: want exactly once in all", id, sent[id], dropped[id], pending[id])
		}
	}
}

// TestUplinkConservationProperty: whatever the outages, every record is sent once, dropped or
// pending, and nothing reaches the store twice.
func TestUplinkConservationProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		e := newTestEnv(t, rapid.Uint64().Draw(rt, "seed"), 120*time.Second)
		p := newEndpoint(e)
		dropped := map[string]int{}
		cfg := UplinkConfig{Worker: "w", BufferMax: rapid.IntRange(1, 50).Draw(rt, "buffer"), BatchMax: rapid.IntRange(1, 20).Draw(rt, "batch"),
			OnDrop: func(id string) { dropped[id]++ }}
		sent := map[string]int{}
		u := NewUplink(e, cfg, func(ctx context.Context, b *QueryRecordBatchV1) error {
			err := p.send(ctx, b)
			if err == nil {
				for _, r := range b.Records {
					sent[r.QueryID]++
				}
			}
			return err
		})
		added, addedIDs := 0, []string(nil)
		n := rapid.IntRange(0, 200).Draw(rt, "adds")
		for i := range n {
			at := time.Duration(rapid.Int64Range(0, int64(100*time.Second)).Draw(rt, "at"))
			e.At(at, func() { u.Add(mkRec(e, i)); added++; addedIDs = append(addedIDs, mkRec(e, i).QueryID) })
		}
		for range rapid.IntRange(0, 6).Draw(rt, "toggles") {
			at := time.Duration(rapid.Int64Range(0, int64(100*time.Second)).Draw(rt, "toggleAt"))
			e.At(at, func() { p.down = !p.down })
		}
		for range rapid.IntRange(0, 3).Draw(rt, "lostReplies") {
			at := time.Duration(rapid.Int64Range(0, int64(100*time.Second)).Draw(rt, "lostAt"))
			e.At(at, func() { p.lostReply = true })
			e.At(at+time.Second, func() { p.lostReply = false })
		}
		for range rapid.IntRange(0, 2).Draw(rt, "rejections") {
			at := time.Duration(rapid.Int64Range(0, int64(100*time.Second)).Draw(rt, "rejectAt"))
			e.At(at, func() { p.status = http.StatusBadRequest })
			e.At(at+time.Second, func() { p.status = 0 })
		}
		u.Start(context.Background())
		e.Run()
		checkConservation(rt, u, p, added)
		checkEveryID(rt, u, p, addedIDs, sent, dropped)
		p.down = false
		e.horizon = e.now.Add(time.Hour)
		if err := u.Shutdown(context.Background()); err != nil {
			rt.Fatalf("final flush with the endpoint up: %v", err)
		}
		if c := checkConservation(rt, u, p, added); c.Pending != 0 {
			rt.Fatalf("pending after shutdown: %+v", c)
		}
		checkEveryID(rt, u, p, addedIDs, sent, dropped)
	})
}

func TestLocalSenderFeedsTheStore(t *testing.T) {
	e := newTestEnv(t, 9, time.Hour)
	store := NewMemory(10)
	u := NewUplink(e, UplinkConfig{Worker: "standalone"}, NewLocalSender(store))
	u.Add(mkRec(e, 1))
	if err := u.Shutdown(context.Background()); err != nil || store.Len() != 1 {
		t.Fatalf("local sender: %v, %d stored", err, store.Len())
	}
}

func TestUplinkKeepsBatchesUnderTheByteLimit(t *testing.T) {
	e := newTestEnv(t, 10, time.Hour)
	p := newEndpoint(e)
	var sizes []int
	send := func(ctx context.Context, b *QueryRecordBatchV1) error {
		sizes = append(sizes, len(EncodeBatch(b)))
		if _, err := DecodeBatch(EncodeBatch(b)); err != nil {
			return &workerapi.StatusError{Status: http.StatusBadRequest}
		}
		return p.send(ctx, b)
	}
	u := NewUplink(e, UplinkConfig{Worker: "w1", Policy: redact.None}, send)
	big := strings.Repeat("x", SQLLengthMax+100) // truncated to SQLLengthMax by Add
	for i := range 20 {
		r := mkRec(e, i)
		r.SQL = "select '" + big + "'"
		u.Add(r)
	}
	if err := u.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := checkConservation(t, u, p, 20); c.Sent != 20 || len(sizes) < 2 {
		t.Fatalf("counters %+v in %d batches", c, len(sizes))
	}
	for _, n := range sizes {
		if n > BatchBytesMax {
			t.Fatalf("batch of %d bytes exceeds BatchBytesMax", n)
		}
	}
}

func TestRunRetentionPrunesOnSchedule(t *testing.T) {
	e := newTestEnv(t, 11, 3*time.Hour+time.Minute)
	store := NewMemory(100)
	for i := range 5 {
		r := mkRec(e, i)
		r.StartedAt = testEpoch.Add(-time.Duration(5-i) * time.Hour) // 5h .. 1h old at the start
		r.EndedAt = r.StartedAt
		store.Insert(context.Background(), []Record{r})
	}
	keep := 4 * time.Hour
	RunRetention(context.Background(), e, store, func() time.Duration { return keep }, time.Hour)
	// Rounds at +1h, +2h, +3h keep 4h: records started before -3h, -2h, -1h go; the one
	// started exactly at -1h stays.
	page, _ := store.Query(context.Background(), Filter{})
	if len(page.Records) != 1 || page.Records[0].QueryID != "q000004" {
		t.Fatalf("after 3 rounds: %+v", page.Records)
	}
}

// TestHTTPSenderHonoursRetryAfter: a control plane that refuses a batch with 429 or 503 and a
// Retry-After (delay-seconds, or an HTTP date read on the node's clock) hears from the uplink
// again no sooner than it asked, however short the uplink's own backoff; a wait past
// workerapi.RetryAfterMax is cut to it.
func TestHTTPSenderHonoursRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		header func(now time.Time) string
		want   time.Duration
	}{
		{"503 seconds", http.StatusServiceUnavailable, func(time.Time) string { return "20" }, 20 * time.Second},
		{"429 date", http.StatusTooManyRequests, func(now time.Time) string { return now.Add(40 * time.Second).UTC().Format(http.TimeFormat) }, 40 * time.Second},
		{"503 past the cap", http.StatusServiceUnavailable, func(time.Time) string { return "3600" }, workerapi.RetryAfterMax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t, 9, 10*time.Minute)
			store := NewMemory(100)
			ingest := NewIngest(store, func(*http.Request) (string, error) { return "w1", nil }, nil)
			var attempts []time.Time
			client := &http.Client{Transport: handlerTransport{http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				attempts = append(attempts, e.Now())
				if len(attempts) == 1 {
					w.Header().Set("Retry-After", tc.header(e.Now()))
					workerapi.WriteError(w, tc.status, "busy", "")
					return
				}
				ingest.ServeHTTP(w, r)
			})}}
			u := NewUplink(e, UplinkConfig{Worker: "w1", RetryBase: 100 * time.Millisecond, RetryMax: time.Second},
				NewHTTPSender(client, "http://cp", func() string { return "tok" }, e.Now))
			u.Add(mkRec(e, 1))
			u.Start(context.Background())
			e.Run()
			if len(attempts) != 2 || store.Len() != 1 {
				t.Fatalf("%d attempts, %d stored: want the refused batch sent again once", len(attempts), store.Len())
			}
			// The HTTP date has whole seconds: the wait may be up to a second short of 40 s.
			if got := attempts[1].Sub(attempts[0]); got < tc.want-time.Second || got > tc.want+2*time.Second {
				t.Fatalf("sent again after %v, want about %v (the Retry-After)", got, tc.want)
			}
		})
	}
}
