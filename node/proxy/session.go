package proxy

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// Pinned sessions and Describe: the core forwards engine.SessionOpener and engine.Describer to
// the engine a request routes to, so a frontend that pins a transaction (pgwire on BEGIN) gets
// one engine connection for it, and prepared statements get the engine's exact types.
//
// Capacity: a pinned session holds ONE capacity slot from OpenSession to Close, i.e. for the
// transaction's life (pgwire opens a session on BEGIN and closes it once the engine reports the
// transaction over). Holding it per statement instead would let a transaction stall halfway
// for lack of a slot while it holds row locks: worse than the idle slot it costs. A lost lease
// cancels the statement running and fails the rest of the transaction.
//
// History: each statement of the session is reported as its own Record (group and cluster of
// the session); the session itself reports nothing.

var (
	_ engine.SessionOpener  = (*Core)(nil)
	_ engine.Describer      = (*Core)(nil)
	_ engine.ClientCloser   = (*Core)(nil)
	_ engine.SettingIgnorer = (*Core)(nil)
)

// errNoSessions refuses a transaction on an engine that cannot pin a connection.
func errNoSessions(cluster string) error {
	return &query.Error{Code: sqlstate.FeatureNotSupported, Message: fmt.Sprintf("cluster %s cannot pin a connection for a transaction", cluster)}
}

// OpenSession routes q (the statement that starts the transaction), checks it, takes a slot
// and pins one connection of the routed engine. Every statement of the session is checked
// against the session's group (access control, readOnly, blockedStatements) as it runs.
func (c *Core) OpenSession(ctx context.Context, q *query.Request) (engine.Session, error) {
	adm, err := c.Admit(ctx, q)
	if err != nil {
		return nil, err
	}
	opener, ok := adm.Engine.(engine.SessionOpener)
	if !ok {
		adm.finishQuiet()
		return nil, errNoSessions(adm.Cluster)
	}
	s, err := opener.OpenSession(adm.Tagged(ctx), q)
	if err != nil {
		adm.finishQuiet()
		return nil, adm.engineError(err)
	}
	cs := &coreSession{adm: adm, inner: s}
	adm.slot.OnLost(cs.lose)
	return cs, nil
}

// ClientClosed tells each engine of the active configuration that keeps something for a
// client (engine.ClientCloser) that this client's connection ended.
func (c *Core) ClientClosed(protocol, client string) {
	rt := c.pinActive()
	if rt == nil {
		return
	}
	defer rt.unpin()
	for _, name := range rt.names {
		if cc, ok := rt.clusters[name].engine.(engine.ClientCloser); ok {
			cc.ClientClosed(protocol, client)
		}
	}
}

// Describe routes and checks q (access control, readOnly, blockedStatements, as its execution
// will be) and asks an enabled, healthy member of the routed group to describe it. It takes no
// capacity slot and no place in the queue: describing prepares the statement on the engine
// and runs nothing (a message batch that executes nothing is not a running query), and a
// client's prepare (pgx's Parse/Describe/Sync, a Flight SQL prepare) must not queue apart from
// the execution that follows it, which would lose the client its place in ordered mode. An
// engine that cannot describe gets an empty description: the frontend then learns the
// columns when it runs.
func (c *Core) Describe(ctx context.Context, q *query.Request) (*engine.Description, error) {
	return describeOn(ctx, q, c.DescribeOn)
}

// describeOn is an engine.Describer's description of q through on (Core's or coreSession's
// DescribeOn); an engine that cannot describe gives an empty one.
func describeOn(ctx context.Context, q *query.Request, on func(context.Context, *query.Request, func(context.Context, any, *query.Request) error) error) (*engine.Description, error) {
	var desc *engine.Description
	err := on(ctx, q, func(ctx context.Context, e any, q *query.Request) error {
		d, ok := e.(engine.Describer)
		if !ok {
			desc = &engine.Description{}
			return nil
		}
		var err error
		desc, err = d.Describe(ctx, q)
		return err
	})
	if err != nil {
		return nil, err
	}
	return desc, nil
}

// DescribeOn routes and checks q as Describe does and has describe ask the engine of an enabled,
// healthy member of the routed group (q in the engine's charset), for a frontend that describes
// by a way of its own (the MySQL wire's COM_STMT_PREPARE, with a MySQL engine's own column
// definitions). It takes no slot and no place in the queue; describe's error is the engine's.
func (c *Core) DescribeOn(ctx context.Context, q *query.Request, describe func(ctx context.Context, e any, q *query.Request) error) error {
	r, ok, err := c.route(ctx, q, false)
	if !ok {
		return err
	}
	defer r.letGo() // the runtime (and so the engine) stays while the engine describes
	cl := r.g.describer()
	if cl == nil {
		return noHealthy(r.g)
	}
	if err := describe(ctx, cl.engine, inEngineCharset(q, cl.engine)); err != nil {
		a := Admission{core: c, QueryID: r.id, Cluster: cl.name}
		return a.engineError(err)
	}
	return nil
}

