package proxy

import (
	"context"
	"errors"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

// Wire sessions: a frontend that speaks the engine's own protocol (pgwire to PostgreSQL) can
// take one engine connection and forward the client's messages to it (PortalSuspended, COPY,
// notices and notifications then work as on a direct connection). The core routes the first
// statement, checks it, takes ONE capacity slot and opens the connection; every later
// statement is checked and reported through the session's BeginRelay. The group's pool mode
// says how long the frontend keeps it: for one transaction (PoolModeTransaction, reset before
// another client gets the connection) or for the client's whole connection (PoolModeSession;
// the slot is held as long: it stands for the engine connection).

// Pool modes of a group (GroupSpec.PoolMode).
const (
	PoolModeTransaction = "transaction"
	PoolModeSession     = "session"
)

// Wire is an open wire session.
type Wire struct {
	// Session holds the slot until Close; it is a sessionRelayer (BeginRelay per statement).
	Session engine.Session
	// Conn is the engine connection to forward to (the same object as the engine session).
	Conn engine.PGWire
	// PoolMode is the group's: PoolModeTransaction or PoolModeSession.
	PoolMode string
	// Group and Cluster name where it runs, for messages.
	Group, Cluster string

	s *wireSession // the allocation it lives in (OpenWireInto)
}

// OpenWire routes q (the client's next statement), checks it and, when every member of the
// routed group can hand out a wire connection and nothing needs the values (no result cache,
// passthrough on), takes a slot and opens a connection for the client owner, with the client's
// startup settings (setup, SQL). ok is false when the frontend must run the statement its own
// way; a non-nil error refused it (and has been reported). Under NoWait(ctx) it answers
// engine.ErrWouldWait, reporting nothing, where it would wait: for a slot (others queued, none
// free, a guard that asks over the network and has no idle slot to give) or for an engine connection (none idle of the
// owner's, or one to reset or retag).
func (c *Core) OpenWire(ctx context.Context, q *query.Request, owner uint64, setup string) (w *Wire, ok bool, err error) {
	return c.OpenWireInto(ctx, q, owner, setup, nil)
}

// OpenWireInto is OpenWire making the new wire session in the memory of spare, a wire it
// opened before that its caller no longer uses, when nothing else can reach spare either:
// closed, no statement relaying, and a slot whose lost-lease hook (which holds the session)
// can no longer run (capacity.Settled: a local count, or a lease released before it was
// lost). A client in transaction pool mode then reuses one wire session from transaction to
// transaction, on a worker's idle leases too: its allocation (the only one of a transaction
// over 512 bytes) was 3 % of the standalone passthrough's CPU. The engine may then
// make the new engine connection's wire in spare.Conn's memory too (PGWireOptions.Spare): the
// caller passes a spare only when nothing of its own reaches spare.Conn any more either (no
// cancel of its that may still come). Otherwise (spare nil or still reachable) it is OpenWire.
func (c *Core) OpenWireInto(ctx context.Context, q *query.Request, owner uint64, setup string, spare *Wire) (w *Wire, ok bool, err error) {
	var r routed
	var memo *routeMemo // the client's last decision, in the memory of its last wire
	if spare != nil && spare.s != nil {
		memo = &spare.s.memo
	}
	ok, err = c.routeInto(ctx, q, true, &r, memo)
	if !ok {
		return nil, false, err
	}
	g := r.g
	if g.cache.TTL > 0 || !g.wireOpeners {
		r.letGo()
		return nil, false, nil
	}
	// The owner's engine connection carries the tag of the lease it ran under last: a worker
	// hands the owner that lease again when it is idle, sparing a round trip to retag.
	actx := ctx
	r.affinity = owner // the guard's idle take is given it (IdleTaker)
	// Only a lease guard's acquire reads it from the context (capacity.LeaseGuard): the core's
	// own count does not, nor does an admission that must not wait, which only takes idle
	// slots; looking it up walks the context (~80 instructions a transaction).
	if _, own := c.guard.(coreCount); !own && !(r.noWait && !c.AdmitsAtOnce()) && query.Affinity(ctx) != owner { // a frontend may hand a context that carries it already
		actx = query.WithAffinity(ctx, owner)
	}
	var kept engine.PGWire // the owner's last connection, which its frontend may keep (PGWireOptions.Kept)
	if spare != nil {
		kept = spare.Conn
	}
	ws := reusable(spare)
	var spareConn engine.PGWire
	if ws == nil {
		ws = new(wireSession)
	} else {
		spareConn = ws.w.Conn
		// The admission is not zeroed: admit writes every field of it but the relay and the
		// record, each written whole before it is read (TestAdmitWritesEveryFieldButTheRelay),
		// and the settled slot it keeps is the memory admit hands the guard for the next.
		ws.cs, ws.w = coreSession{}, Wire{}
	}
	if r.rt.keepRoutes && (!r.memoHit || ws.memo.rt != r.rt) { // a new session memory has none yet
		ws.memo.keep(r.rt, q, r.dec)
	}
	adm, err := c.admit(actx, q, &r, &ws.adm)
	if err != nil {
		return nil, false, err
	}
	opener, ok := adm.Engine.(engine.PGWireOpener)
	if !ok { // the group changed members between the check and the slot
		adm.finishQuiet()
		return nil, false, nil
	}
	pw, err := opener.OpenPGWire(ctx, engine.PGWireOptions{Owner: owner, ResetQuery: g.resetQuery, Setup: setup, NoWait: r.noWait, Spare: spareConn,
		Tag: capacity.SlotTag(adm.slot), TagGiven: true, Kept: kept})
	if errors.Is(err, engine.ErrWouldWait) {
		// Nothing ran: the caller asks again where it may wait, and that slot is the one that
		// counts as a reused lease, if it is one.
		capacity.Unused(adm.slot)
		adm.finishQuiet()
		return nil, false, err
	}
	if err != nil {
		adm.finishQuiet()
		return nil, true, adm.engineError(err)
	}
	cs := &ws.cs
	cs.adm, cs.inner = adm, pw
	if _, never := adm.slot.(capacity.Unlosable); !never {
		if ws.lose == nil {
			ws.lose = cs.lose // once per session memory: cs stays where it is
		}
		adm.slot.OnLost(ws.lose)
	}
	mode := g.poolMode
	if mode == "" {
		mode = PoolModeTransaction
	}
	ws.w = Wire{Session: cs, Conn: pw, PoolMode: mode, Group: adm.Group, Cluster: adm.Cluster, s: ws}
	return &ws.w, true, nil
}

// OpenPrepareWire opens an engine connection for a message batch that executes nothing (a
// client's Parse, Describe, Close and Sync: pgx's prepare), in transaction pool mode: q is
// routed and checked as OpenWire does, but no slot is taken and no place in the queue
// (docs/capacity.md: a prepare is no running query), and the connection is one of the first
// enabled, healthy member's, full or not, set up for owner as OpenWire's. The frontend
// forwards the batch and closes the wire at its end (ReadyForQuery). Its session runs no
// statement: BeginRelay and Execute refuse, so a prepare cannot run anything uncounted. ok is
// false where OpenWire's would be (the frontend's own path), and in session pool mode, whose
// wire holds a slot for the client's connection.
func (c *Core) OpenPrepareWire(ctx context.Context, q *query.Request, owner uint64, setup string) (w *Wire, ok bool, err error) {
	r, ok, err := c.route(ctx, q, true)
	if !ok {
		return nil, false, err
	}
	g := r.g
	if g.cache.TTL > 0 || !g.wireOpeners || g.poolMode == PoolModeSession {
		r.letGo()
		return nil, false, nil
	}
	cl := g.describer()
	if cl == nil {
		r.letGo()
		return nil, true, noHealthy(g)
	}
	opener, isOpener := cl.engine.(engine.PGWireOpener)
	if !isOpener {
		r.letGo()
		return nil, false, nil
	}
	pw, err := opener.OpenPGWire(ctx, engine.PGWireOptions{Owner: owner, ResetQuery: g.resetQuery, Setup: setup})
	if err != nil {
		r.letGo()
		a := Admission{core: c, QueryID: r.id, Cluster: cl.name}
		return nil, true, a.engineError(err)
	}
	ps := &prepareSession{PGWire: pw, letGo: r.letGo}
	return &Wire{Session: ps, Conn: ps, PoolMode: PoolModeTransaction, Group: g.name, Cluster: cl.name}, true, nil
}

// prepareSession is a prepare's engine connection (OpenPrepareWire): it holds the routed
// runtime, no slot, and runs no statement.
type prepareSession struct {
	engine.PGWire
	letGo  func()
	closed bool
}

var errPrepareRuns = &query.Error{Code: query.CodeEngine, Message: "queryflux: a prepare's engine connection runs no statement"}

// BeginRelay refuses: the frontend opened this connection for a batch that executes nothing.
func (s *prepareSession) BeginRelay(context.Context, *query.Request) (*Relay, bool, error) {
	return nil, false, errPrepareRuns
}

func (s *prepareSession) Execute(context.Context, *query.Request) (query.Rows, error) {
	return nil, errPrepareRuns
}

func (s *prepareSession) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.PGWire.Close()
	s.letGo()
	return err
}

