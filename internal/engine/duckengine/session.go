package duckengine

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

var (
	_ engine.SessionOpener = (*Engine)(nil)
	_ engine.Describer     = (*session)(nil)
	_ engine.TxFailer      = (*session)(nil)
)

// OpenSession pins one connection for a client's transaction: nothing else runs on it until
// the session is closed.
func (e *Engine) OpenSession(ctx context.Context, q *query.Request) (engine.Session, error) {
	conn, err := e.connFor(ctx, q)
	if err != nil {
		e.noteFatal(err)
		return nil, err
	}
	s := &session{e: e, conn: conn, status: 'I', clean: true}
	if q.Protocol == query.ProtocolTrino {
		s.trinoSchema = q.Schema
	}
	return s, nil
}

// session keeps PostgreSQL's transaction semantics on one DuckDB connection: it tracks the
// status itself (DuckDB reports none), an error inside a transaction fails it until ROLLBACK
// (DuckDB would go on after some errors), COMMIT of a failed transaction rolls back, BEGIN
// inside a transaction and COMMIT/ROLLBACK outside one change nothing, and a READ ONLY
// transaction refuses writes.
type session struct {
	e        *Engine
	conn     *sql.Conn
	status   byte // 'I', 'T' or 'E'
	readOnly bool
	clean    bool // only statements that leave no connection state ran (statement.clean)
	// savepoints are the transaction's savepoints, oldest first: DuckDB has none, so a
	// savepoint is a name kept here, released as PostgreSQL releases it, and a ROLLBACK TO one
	// fails the whole transaction (savepoint).
	savepoints []string
	// locals are the settings SET LOCAL changed in the transaction, set back at its end;
	// localTimeout its statement_timeout (setlocal.go).
	locals       []localSetting
	localTimeout *time.Duration
	// holder is the client whose advisory transaction locks the transaction holds ("": none).
	holder string
	last   *engine.Holdable // the last statement's result, if it has rows: held before the next runs
	// written are the tables a MySQL client's transaction deleted from or updated (mysqlrefwrites.go).
	written []string
	// deferral is the transaction's SET CONSTRAINTS and deferred keys set aside (pgdeferred.go).
	deferral deferral
	// trinoSchema is the Trino client's schema the connection's search_path names ("": its
	// own path); a USE inside the transaction moves it (trinoschema.go).
	trinoSchema string
	// fkChecksOff: a MySQL client set FOREIGN_KEY_CHECKS=0 on the session (mysqlfkrelease.go).
	fkChecksOff bool
	// fkPending: keys wait with the checks on, held on the session's writes (mysqlfkpending.go);
	// holdingKeys while a write runs so held.
	fkPending, holdingKeys bool
	// undo is a MySQL client's open transaction's statements, run again to undo one refused (mysqlstmtundo.go).
	undo stmtLog
	// writing: the session holds the engine's write lock; snapshot: a statement ran in the
	// transaction (DuckDB's snapshot is taken), plainSoFar: all of them plain reads;
	// keepSnapshot: REPEATABLE READ or SERIALIZABLE; localLockTimeout: SET LOCAL lock_timeout
	// (pgwritelock.go).
	writing, snapshot, plainSoFar, keepSnapshot bool
	localLockTimeout                            *time.Duration
	// localDeadlockTimeout: SET LOCAL deadlock_timeout (pgdeadlock.go).
	localDeadlockTimeout *time.Duration
	// lockWaited is how long a MySQL client's last write waited for the write lock, of its
	// innodb_lock_wait_timeout, lockBudget that plus 1 ns (0: not read; mysqlwritelock.go).
	lockWaited, lockBudget time.Duration
	// nowPinned: qf_now holds a MySQL client's transaction's time (mysqlnowpin.go).
	nowPinned bool
}

var errAborted = &query.Error{Code: sqlstate.InFailedSQLTransaction, Message: "current transaction is aborted, commands ignored until end of transaction block"}