// SetChangesNothing asks an enabled, healthy member of the group q routes to whether q's
// session-level SET of name to value changes nothing there (engine.SettingIgnorer). It takes
// nothing and waits for nothing.
func (c *Core) SetChangesNothing(q *query.Request, name, value string) bool {
	r, ok, _ := c.route(noWaitCtx, q, false)
	if !ok {
		return false
	}
	defer r.letGo()
	cl := r.g.describer()
	if cl == nil {
		return false
	}
	i, ok := cl.engine.(engine.SettingIgnorer)
	return ok && i.SetChangesNothing(q, name, value)
}

// CheckPrepare routes and checks q as Describe does, for a frontend that prepares a statement
// without the engine (the MySQL wire's COM_STMT_PREPARE): a statement its execution would be
// refused is refused at prepare. It takes nothing, and waits for nothing (the frontend awaits
// the first configuration before it asks).
func (c *Core) CheckPrepare(q *query.Request) error {
	r, ok, err := c.route(noWaitCtx, q, false)
	if ok {
		r.letGo()
	}
	return err
}

// coreSession is a pinned engine session holding its admission's slot.
type coreSession struct {
	adm   *Admission
	inner engine.Session

	mu       sync.Mutex
	lost     bool
	running  context.CancelFunc // the statement running now, cancelled when the lease is lost
	relaying *Relay             // the relayed statement running now, cancelled likewise
	// txLost: a statement the core cancelled (query timeout, the client's cancel, a lost
	// lease) took the engine connection, and the client's transaction with it. The session then
	// answers as PostgreSQL does for an aborted transaction until the client ends it, instead
	// of letting its next statements run outside any transaction.
	txLost bool
	closed atomic.Bool // Close is idempotent (engine.Session)
	// reported: a statement has carried the session's admission (its capacity wait); only the
	// first does, so the history shows every wait once, as for a query outside a session.
	reported bool
}

// admission is the capacity wait the next reported statement carries: the first statement
// starts when the session asked for its slot, waited QueueWait and ran from the grant;
// later ones start when they are sent and wait nothing.
func (s *coreSession) admission(start time.Time) statementTimes {
	if s.claimAdmission() {
		return s.admissionTimes()
	}
	return statementTimes{from: start, ran: start}
}

// statementTimes are when a statement started, how long it waited for capacity and when it
// began to run.
type statementTimes struct {
	from   time.Time
	queued time.Duration
	ran    time.Time
}

// claimAdmission reports whether the caller's statement is the first to carry the session's
// admission (and so claims it).
func (s *coreSession) claimAdmission() bool {
	s.mu.Lock()
	first := !s.reported
	s.reported = true
	s.mu.Unlock()
	return first
}

func (s *coreSession) admissionTimes() statementTimes {
	return statementTimes{from: s.adm.start, queued: s.adm.QueueWait, ran: s.adm.admitted}
}

func (s *coreSession) lose() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lost = true
	if s.running != nil {
		s.running()
	}
	if s.relaying != nil {
		s.relaying.cancel()
	}
}

func (s *coreSession) errLost() error {
	return errLeaseLost(s.adm.slot, s.adm.Cluster, true)
}

// Execute runs one statement of the transaction on the pinned connection.
func (s *coreSession) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	c, a := s.adm.core, s.adm
	start := c.env.Now()
	id := c.newID()
	trace := []TraceStep(nil)
	if err := s.check(q); err != nil {
		return nil, s.report(id, q, start, trace, 0, 0, err)
	}
	if s.transactionLost() {
		return s.answerLostTransaction(id, q, start)
	}
	qctx, cancel, run := s.statementContext(ctx)
	slotLost := s.adm.slot.Lost() // asked before s.mu is taken: the guard's lock and s.mu are never held together
	s.mu.Lock()
	if s.lost || slotLost {
		s.mu.Unlock()
		cancel()
		return nil, s.report(id, q, start, trace, 0, 0, s.errLost())
	}
	s.running = cancel
	s.mu.Unlock()
	inTx := s.inner.TxStatus() != 'I'
	explain := func(err error) error { return s.explain(run.explain(a.engineError(err))) }
	rows, err := s.inner.Execute(qctx, inEngineCharset(q, s.adm.Engine))
	if err != nil {
		s.noteLostTransaction(inTx, qctx)
		s.endStatement(cancel)
		return nil, s.report(id, q, start, trace, 0, 0, explain(err))
	}
	r := &stream{inner: rows, id: id, limits: a.Runtime.limits,
		explain: explain,
		end: func(n, bytes int64, outcome error) {
			if outcome != nil {
				s.noteLostTransaction(inTx, qctx)
			}
			s.endStatement(cancel)
			_ = s.report(id, q, start, nil, n, bytes, outcome)
		}}
	c.open.Open(&r.closed, "rows", id, q.SQL)
	return r, nil
}

