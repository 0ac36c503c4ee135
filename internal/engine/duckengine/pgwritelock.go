package duckengine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// PostgreSQL makes the second of two transactions that write one row wait for the first to
// end; DuckDB has no row locks and fails it at its write ("Conflict on update"), so pgbench's
// TPC-B at scale 1 (every transaction updates the one branch row) failed three transactions
// of four with 4 clients. A PostgreSQL client's writes therefore take the database's write
// lock first: a transaction at its first write (held to COMMIT or ROLLBACK, as PostgreSQL
// holds row locks), a statement outside one for the statement. Writers of one database run one
// transaction at a time; readers never wait.
//
// Why the whole database and not the rows or tables written: DuckDB's transaction takes its
// snapshot at its first statement, and a write conflicts with any row committed after that
// snapshot. Only a lock taken before the snapshot and held to the end keeps every later write
// of the transaction free of conflicts; a lock per table would be taken at each table's first
// write, long after the snapshot. A READ COMMITTED transaction (PostgreSQL's default) that
// only read before its first write starts again on a fresh snapshot once it holds the lock,
// as PostgreSQL gives each statement a fresh one; REPEATABLE READ and SERIALIZABLE keep theirs
// and may still fail with 40001, as on PostgreSQL.
//
// A plain INSERT takes no lock: PostgreSQL never makes one wait for another transaction's
// writes but on a unique key, and DuckDB appends from concurrent transactions without conflict.
// A writer whose lock holder sat idle for unlockedAfter (nothing of the holder's under way, no
// statement running and no result still being read, and nothing begun or ended in that time)
// runs the statement without the lock, as DuckDB would: one client that
// interleaves two transactions on one thread (A writes, B writes, A commits) is not stuck
// forever behind itself, and a client that left its transaction open does not stop every
// writer; a write of a row another transaction wrote then fails 40001, where PostgreSQL would
// wait for it. A holder still at work is waited for however long it takes (a busy machine
// slows every holder: bounding the wait itself failed pgbench's transactions on one).
//
// The wait ends as PostgreSQL's does: with the lock, lock_timeout (55P03), statement_timeout
// or the client's cancel (57014), or deadlock detected (40P01) when, deadlock_timeout after it
// began, its holder waits for the waiter (an advisory lock: pgdeadlock.go). A SELECT ... FOR UPDATE / FOR SHARE takes the lock too (its
// rows are then the transaction's until it ends; NOWAIT answers 55P03 at once); SKIP LOCKED
// takes none (it skips nothing, see locking.go). Trino and Flight SQL clients' writes take it
// as PostgreSQL clients' do; MySQL clients' wait by the same rules with InnoDB's errors
// (mysqlwritelock.go): one wait (writeLock.wait), each protocol's errors (lockWait).

// writeLock is one database's write lock: lockRules (pglockrules.go) on the real clock, each
// waiter told its turn by a channel of its own.
type writeLock struct {
	mu     sync.Mutex
	origin time.Time
	rules  lockRules
	ids    uint64
	turns  map[uint64]chan struct{} // a waiter's, closed when the lock goes to it
	// parties are the PostgreSQL sessions (pids) of the holder and the waiters, by id, whom
	// the engine's deadlock check (graph) reads.
	parties map[uint64]uint32
	graph   *waitGraph
}

// now is the lock's clock: the time since its first use. Called with mu held.
func (l *writeLock) now() time.Duration {
	if l.origin.IsZero() {
		l.origin = time.Now() //determinism:ok a real engine's lock wait (the simulator has no DuckDB)
	}
	return time.Since(l.origin) //determinism:ok as above
}

// working marks a statement of the lock's holder begun (or a read of its result); the func
// it returns marks it ended. A waiter gives up only on a holder with nothing under way that
// began or ended nothing for idleAfter.
func (l *writeLock) working() func() { return l.workingAs(0) }

// workingAs is working for holder (0: whoever holds the lock): nothing when the lock is
// another's by now (a result read after its transaction ended is no one's work).
func (l *writeLock) workingAs(holder uint64) func() {
	l.mu.Lock()
	token := uint64(0)
	if holder == 0 || holder == l.rules.holder {
		token = l.rules.begin(l.now())
	}
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			l.rules.end(token, l.now())
			l.mu.Unlock()
		})
	}
}

var (
	errLockTimeout      = &query.Error{Code: sqlstate.LockNotAvailable, Message: "canceling statement due to lock timeout"}
	errCanceledByClient = &query.Error{Code: sqlstate.QueryCanceled, Message: "canceling statement due to user request"}
)

