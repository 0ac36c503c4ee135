package proxy

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity/capacitytest"
	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

// sessionEngine is a fakeEngine that can pin sessions and describe statements.
type sessionEngine struct {
	*fakeEngine
	mu     sync.Mutex
	opened int
	closed int
}

func (e *sessionEngine) OpenSession(ctx context.Context, q *query.Request) (engine.Session, error) {
	e.mu.Lock()
	e.opened++
	e.mu.Unlock()
	return &fakeSession{e: e}, nil
}

func (e *sessionEngine) Describe(ctx context.Context, q *query.Request) (*engine.Description, error) {
	return &engine.Description{Schema: fakeSchema}, nil
}

type fakeSession struct {
	e *sessionEngine
}

func (s *fakeSession) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	return s.e.fakeEngine.Execute(ctx, q)
}
func (s *fakeSession) TxStatus() byte { return 'T' }
func (s *fakeSession) Close() error {
	s.e.mu.Lock()
	s.e.closed++
	s.e.mu.Unlock()
	return nil
}

func drain(t *testing.T, rows query.Rows) (int64, error) {
	t.Helper()
	defer rows.Close()
	var n int64
	for {
		rec, err := rows.Next(context.Background())
		if err != nil {
			if errors.Is(err, errEOF) {
				return n, nil
			}
			return n, err
		}
		n += rec.NumRows()
	}
}