// reusable is spare's wire session when nothing can reach it any more (OpenWireInto), else nil.
func reusable(spare *Wire) *wireSession {
	if spare == nil || spare.s == nil {
		return nil
	}
	ws := spare.s
	if !ws.cs.closed.Load() || !capacity.Settled(ws.adm.slot) {
		return nil
	}
	ws.cs.mu.Lock()
	relaying := ws.cs.relaying != nil
	ws.cs.mu.Unlock()
	if relaying {
		return nil
	}
	return ws
}

// wireSession is what OpenWire makes for every transaction in transaction pool mode, in one
// allocation (or OpenWireInto makes again in the last one's): the admission, its session and
// the Wire.
type wireSession struct {
	adm  Admission
	cs   coreSession
	w    Wire
	lose func()    // cs.lose, for the slot's OnLost
	memo routeMemo // the client's last routing decision: only its own OpenWireInto reads or writes it
}

func isWireOpener(e query.Engine) bool {
	_, ok := e.(engine.PGWireOpener)
	return ok
}

type noWaitKey struct{}

// noWaitContext is a context under NoWait. The event loops build one per connection and hand it
// to every statement, which asks mustNotWait once or twice: known by its type, it is answered
// without a walk of the context's values. It answers noWaitKey too, so a context made from it
// (a WithCancel, a WithValue) still must not wait.
type noWaitContext struct{ context.Context }