func (s *session) execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	return s.writeLocked(ctx, q, s.executeStatement) // pgwritelock.go
}

func (s *session) executeStatement(ctx context.Context, q *query.Request) (query.Rows, error) {
	s.holdLast(ctx)
	if q.Protocol == query.ProtocolTrino && q.Schema != "" && q.Schema != s.trinoSchema {
		if err := followSchema(ctx, s.conn, q.Schema); err != nil {
			return nil, err
		}
		s.trinoSchema = q.Schema
	}
	if s.fkChecksOff && s.status != 'E' && writesRows(q) {
		if err := releaseKeysFor(ctx, s.conn, q.SQL, s.status == 'T'); err != nil { // mysqlfkrelease.go
			s.fail()
			return nil, err
		}
	}
	if s.fkPending && !s.fkChecksOff && !s.holdingKeys && s.status != 'E' && writesRows(q) {
		return s.holdPendingKeys(ctx, q) // mysqlfkpending.go
	}
	if call, ok, err := readAdvisory(q); ok {
		return s.runAdvisory(ctx, call, q, err)
	}
	if rows, handled, err := s.upsertByRows(ctx, q); handled { // mysqlupsertrows.go
		return rows, err
	}
	q, err := copyOutQuery(q)
	if err != nil {
		return nil, err
	}
	client := q
	if q, err = sequenceCalls(q); err != nil { // pgsessionseq.go
		s.fail()
		return nil, err
	}
	q, err = compatRequest(s.withLocalTimeouts(q), s.e.reopen.database)
	if err != nil {
		s.fail()
		return nil, err
	}
	if pinned := pinnedNow(ctx, q.SQL); pinned != q.SQL { // a MySQL transaction's NOW() (mysqlnowpin.go)
		c := *q
		c.SQL, q = pinned, &c
	}
	q = s.e.currvals.written(client, q)
	if rows, handled, err := s.setConstraints(ctx, client); handled { // pgdeferred.go
		return rows, err
	}
	if own, handled, err := ownStatement(client); handled {
		s.e.noteActions(client)
		s.e.noteYear(client) // mysqlyear.go
		rows, err := s.runOwn(ctx, client, own, err)
		err = s.e.checkViolation(ctx, client, err) // a COPY's row (pgcheckerror.go)
		if namesForeignKeyChecks(client) {
			s.fkChecksOff = foreignKeyChecksOff(ctx, s.conn)
			s.fkPending = !s.fkChecksOff && anyPending(ctx, s.conn)
		}
		return rows, err
	}
	if err := s.e.found.count(ctx, client, s.Execute); err != nil {
		return nil, err // the count's error failed the transaction
	}
	q = pgInsertDefaults(ctx, s.conn, client, q)                  // pginsertdefaults.go
	if q, err = pgFitValues(ctx, s.conn, client, q); err != nil { // pgvarcharfit.go
		s.fail()
		return nil, err
	}
	if q, err = s.e.identityWrite(ctx, s.conn, client, q); err != nil { // pgidentity.go
		s.fail()
		return nil, err
	}
	q, up := mysqlUpsert(ctx, s.conn, client, q)
	q = s.e.yearValues(ctx, s.conn, client, q) // mysqlyear.go
	q, ai := mysqlInsert(ctx, s.conn, client, q)
	q, uc := mysqlUpdate(ctx, s.conn, client, q)
	if err := setLastInsertID(ctx, s.conn, client); err != nil {
		s.fail()
		return nil, err
	}
	if err := s.e.found.set(ctx, s.conn, client); err != nil {
		s.fail()
		return nil, err
	}
	st, err := s.e.statement(s.conn, client, q.SQL)
	if err != nil {
		err = showError(client, q, err)
		s.e.noteFatal(err)
		s.fail()
		return nil, err
	}
	if st.tx != txNone {
		return s.transaction(ctx, st)
	}
	if s.status == 'E' {
		return nil, errAborted
	}
	if s.readOnly && s.status == 'T' && !st.readsOnly() {
		s.fail()
		return nil, &query.Error{Code: sqlstate.ReadOnlySQLTransaction, Message: fmt.Sprintf("cannot execute %s in a read-only transaction", strings.ToUpper(st.words[0]))}
	}
	outer := ctx
	ctx, cancel, explain, err := s.timed(ctx, q)
	if err != nil {
		s.fail()
		return nil, err
	}
	s.clean = s.clean && st.clean()
	if up != nil {
		defer cancel()
		rows, err := up.count(ctx, s.conn, s.status == 'T', func() (query.Rows, error) { return runInsert(ctx, s.conn, q, st.p, ai) })
		if err != nil {
			s.e.noteFatal(err)
			s.fail()
		}
		return rows, explain(err)
	}
	if uc != nil {
		defer cancel()
		rows, err := s.mysqlWrite(ctx, client, q, func() (query.Rows, error) { return uc.run(ctx, s.conn, s.status == 'T', q, st.p) })
		if err != nil && stillReferenced(err) && s.status != 'T' {
			rows, err = uc.retryAside(ctx, s.conn, q, st.p, err) // mysqlupdatekeys.go
		}
		err = parentRowInUse(client, err) // mysqlparent.go
		if err != nil {
			s.e.noteFatal(err)
			s.fail()
		}
		return rows, explain(err)
	}
	if err := s.e.pgSetval(ctx, s.conn, s.status == 'T', client, q, st.p); err != nil { // pgsetval.go
		cancel()
		s.e.noteFatal(err)
		s.fail()
		return nil, explain(err)
	}
	if err := s.deferWrite(ctx, client, q, st.p); err != nil { // pgdeferred.go
		cancel()
		s.e.noteFatal(err)
		s.fail()
		return nil, explain(err)
	}
	if s.status == 'T' && s.e.actionsMaybe.Load() && withActionsOf(client) {
		if rows, ok, err := s.e.actionsInTransaction(ctx, s.conn, actionsClient(client, st.p.sqlText), q, st.p, s.noteWritten); ok { // pgrefintx.go
			cancel()
			if err != nil {
				err = mysqlActionError(client, err)
				s.e.noteFatal(err)
				s.fail()
				return nil, explain(err)
			}
			return rows, nil
		}
	}
	taking := watchDefaults(ctx, s.conn, client, st.p)                                // pgsessionseq.go
	rows, err := s.pgWrite(ctx, client, q, st.p, cancel, func() (query.Rows, error) { // pgrefwrites.go
		return s.mysqlWrite(ctx, client, q, func() (query.Rows, error) { return run(ctx, s.conn, q, st.p, cancel) })
	})
	taking.finish(ctx, s.conn)
	if err != nil && ai != nil && s.status == 'I' {
		ai.afterRefusal(context.WithoutCancel(outer), s.conn, err) // mysqlaispent.go
	}
	if err != nil && stillReferenced(err) { // a foreign key's ON DELETE action (pgcascade.go)
		rows, err = s.e.retryDelete(outer, s.conn, s.status == 'T', actionsClient(client, st.p.sqlText), q, st.p, err)
		err = mysqlActionError(client, err)
	}
	if err != nil {
		s.e.noteFatal(err)
		s.fail()
		return nil, explain(s.e.checkViolation(outer, client, err)) // pgcheckerror.go
	}
	rows = &watchedRows{Rows: rows, onErr: func(err error) { s.e.noteFatal(err); s.fail() }}
	if ai != nil {
		return ai.insertTag(ctx, rows)
	}
	if rows.Schema() != nil {
		s.last = engine.NewHoldable(rows)
		return s.last, nil
	}
	return rows, nil
}