// TestSessionHoldsOneSlotForItsLife: a pinned session holds one slot from OpenSession to
// Close (another query on the one-slot cluster times out meanwhile), each statement is checked
// against the group and reported on its own, and the session reports nothing itself.
func TestSessionHoldsOneSlotForItsLife(t *testing.T) {
	h := newHarness(t)
	e := &sessionEngine{fakeEngine: &fakeEngine{name: "c1", rows: 3}}
	spec := oneGroup(RoundRobin, 5, 50*time.Millisecond, cl("c1", 1, e))
	spec.Groups[0].BlockedStatements = []string{"drop"}
	h.activate(spec)
	ctx := context.Background()

	s, err := h.core.OpenSession(ctx, sel("begin"))
	if err != nil {
		t.Fatal(err)
	}
	if h.core.Running("c1") != 1 {
		t.Fatalf("running %d, want 1 for the open session", h.core.Running("c1"))
	}
	if _, err := h.run(ctx, sel("select 1")); !isCode(err, query.CodeCapacityTimeout) {
		t.Fatalf("a query beside a session on a one-slot cluster: got %v, want a capacity timeout", err)
	}
	before := len(h.recs.all())
	for _, sql := range []string{"begin", "select 1", "select 2"} {
		rows, err := s.Execute(ctx, sel(sql))
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if n, err := drain(t, rows); err != nil || n != 3 {
			t.Fatalf("%s: %d rows, %v", sql, n, err)
		}
	}
	if _, err := s.Execute(ctx, sel("drop table x")); err == nil {
		t.Fatal("a blocked statement ran inside a session")
	}
	recs := h.recs.all()[before:]
	if len(recs) != 4 {
		t.Fatalf("%d records for 4 statements", len(recs))
	}
	for _, r := range recs[:3] {
		if r.Status != StatusSucceeded || r.Rows != 3 || r.Cluster != "c1" || r.Group != "g" {
			t.Fatalf("statement record %+v", r)
		}
	}
	if recs[3].Status != StatusFailed {
		t.Fatalf("blocked statement record %+v", recs[3])
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_ = s.Close() // idempotent
	if h.core.Running("c1") != 0 || e.closed != 1 {
		t.Fatalf("after Close: running %d, engine sessions closed %d", h.core.Running("c1"), e.closed)
	}
	if len(h.recs.all()) != before+4 {
		t.Fatal("closing a session reported a query")
	}
	if n, err := h.run(ctx, sel("select 1")); err != nil || n != 3 {
		t.Fatalf("after the session: %d, %v", n, err)
	}
}

// TestSessionLostLeaseFailsTheRest: once the session's lease is lost, its statements fail
// with a capacity error naming the lost lease.
func TestSessionLostLeaseFailsTheRest(t *testing.T) {
	h := newHarness(t)
	g := capacitytest.NewLosingGuard()
	h.core = New(Options{Env: h.env, Registerer: nil, OnFinish: h.recs.add, Guard: g})
	e := &sessionEngine{fakeEngine: &fakeEngine{name: "c1", rows: 1}}
	h.activate(oneGroup(RoundRobin, 5, time.Second, cl("c1", 2, e)))
	s, err := h.core.OpenSession(context.Background(), sel("begin"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g.LoseAll()
	_, err = s.Execute(context.Background(), sel("select 1"))
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != query.CodeLeaseLost {
		t.Fatalf("after a lost lease: got %v, want %s", err, query.CodeLeaseLost)
	}
}

// TestDescribeForwardsAndReleases: Describe answers from the routed engine and gives its slot
// back at once; an engine without Describe gets an empty description.
func TestDescribeForwardsAndReleases(t *testing.T) {
	h := newHarness(t)
	e := &sessionEngine{fakeEngine: &fakeEngine{name: "c1", rows: 1}}
	h.activate(oneGroup(RoundRobin, 5, time.Second, cl("c1", 1, e)))
	d, err := h.core.Describe(context.Background(), sel("select v from t"))
	if err != nil || d.Schema == nil || d.Schema.Field(0).Name != "v" {
		t.Fatalf("describe: %+v, %v", d, err)
	}
	if h.core.Running("c1") != 0 || len(h.recs.all()) != 0 {
		t.Fatalf("describe left %d slots and %d records", h.core.Running("c1"), len(h.recs.all()))
	}
	h2 := newHarness(t)
	h2.activate(oneGroup(RoundRobin, 5, time.Second, cl("c1", 1, &fakeEngine{name: "c1"})))
	d, err = h2.core.Describe(context.Background(), sel("select 1"))
	if err != nil || d.Schema != nil || d.Params != nil {
		t.Fatalf("describe without engine support: %+v, %v", d, err)
	}
	if _, err := h2.core.OpenSession(context.Background(), sel("begin")); err == nil {
		t.Fatal("a session on an engine that cannot pin one")
	}
	if h2.core.Running("c1") != 0 {
		t.Fatal("a refused session kept its slot")
	}
}

// TestDescribeTakesNoSlot: a prepare is no running query. With the cluster's one slot held
// and another query queued behind it, Describe answers at once, on a context already
// cancelled (so it waited for nothing), leaving the slot, the queue and the engine's executions
// as they were; it runs nothing on the engine. It is still routed and checked: a statement
// the check refuses is refused (and reported) at Describe and at CheckPrepare.
func TestDescribeTakesNoSlot(t *testing.T) {
	h := newHarness(t)
	refused := errors.New("blocked by the test's check")
	h.core = New(Options{Env: h.env, OnFinish: h.recs.add, Check: func(req *query.Request, _ string) error {
		if req.SQL == "select secret" {
			return refused
		}
		return nil
	}})
	e := &sessionEngine{fakeEngine: &fakeEngine{name: "c1", rows: 1}}
	h.activate(oneGroup(RoundRobin, 5, time.Minute, cl("c1", 1, e)))
	adm, err := h.core.Admit(context.Background(), sel("select 1"))
	if err != nil {
		t.Fatal(err)
	}
	queued := make(chan error, 1)
	go func() {
		a, err := h.core.Admit(context.Background(), sel("select 2"))
		if err == nil {
			a.Finish(0, 0, nil)
		}
		queued <- err
	}()
	for h.core.Queued("g") != 1 {
		time.Sleep(time.Millisecond)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := h.core.Describe(cancelled, sel("select v from t"))
	if err != nil || d.Schema == nil {
		t.Fatalf("describe with the cap held: %+v, %v", d, err)
	}
	if err := h.core.CheckPrepare(sel("select v from t")); err != nil {
		t.Fatalf("CheckPrepare with the cap held: %v", err)
	}
	if h.core.Running("c1") != 1 || h.core.Queued("g") != 1 || e.executes.Load() != 0 {
		t.Fatalf("after describing: %d running, %d queued, %d executed; want 1, 1, 0",
			h.core.Running("c1"), h.core.Queued("g"), e.executes.Load())
	}
	for name, refuse := range map[string]func() error{
		"Describe":     func() error { _, err := h.core.Describe(context.Background(), sel("select secret")); return err },
		"CheckPrepare": func() error { return h.core.CheckPrepare(sel("select secret")) },
	} {
		if err := refuse(); err == nil {
			t.Errorf("%s of a statement the check refuses: %v", name, err)
		}
	}
	adm.Finish(0, 0, nil)
	if err := <-queued; err != nil {
		t.Fatal(err)
	}
}

func isCode(err error, code string) bool {
	var qe *query.Error
	return errors.As(err, &qe) && qe.Code == code
}

// TestSessionRelayOnlyFromARelayingEngine: a pinned session of an engine that cannot relay
// the PostgreSQL wire (DuckDB) sends its statements down the Arrow path (ok=false), refusing
// nothing and reporting nothing.
func TestSessionRelayOnlyFromARelayingEngine(t *testing.T) {
	h := newHarness(t)
	e := &sessionEngine{fakeEngine: &fakeEngine{name: "c1", rows: 1}}
	h.activate(oneGroup(RoundRobin, 5, time.Second, cl("c1", 2, e)))
	s, err := h.core.OpenSession(context.Background(), sel("begin"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := len(h.recs.all())
	r, ok, err := s.(*coreSession).BeginRelay(context.Background(), sel("select 1"))
	if r != nil || ok || err != nil {
		t.Fatalf("BeginRelay on a session that cannot relay: %v, %v, %v; want the Arrow path", r, ok, err)
	}
	if len(h.recs.all()) != before {
		t.Fatal("a statement sent to the Arrow path was reported")
	}
}

// TestSessionsFirstStatementCarriesItsWait: a session that waited for its slot reports the wait
// on its first statement (started when the session asked, queue time = the wait, execution from
// the grant), as a query outside a session would; later statements wait nothing. Without it a
// forwarded client's capacity wait would be missing from the history.
func TestSessionsFirstStatementCarriesItsWait(t *testing.T) {
	h := newHarness(t)
	e := &sessionEngine{fakeEngine: &fakeEngine{name: "c1", rows: 1}}
	h.activate(oneGroup(RoundRobin, 5, time.Minute, cl("c1", 1, e)))
	ctx := context.Background()
	first, err := h.core.OpenSession(ctx, sel("begin"))
	if err != nil {
		t.Fatal(err)
	}
	asked := h.env.Now()
	opened := make(chan engine.Session, 1)
	go func() {
		s, err := h.core.OpenSession(ctx, sel("begin"))
		if err != nil {
			t.Error(err)
		}
		opened <- s
	}()
	for h.core.Queued("g") == 0 {
		time.Sleep(time.Millisecond)
	}
	h.env.advance(2 * time.Second)
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second := <-opened
	before := len(h.recs.all())
	for _, sql := range []string{"select 1", "select 2"} {
		rows, err := second.Execute(ctx, sel(sql))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := drain(t, rows); err != nil {
			t.Fatal(err)
		}
	}
	_ = second.Close()
	recs := h.recs.all()[before:]
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	if recs[0].QueueMs < 2000 || recs[0].Start.After(asked.Add(time.Second)) || recs[0].ExecMs >= 2000 {
		t.Fatalf("first statement: start %v (session asked at %v), queue %d ms, exec %d ms: want the 2 s wait as queue time", recs[0].Start, asked, recs[0].QueueMs, recs[0].ExecMs)
	}
	if recs[1].QueueMs != 0 || recs[1].Start.Before(recs[0].End) {
		t.Fatalf("second statement: start %v, queue %d ms: want no wait, started after the first", recs[1].Start, recs[1].QueueMs)
	}
}