func (c *noWaitContext) Value(key any) any {
	if _, ok := key.(noWaitKey); ok {
		return true
	}
	return c.Context.Value(key)
}

// NoWait marks ctx for an OpenWire that must not block (an event loop's thread): it answers
// engine.ErrWouldWait instead of waiting.
func NoWait(ctx context.Context) context.Context { return &noWaitContext{ctx} }

// noWaitCtx is a context that must not wait, for calls given none.
var noWaitCtx = NoWait(context.Background())

func mustNotWait(ctx context.Context) bool {
	if _, ok := ctx.(*noWaitContext); ok {
		return true
	}
	return ctx.Value(noWaitKey{}) != nil
}

// AdmitsAtOnce reports whether the core's guard answers without a network round trip, so that
// an OpenWire under NoWait can admit a statement (capacity.AtOnce).
func (c *Core) AdmitsAtOnce() bool {
	g, ok := c.guard.(capacity.AtOnce)
	return ok && g.AtOnce()
}

// MayAdmitAtOnce reports whether an OpenWire under NoWait can admit a statement at all: the
// guard answers without a round trip, or it keeps released slots idle (capacity.IdleTaker: a
// worker's leases), which it then hands out at once.
func (c *Core) MayAdmitAtOnce() bool { return c.AdmitsAtOnce() || c.idle != nil }