// holdLast reads the rest of the last result into memory, if a client left it open: DuckDB
// streams one result at a time on a connection, and the next statement there would end it,
// its unread rows silently missing (JDBC's setFetchSize reads 100 rows of a portal, runs
// another statement, then reads on; a cursor is read a FETCH at a time between statements).
// PostgreSQL keeps every portal open beside the others; here the open one goes to memory, as
// go-duckdb's own (materialized) results are.
func (s *session) holdLast(ctx context.Context) {
	if s.last != nil {
		_ = s.last.Hold(ctx, 0) // an error is the result's, given to its reader after the rows held
		s.last = nil
	}
}

// admit is what refuses a statement the session is asked to run: err, the statement's own
// (reading it failed, which fails the transaction), or an aborted transaction; nil: run it.
func (s *session) admit(err error) error {
	if err != nil {
		s.fail()
		return err
	}
	if s.status == 'E' {
		return errAborted
	}
	return nil
}

// runOwn runs a statement the engine runs itself (ownStatement) in the session's transaction,
// or in one of its own outside one.
func (s *session) runOwn(ctx context.Context, q *query.Request, own ownRun, err error) (query.Rows, error) {
	if err := s.admit(err); err != nil {
		return nil, err
	}
	if first := strings.ToLower(leadWords(q, 1)[0]); s.readOnly && s.status == 'T' && first != "lock" && first != "reset" { // lockShare, resetIgnored: no writes
		s.fail()
		return nil, &query.Error{Code: sqlstate.ReadOnlySQLTransaction, Message: fmt.Sprintf("cannot execute %s in a read-only transaction", strings.ToUpper(leadWords(q, 1)[0]))}
	}
	s.clean = false // DDL, or a COPY that failed half-way: retire the connection after
	rows, err := own(ctx, s.conn, s.status == 'T')
	if err != nil {
		s.e.noteFatal(err)
		s.fail()
	}
	return rows, err
}