// unlockedAfter is how long the lock's holder may sit idle before its waiters run without it.
const unlockedAfter = idleAfter

// errUnlocked: the holder sat idle for unlockedAfter; the statement runs without the lock.
var errUnlocked = errors.New("duckengine: write lock not taken")

// lockWait is how one protocol's writer waits for the lock, and the errors that end the wait
// as that protocol's server ends it.
type lockWait struct {
	lockTimeout, statementTimeout time.Duration // 0: none
	nowait                        bool          // do not wait: busy when the lock is another's
	idle                          bool          // give up on a holder idle for idleAfter: errUnlocked
	busy, lockTimedOut            error
	statementTimedOut             error
	canceled                      func(ctx context.Context) error // ctx ended
	// party is the waiting PostgreSQL session's pid (0: none, no deadlock check), checked for
	// a deadlock after deadlockTimeout (0: the default).
	party           uint32
	deadlockTimeout time.Duration
}

// pgWait is a PostgreSQL client's wait: lock_timeout 55P03, statement_timeout and cancel
// 57014, NOWAIT 55P03 naming what; an idle holder given up on.
func pgWait(lockTimeout, statementTimeout time.Duration, nowait bool, what string) lockWait {
	w := lockWait{lockTimeout: lockTimeout, statementTimeout: statementTimeout, nowait: nowait, idle: true,
		lockTimedOut: errLockTimeout, statementTimedOut: errStatementTimeout, canceled: pgCanceled}
	if nowait {
		w.busy = &query.Error{Code: sqlstate.LockNotAvailable, Message: "could not obtain lock on row in relation " + what}
	}
	return w
}

func pgCanceled(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errStatementTimeout
	}
	return errCanceledByClient
}

// tryTake takes the lock if it is free and no one waits for it.
func (l *writeLock) tryTake() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ids++
	return l.rules.request(lockWaiter{id: l.ids, since: l.now()}, true) == lockGranted
}

// wait is every protocol's wait for the lock: nil once it holds it, else one of w's errors,
// or errUnlocked when w.idle and the holder sat idle.
func (l *writeLock) wait(ctx context.Context, w lockWait) error {
	l.mu.Lock()
	now := l.now()
	l.ids++
	id := l.ids
	deadline, timedOut := time.Duration(0), w.lockTimedOut
	if w.lockTimeout > 0 {
		deadline = now + w.lockTimeout
	}
	if w.statementTimeout > 0 && (deadline == 0 || now+w.statementTimeout < deadline) {
		deadline, timedOut = now+w.statementTimeout, w.statementTimedOut
	}
	answer := l.rules.request(lockWaiter{id: id, since: now, deadline: deadline, idle: w.idle}, w.nowait)
	if answer != lockBusy && w.party != 0 {
		if l.parties == nil {
			l.parties = map[uint64]uint32{}
		}
		l.parties[id] = w.party
	}
	switch answer {
	case lockGranted:
		l.mu.Unlock()
		return nil
	case lockBusy:
		l.mu.Unlock()
		return w.busy
	}
	turn := make(chan struct{})
	if l.turns == nil {
		l.turns = map[uint64]chan struct{}{}
	}
	l.turns[id] = turn
	timer := l.timerFor(id, now)
	l.mu.Unlock()
	defer func() { timer.Stop() }() // the last timer set
	dc, stopCheck := l.graph.watch(w.party, w.deadlockTimeout, func() (string, []uint32) { return l.blockers(id) })
	defer stopCheck()
	for {
		select {
		case <-turn:
			return nil
		case <-dc.fired():
			if err := dc.check(); err != nil {
				l.mu.Lock()
				delete(l.turns, id)
				delete(l.parties, id)
				l.serve(l.rules.leave(id, l.now()))
				l.mu.Unlock()
				return err
			}
		case <-timer.C:
			l.mu.Lock()
			now := l.now()
			switch l.rules.check(id, now) {
			case lockGranted:
				l.mu.Unlock()
				<-turn
				return nil
			case lockTimedOut:
				delete(l.turns, id)
				delete(l.parties, id)
				l.mu.Unlock()
				return timedOut
			case lockIdle:
				delete(l.turns, id)
				delete(l.parties, id)
				l.mu.Unlock()
				return errUnlocked
			}
			timer.Stop()
			timer = l.timerFor(id, now)
			l.mu.Unlock()
		case <-ctx.Done():
			l.mu.Lock()
			delete(l.turns, id)
			delete(l.parties, id)
			l.serve(l.rules.leave(id, l.now()))
			l.mu.Unlock()
			return w.canceled(ctx)
		}
	}
}