// errTransactionLost answers the statements of a transaction whose engine connection is gone.
var errTransactionLost = &query.Error{Code: sqlstate.InFailedSQLTransaction,
	Message: "current transaction is aborted, commands ignored until end of transaction block (a cancelled statement ended its engine connection)"}

// noteLostTransaction records a transaction lost with its engine connection: the statement
// that just failed started inside one, the core had cancelled it, and the engine now reports
// no transaction (a statement failing inside a transaction leaves it aborted, not ended).
func (s *coreSession) noteLostTransaction(inTx bool, qctx context.Context) {
	if inTx && qctx.Err() != nil && s.inner.TxStatus() == 'I' {
		s.mu.Lock()
		s.txLost = true
		s.mu.Unlock()
	}
}

func (s *coreSession) transactionLost() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.txLost
}

// answerLostTransaction answers q in a lost transaction as PostgreSQL answers it in an aborted
// one: ROLLBACK, COMMIT, END and ABORT end it (tag ROLLBACK), anything else fails with 25P02.
func (s *coreSession) answerLostTransaction(id string, q *query.Request, start time.Time) (query.Rows, error) {
	if st := statementsOf(q); len(st) == 1 && len(st[0].head) > 0 {
		switch st[0].head[0] {
		case "rollback", "commit", "end", "abort":
			s.mu.Lock()
			s.txLost = false
			s.mu.Unlock()
			_ = s.report(id, q, start, nil, 0, 0, nil)
			return engine.TagRows("ROLLBACK"), nil
		}
	}
	return nil, s.report(id, q, start, nil, 0, 0, errTransactionLost)
}

// statementContext is the engine-side context of one statement of the session: it ends with
// ctx and on the group's query timeout, which run names when it ended the statement.
func (s *coreSession) statementContext(ctx context.Context) (context.Context, context.CancelFunc, runContext) {
	c := s.adm.core
	qctx, cancel, run := c.timeoutContext(ctx, s.adm.grp.timeout)
	if cancel == nil {
		qctx, cancel = c.env.WithCancel(ctx)
	}
	return qctx, cancel, run
}

// Describe describes a statement on the pinned connection (as Core.Describe does on a member):
// no second slot, and the statement may use what the transaction made.
func (s *coreSession) Describe(ctx context.Context, q *query.Request) (*engine.Description, error) {
	return describeOn(ctx, q, s.DescribeOn)
}

// DescribeOn checks q as the session's statements are checked and has describe ask the pinned
// connection (the engine's session), as Core.DescribeOn asks a member.
func (s *coreSession) DescribeOn(ctx context.Context, q *query.Request, describe func(ctx context.Context, e any, q *query.Request) error) error {
	if err := s.check(q); err != nil {
		return err
	}
	if err := describe(ctx, s.inner, inEngineCharset(q, s.adm.Engine)); err != nil {
		return s.explain(s.adm.engineError(err))
	}
	return nil
}

func (s *coreSession) check(q *query.Request) error {
	c, a := s.adm.core, s.adm
	g := a.grp
	if err := checkStatements(g, q); err != nil {
		return err
	}
	if c.check != nil {
		return c.check(q, a.Group)
	}
	return nil
}

func (s *coreSession) endStatement(cancel context.CancelFunc) {
	s.mu.Lock()
	s.running = nil
	s.mu.Unlock()
	cancel()
}

// explain replaces the failure a lost lease caused with the lost lease's error. The slot is
// asked too: a worker that resumes after a freeze past its lease's term finds the engine
// connection fenced before its keeper has told the session.
func (s *coreSession) explain(err error) error {
	s.mu.Lock()
	lost := s.lost
	s.mu.Unlock()
	if err != nil && (lost || s.adm.slot.Lost()) {
		return s.errLost()
	}
	return err
}

// report hands one statement's record to history and returns err.
func (s *coreSession) report(id string, q *query.Request, start time.Time, trace []TraceStep, rows, bytes int64, err error) error {
	return s.record(new(Record), PathArrow, id, q, s.admission(start), trace, rows, bytes, err)
}