// runAdvisory runs an advisory lock call in the session's transaction: its transaction locks
// are let go when the transaction ends (endTx).
func (s *session) runAdvisory(ctx context.Context, call advisoryCall, q *query.Request, err error) (query.Rows, error) {
	if err := s.admit(err); err != nil {
		return nil, err
	}
	if s.status == 'T' {
		s.holder = advisoryHolder(q)
	}
	rows, err := s.e.advisory.run(ctx, call, q, s.status == 'T', s.deadlockTimeoutOf(q))
	if err != nil {
		s.fail()
		if isDeadlock(err) {
			s.abortDeadlocked(ctx)
		}
	}
	return rows, err
}

// FailTx fails an open transaction (engine.TxFailer).
func (s *session) FailTx() { s.fail() }

// fail marks an open transaction failed.
func (s *session) fail() {
	if s.status == 'T' {
		s.status = 'E'
	}
}

// transaction runs a transaction-control statement.
func (s *session) transaction(ctx context.Context, st statement) (query.Rows, error) {
	switch {
	case s.status == 'E' && (st.tx == txBegin || st.tx == txSet):
		return nil, errAborted
	case st.tx == txBegin && s.status == 'T':
		return engine.TagRows("BEGIN"), nil // PostgreSQL warns: already in a transaction
	case st.tx == txBegin:
		if err := s.exec(ctx, "BEGIN TRANSACTION"); err != nil {
			return nil, err
		}
		s.status, s.readOnly = 'T', st.readOnly
		return engine.TagRows("BEGIN"), nil
	case st.tx == txDeallocateAll:
		return outsideTransaction(st)
	case st.tx == txSavepoint || st.tx == txRelease || st.tx == txRollbackTo:
		return s.savepoint(st)
	case st.tx == txSet:
		s.readOnly = s.readOnly || st.readOnly && s.status == 'T'
		return engine.TagRows("SET"), nil
	case st.tx == txSetLocal:
		return s.setLocal(ctx, st)
	case s.status == 'I': // COMMIT or ROLLBACK without a transaction: PostgreSQL warns
		return outsideTransaction(st)
	}
	failed := s.status == 'E'
	var refused error // a deferred key's violation: the COMMIT rolls back (pgdeferred.go)
	if st.tx == txCommit && !failed {
		refused = s.checkDeferred(ctx, true)
		failed = refused != nil
	}
	s.status, s.readOnly, s.savepoints, s.written, s.deferral = 'I', false, s.savepoints[:0], nil, deferral{}
	defer s.endTx()
	if st.tx == txCommit && !failed {
		if err := s.exec(ctx, "COMMIT"); err != nil {
			_ = s.exec(context.Background(), "ROLLBACK") // DuckDB has rolled back; make sure
			return nil, err
		}
		return engine.TagRows("COMMIT"), nil
	}
	if err := s.exec(ctx, "ROLLBACK"); err != nil {
		s.clean = false // the connection's state is unknown: retire it
		return nil, err
	}
	if refused != nil {
		return nil, refused
	}
	return engine.TagRows("ROLLBACK"), nil
}