// timerFor is waiter id's timer, firing when the rules may next tell it other than wait; a
// release serves it through its channel. Called with mu held.
func (l *writeLock) timerFor(id uint64, now time.Duration) *time.Timer {
	d := time.Duration(1<<63 - 1)
	if at := l.rules.wakeAt(id, now); at >= 0 {
		d = max(at-now, 0)
	}
	return time.NewTimer(d) //determinism:ok as now
}

// blockers is what waiter id waits for, in PostgreSQL's words, and the sessions it waits
// for: the holder and the waiters ahead of it (the lock goes to them first). Taking the lock
// waits on its holder's transaction, the holder's id standing for the transaction's number.
func (l *writeLock) blockers(id uint64) (what string, parties []uint32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rules.holder == id || l.rules.index(id) < 0 {
		return "", nil // served, or gone
	}
	if p := l.parties[l.rules.holder]; p != 0 {
		parties = append(parties, p)
	}
	for _, w := range l.rules.queue[:l.rules.index(id)] {
		if p := l.parties[w.id]; p != 0 && !slices.Contains(parties, p) {
			parties = append(parties, p)
		}
	}
	return fmt.Sprintf("ShareLock on transaction %d", l.rules.holder), parties
}

// serve tells waiter next (0: none) the lock is its. Called with mu held.
func (l *writeLock) serve(next uint64) {
	if turn, ok := l.turns[next]; ok {
		delete(l.turns, next)
		close(turn)
	}
}

// take is a PostgreSQL client's wait for the lock (pgWait), checked for a deadlock after
// deadlockTimeout when q names its session.
func (l *writeLock) take(ctx context.Context, q *query.Request, lockTimeout, statementTimeout, deadlockTimeout time.Duration, nowait bool, what string) error {
	w := pgWait(lockTimeout, statementTimeout, nowait, what)
	if q.Protocol == query.ProtocolPostgres {
		w.party, w.deadlockTimeout = q.SessionID, deadlockTimeout
	}
	return l.wait(ctx, w)
}

func (l *writeLock) release() {
	l.mu.Lock()
	delete(l.parties, l.rules.holder)
	l.serve(l.rules.release(l.now()))
	l.mu.Unlock()
}

// heldWrites marks a context whose caller holds the write lock: a statement it runs on the way
// (a retry, a session of its own) does not take it again.
type heldWrites struct{}

func holdsWrites(ctx context.Context) bool { return ctx.Value(heldWrites{}) != nil }

// writeIntent reads a client's statement: whether it writes (or locks rows for a write) and
// so takes the write lock; nowait: FOR UPDATE ... NOWAIT; what: the relation named in
// NOWAIT's error. It reads the request's tokens in place: every statement pays for it.
func writeIntent(q *query.Request) (write, nowait bool, what string) {
	if q.Protocol == query.ProtocolMySQL {
		return false, false, ""
	}
	toks := q.Analysis().Tokens
	first := slices.IndexFunc(toks, sqltok.Token.Significant)
	if first < 0 {
		return false, false, ""
	}
	lead := toks[first]
	switch {
	case lead.IsWord("insert"): // a plain INSERT waits for no one on PostgreSQL (but on a unique key)
		return wordAtTop(toks, "conflict") >= 0, false, ""
	case lead.IsWord("update", "delete", "merge", "create", "drop", "alter", "truncate", "comment", "grant", "revoke", "execute"):
		return true, false, ""
	case lead.IsWord("copy"):
		return wordAtTop(toks, "from") >= 0, false, ""
	case lead.IsWord("lock"):
		return !(wordsRun(toks, "access", "share") || wordsRun(toks, "row", "share")), false, ""
	case lead.IsWord("explain"):
		return anyWord(toks, "analyze") && writesAnywhere(toks), false, ""
	case lead.IsWord("with"):
		if writesAnywhere(toks) {
			return true, false, ""
		}
	}
	if q.Protocol != query.ProtocolPostgres || !lead.IsWord("select", "with", "table") || !mayLock(q.SQL) || withoutLocking(q) == q {
		return false, false, ""
	}
	if wordsRun(toks, "skip", "locked") {
		return false, false, ""
	}
	if i := wordAtTop(toks, "from"); i >= 0 {
		if j := nextSignificant(toks, i+1); j < len(toks) {
			what = `"` + pgIdent(toks[j]) + `"`
		}
	}
	return true, anyWord(toks, "nowait"), what
}