// record hands one statement's record, timed t, to history and returns err. The record is
// built in rec: memory that outlives the call (OnFinish's argument), the statement's own.
func (s *coreSession) record(rec *Record, path, id string, q *query.Request, t statementTimes, trace []TraceStep, rows, bytes int64, err error) error {
	c, a := s.adm.core, s.adm
	end := c.env.Now()
	// Every field written in its place, as Admission.Finish does: the relayed statement's
	// record is the admission's own (reused), and a Record literal is built aside and copied
	// (TestSessionRecordWritesEveryRecordField).
	rec.QueryID, rec.User, rec.Protocol, rec.Database = id, q.User, q.Protocol, q.Database
	rec.Group, rec.Cluster, rec.SQL, rec.Shape = a.Group, a.Cluster, q.SQL, q.Shape
	rec.Status, rec.ErrorCode, rec.Error = statusOf(err), "", ""
	rec.QueueMs, rec.ExecMs, rec.Rows, rec.Bytes = millis(t.queued), millis(end.Sub(t.ran)), rows, bytes
	rec.CacheHit, rec.Trace, rec.Start, rec.End = false, trace, t.from, end
	fillError(rec, err)
	c.countPath(path)
	c.metrics.finished(a.series, rec.Status, rec.ErrorCode, end.Sub(t.from).Seconds())
	if c.onFinish != nil {
		c.onFinish(rec)
	}
	return err
}

// TxStatus is the engine's transaction status, or 'E' while a lost transaction waits for the
// client to end it.
func (s *coreSession) TxStatus() byte {
	if s.transactionLost() {
		return 'E'
	}
	return s.inner.TxStatus()
}

// FailTx fails the engine's transaction, where it can be told (engine.TxFailer): a statement
// the frontend answered itself failed in it.
func (s *coreSession) FailTx() {
	if f, ok := s.inner.(engine.TxFailer); ok {
		f.FailTx()
	}
}

// Close rolls back whatever is open (the engine session does) and frees the slot.
func (s *coreSession) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	err := s.inner.Close()
	s.adm.finishQuiet()
	return err
}

// BeginRelay starts one statement of the session for a relay: it checks q against the
// session's group and lease, and bounds it by the group's query timeout. ok is false when
// the statement must take the Arrow path (settings.passthrough: false, or an engine session
// that is no wire, such as DuckDB's); a non-nil error refused it (and has been reported).
// A lost lease cancels the statement through the Relay's OnCancel hook; its Ctx is ctx itself
// unless the group has a query timeout.
//
// The session's first statement is its admission's query (a transaction's first statement in
// transaction pool mode, where each transaction is a session): it carries the admission's id
// and times, and when q is the very request the session was admitted with, the check that
// admission ran stands (same request, group and runtime) instead of running twice.
func (s *coreSession) BeginRelay(ctx context.Context, q *query.Request) (r *Relay, ok bool, err error) {
	c := s.adm.core
	if _, wire := s.inner.(engine.PGWire); !wire || s.adm.Runtime.noRelay || s.transactionLost() {
		return nil, false, nil // a lost transaction's statements are answered by Execute
	}
	checked := false
	if s.claimAdmission() {
		// The admission's own Relay, which a session's admission never hands out otherwise
		// (Admission.Relay is the relay path's): in transaction pool mode most sessions relay
		// this one statement only, and it then costs no allocation of its own.
		r = &s.adm.relay
		r.reset(s.adm.QueryID, s.admissionTimes())
		checked = q == s.adm.req
	} else {
		start := c.env.Now()
		r = &Relay{id: c.newID(), times: statementTimes{from: start, ran: start}}
	}
	r.Engine, r.session, r.q = s.inner, s, q
	if !checked {
		if err := s.check(q); err != nil {
			return nil, true, s.record(new(Record), PathArrow, r.id, q, r.times, nil, 0, 0, err)
		}
	}
	r.Ctx, r.stop, r.run = c.timeoutContext(ctx, s.adm.grp.timeout)
	s.mu.Lock()
	if s.lost {
		s.mu.Unlock()
		if r.stop != nil {
			r.stop()
		}
		return nil, true, s.record(new(Record), PathArrow, r.id, q, r.times, nil, 0, 0, s.errLost())
	}
	s.relaying = r
	s.mu.Unlock()
	return r, true, nil
}

// finishRelay ends the session's relayed statement r (Relay.Finish) and reports it.
func (s *coreSession) finishRelay(r *Relay, rows, bytes int64, err error) error {
	if err != nil && r.run.ctx != nil {
		err = r.run.explain(s.adm.engineError(err))
	}
	s.endRelay(r, r.stop)
	if err != nil {
		err = s.explain(s.adm.engineError(err))
	}
	// The session's statements run one at a time, and its memory is reused only once it is
	// closed: the admission's record is this statement's.
	return s.record(&s.adm.rec, PathPassthrough, r.id, r.q, r.times, nil, rows, bytes, err)
}

// endRelay ends the relayed statement r: a lost lease no longer cancels it, nor its query
// timeout (cancel; nil without one).
func (s *coreSession) endRelay(r *Relay, cancel context.CancelFunc) {
	s.mu.Lock()
	if s.relaying == r {
		s.relaying = nil
	}
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