// savepoint answers SAVEPOINT, RELEASE and ROLLBACK TO in a session. The first two succeed as
// in PostgreSQL (the common path of Django's nested atomic blocks, SQLAlchemy's begin_nested,
// JDBC's autosave and psql's ON_ERROR_ROLLBACK: a savepoint taken, then released), but DuckDB
// cannot undo part of a transaction: ROLLBACK TO fails, and fails the transaction, so that its
// client rolls it all back rather than go on with work it meant to undo.
func (s *session) savepoint(st statement) (query.Rows, error) {
	if s.status == 'I' {
		return nil, errNoTransactionBlock(st)
	}
	name := st.savepointName()
	at := slices.Index(s.savepoints, name)
	if st.tx != txSavepoint && at < 0 {
		if s.status != 'E' {
			s.fail()
		}
		return nil, &query.Error{Code: sqlstate.InvalidSavepointSpecification, Message: fmt.Sprintf("savepoint %q does not exist", name)}
	}
	switch {
	case s.status == 'E' && st.tx != txRollbackTo:
		return nil, errAborted
	case st.tx == txSavepoint:
		s.savepoints = append(s.savepoints, name)
		return engine.TagRows("SAVEPOINT"), nil
	case st.tx == txRelease:
		s.savepoints = s.savepoints[:at]
		return engine.TagRows("RELEASE"), nil
	}
	s.fail()
	return nil, &query.Error{Code: sqlstate.FeatureNotSupported, Message: "ROLLBACK TO SAVEPOINT is not supported on DuckDB, " +
		"which cannot undo part of a transaction: the transaction is aborted, roll it back"}
}

func (s *session) exec(ctx context.Context, sqlText string) error {
	_, err := s.conn.ExecContext(ctx, sqlText)
	err = wrapErr(err)
	s.e.noteFatal(err)
	return err
}

func (s *session) TxStatus() byte { return s.status }

// Describe prepares q on the session's connection, which may see what the transaction made.
func (s *session) Describe(ctx context.Context, q *query.Request) (*engine.Description, error) {
	s.holdLast(ctx) // preparing on the connection would end a streaming result too
	return s.e.describe(ctx, s.conn, q)
}

// Close rolls back an open transaction and returns the connection to the pool, or closes it
// when a statement may have left state on it.
func (s *session) Close() error {
	if s.last != nil {
		_ = s.last.Close() // its connection goes back to the pool: nothing may read it after
		s.last = nil
	}
	if s.status != 'I' {
		s.clean = s.exec(context.Background(), "ROLLBACK") == nil && s.clean
		s.endTx()
	}
	s.releaseWrites()
	keep := s.clean
	release(s.conn, keep)
	return nil
}

// watchedRows reports an error while reading rows (a fatal one invalidates the database; in a
// session any fails the transaction).
type watchedRows struct {
	query.Rows
	onErr func(error)
}

func (r *watchedRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	rec, err := r.Rows.Next(ctx)
	if err != nil && err != io.EOF {
		r.onErr(err)
	}
	return rec, err
}