// wordAtTop is the index in toks of the first word w outside parentheses; -1 when none.
func wordAtTop(toks []sqltok.Token, w string) int {
	depth := 0
	for i, t := range toks {
		switch {
		case t.Kind == sqltok.Word && depth == 0 && t.IsWord(w):
			return i
		case t.Text == "(":
			depth++
		case t.Text == ")":
			depth--
		}
	}
	return -1
}

// anyWord: toks hold one of words, at any depth.
func anyWord(toks []sqltok.Token, words ...string) bool {
	return slices.ContainsFunc(toks, func(t sqltok.Token) bool { return t.IsWord(words...) })
}

// writesAnywhere: a data-modifying word (a WITH's CTE, EXPLAIN ANALYZE's statement).
func writesAnywhere(toks []sqltok.Token) bool {
	return anyWord(toks, "insert", "update", "delete", "merge")
}

// wordsRun: toks hold the word a, then b as the next significant token.
func wordsRun(toks []sqltok.Token, a, b string) bool {
	for i, t := range toks {
		if t.IsWord(a) {
			if j := nextSignificant(toks, i+1); j < len(toks) && toks[j].IsWord(b) {
				return true
			}
		}
	}
	return false
}

// plainRead: a statement whose effects a ROLLBACK undoes completely, with nothing the client
// saw depending on the transaction going on (a sequence's nextval does not go back).
func plainRead(q *query.Request) bool {
	w := leadWords(q, 1)
	if len(w) == 0 {
		return true
	}
	switch w[0] {
	case "set", "savepoint", "release": // SET LOCAL and savepoints are the session's, kept across
		return true
	case "select", "with", "table", "values", "show", "explain":
		return !containsFold(q.SQL, "nextval") && !containsFold(q.SQL, "setval") && !containsFold(q.SQL, "advisory")
	}
	return false
}

// keepsSnapshot: BEGIN or SET TRANSACTION asked for REPEATABLE READ or SERIALIZABLE, where
// PostgreSQL keeps the transaction's first snapshot to its end.
func keepsSnapshot(st statement) bool {
	return slices.Contains(st.words, "repeatable") || slices.Contains(st.words, "serializable")
}

// lockTimeoutOf is the lock_timeout for q: the transaction's SET LOCAL, else the connection's
// startup option (0: none).
func (s *session) lockTimeoutOf(q *query.Request) time.Duration {
	if s.localLockTimeout != nil {
		return *s.localLockTimeout
	}
	d, _ := startupLockTimeout(q)
	return d
}

// statementTimeoutOf is the statement_timeout for q: the transaction's SET LOCAL, else the
// connection's startup option.
func (s *session) statementTimeoutOf(q *query.Request) time.Duration {
	if s.localTimeout != nil {
		return *s.localTimeout
	}
	d, _ := statementTimeout(q)
	return d
}

// writeLocked runs a PostgreSQL client's statement in the session under the write lock
// when it writes, taking it first if the session does not hold it yet.
func (s *session) writeLocked(ctx context.Context, q *query.Request, run func(context.Context, *query.Request) (query.Rows, error)) (query.Rows, error) {
	write, nowait, what := writeIntent(q)
	if isMySQL(q) {
		write, nowait = mysqlWriteIntent(q)
	}
	if write && isMySQL(q) && !s.writing && s.status != 'E' && !(s.readOnly && s.status == 'T') && !holdsWrites(ctx) {
		if err := s.mysqlWriteTurn(ctx, nowait); err != nil { // mysqlwritelock.go
			return nil, err
		}
	} else if write && !s.writing && s.status != 'E' && !(s.readOnly && s.status == 'T') && !holdsWrites(ctx) {
		err := s.e.writes.take(ctx, q, s.lockTimeoutOf(q), s.statementTimeoutOf(q), s.deadlockTimeoutOf(q), nowait, what)
		if err != nil && err != errUnlocked {
			s.fail()
			if isDeadlock(err) {
				s.abortDeadlocked(ctx)
			}
			return nil, err
		}
		s.writing = err == nil
		if s.writing && s.status == 'T' && s.snapshot && !s.keepSnapshot && s.plainSoFar {
			s.holdLast(ctx) // a result still streaming would end with the transaction
		}
		if s.writing && s.status == 'T' && s.snapshot && !s.keepSnapshot && s.plainSoFar {
			// Only reads ran, and none of them can tell: a fresh snapshot now holds every
			// write committed before the lock was ours.
			if err := s.exec(ctx, "ROLLBACK"); err != nil {
				s.fail()
				return nil, err
			}
			if err := s.exec(ctx, "BEGIN TRANSACTION"); err != nil {
				s.status = 'I' // no transaction on DuckDB's side: the client's is gone
				s.releaseWrites()
				return nil, err
			}
		}
	}
	ended := func() {}
	if s.writing {
		ctx = context.WithValue(ctx, heldWrites{}, true)
		ended = s.e.writes.working()
	}
	before := s.status
	rows, err := run(ctx, q)
	ended()
	if s.writing {
		rows = s.e.writes.reading(rows, err)
	}
	switch {
	case s.status == 'T' && before == 'T':
		s.snapshot = true
		s.plainSoFar = s.plainSoFar && plainRead(q)
	case s.status == 'T': // BEGIN
		s.snapshot, s.plainSoFar = false, true
		s.keepSnapshot = s.keepSnapshot || keepsSnapshot(statement{words: leadWords(q, 16)})
	case s.status == 'I':
		s.keepSnapshot = false
	}
	if lead := leadWords(q, 1); s.status == 'T' && len(lead) == 1 && lead[0] == "set" {
		s.keepSnapshot = s.keepSnapshot || keepsSnapshot(statement{words: leadWords(q, 16)})
	}
	if !s.writing || s.status != 'I' {
		return rows, err
	}
	if err != nil || rows == nil || rows.Schema() == nil {
		s.releaseWrites()
		return rows, err
	}
	s.writing = false // the lock goes with the rows: a statement outside a transaction
	return &writeRows{Rows: rows, release: s.e.writes.release}, nil
}

// releaseWrites lets go of the write lock if the session holds it.
func (s *session) releaseWrites() {
	if s.writing {
		s.writing = false
		s.e.writes.release()
	}
}

// writeTurn takes the write lock for a PostgreSQL client's statement outside a transaction
// (Engine.Execute); release is nil when the statement takes none.
func (e *Engine) writeTurn(ctx context.Context, q *query.Request) (context.Context, func(), error) {
	write, nowait, what := writeIntent(q)
	if !write || holdsWrites(ctx) {
		return ctx, nil, nil
	}
	lockTimeout, err := startupLockTimeout(q)
	if err != nil {
		return ctx, nil, err
	}
	statementTimeout, err := statementTimeout(q)
	if err != nil {
		return ctx, nil, err
	}
	switch err := e.writes.take(ctx, q, lockTimeout, statementTimeout, startupDeadlockTimeout(q), nowait, what); {
	case err == errUnlocked:
		return ctx, nil, nil
	case err != nil:
		return ctx, nil, err
	}
	return context.WithValue(ctx, heldWrites{}, true), e.writes.release, nil
}

// reading is a holder's statement's result whose every read is the holder's work
// (writeLock.working): a holder streaming a long result is not idle while its client reads,
// and one whose client left the result unread is idle idleAfter after its last read, as one
// that sent nothing is (before, an unread result kept its holder at work, and every writer
// waiting, until the session's next statement).
func (l *writeLock) reading(rows query.Rows, err error) query.Rows {
	if err != nil || rows == nil || rows.Schema() == nil {
		return rows
	}
	l.mu.Lock()
	holder := l.rules.holder
	l.mu.Unlock()
	if holder == 0 {
		return rows
	}
	return &readingRows{Rows: rows, l: l, holder: holder}
}

// readingRows marks each read of its rows its holder's work.
type readingRows struct {
	query.Rows
	l      *writeLock
	holder uint64
}

func (r *readingRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	done := r.l.workingAs(r.holder)
	defer done()
	return r.Rows.Next(ctx)
}

// withWrites is a statement's result holding the write lock until its rows are read or closed.
func withWrites(rows query.Rows, err error, release func()) (query.Rows, error) {
	if err != nil || rows == nil || rows.Schema() == nil {
		release()
		return rows, err
	}
	return &writeRows{Rows: rows, release: release}, nil
}

// writeRows lets go of the write lock once its rows are read or closed.
type writeRows struct {
	query.Rows
	once    sync.Once
	release func()
}

func (r *writeRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	rec, err := r.Rows.Next(ctx)
	if err != nil { // io.EOF or the statement's error: it is over
		r.once.Do(r.release)
	}
	return rec, err
}

func (r *writeRows) Close() error {
	err := r.Rows.Close()
	r.once.Do(r.release)
	return err
}

// hasRun: words holds a then b, one after the other.
func hasRun(words []string, a, b string) bool {
	for i := 0; i+1 < len(words); i++ {
		if words[i] == a && words[i+1] == b {
			return true
		}
	}
	return false
}
