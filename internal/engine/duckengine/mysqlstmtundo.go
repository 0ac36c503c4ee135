package duckengine

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Statement-level undo for a MySQL client's transaction. MariaDB (InnoDB) undoes a refused
// statement of a transaction (a duplicate key, a foreign key, NOT NULL, CHECK, a bad value) and
// keeps the transaction: the next statements run and COMMIT commits the ones that succeeded.
// DuckDB aborts the whole transaction on such an error and has no savepoints.
//
// So a MySQL client's session keeps the statements of its open transaction that changed
// something (stmtLog), and when one fails it rolls DuckDB's transaction back, begins another
// and runs the kept statements again, in order: the transaction is then as it was before the
// refused statement, as on MariaDB. Nothing is paid while statements succeed but a copy of each
// writing statement's request; a refusal costs a run of the transaction's writes so far
// (bounded by stmtLogMax statements and stmtLogBytesMax bytes of text and arguments, past which
// a refusal fails the whole transaction, as before). A kept write runs again in about the time
// it first took (BenchmarkMySQLRefusedWriteUndo), so the bound is that of a refusal's stall.
//
// What a run again would not give back the same is not kept, and a refusal after it fails the
// whole transaction, as before: a statement whose values are random (RAND(), UUID()), data a
// client streams (LOAD DATA LOCAL INFILE). A statement that reads or assigns a user variable is
// kept with the variables' values it ran with (mysqlundovars.go). SELECT, SHOW and the other
// reads are not kept; a SET that names FOREIGN_KEY_CHECKS is (its session state follows the
// run), other SETs change nothing a ROLLBACK undoes and are not kept.
var (
	stmtLogMax      = 1000 // a var for tests (export_stmtundo_test.go)
	stmtLogBytesMax = 4 << 20
)

// keptStmt is a statement kept to run again, with the AUTO_INCREMENT ids it reserved and its
// command tag (the rows it changed), which running it again must give again (errReplayDiffers).
type keptStmt struct {
	q   *query.Request
	ids []int64
	// rows is the statement's result until its tag is read (settleTag: once the client has
	// read it, at the next statement).
	rows query.Rows
	tag  string
	// vars: the user variables it names, as they were before it ran (mysqlundovars.go).
	vars *varSnapshot
	// now: its NOW(), written again when it runs again (mysqlnowpin.go).
	now string
}

// stmtLog is a MySQL client's open transaction's statements, kept to run again (mysqlstmtundo.go).
type stmtLog struct {
	stmts []keptStmt
	bytes int
	// lost: a statement ran that cannot be run again, or the log is full: a refusal fails the
	// whole transaction; lostAt is how many statements the log held then (a savepoint taken
	// at or before it can still be rolled back to: mysqlsavepoints.go).
	lost   bool
	lostAt int
	// marks are the transaction's savepoints, oldest first (mysqlsavepoints.go).
	marks []spMark
	// differed: the kept writes changed other rows when run again to undo a refused statement
	// (errReplayDiffers): the client's next statement rolls the transaction back and is
	// answered so.
	differed bool
	// depth counts the session's Execute calls under way (its own statements call it again):
	// only the client's (the outermost) is kept or undone.
	depth int
	// snaps numbers the user variables' copies (mysqlundovars.go).
	snaps int
	// start is the statement under way's start, now its NOW(), UTC ("": not taken yet),
	// first the transaction's first NOW() taken; writing: the statement changes data
	// (mysqlnowpin.go).
	start      time.Time
	now, first string
	writing    bool
}

func (l *stmtLog) reset() {
	clear(l.stmts)
	l.stmts, l.bytes, l.lost, l.lostAt, l.marks, l.differed = l.stmts[:0], 0, false, 0, l.marks[:0], false
	l.snaps = 0 // the next transaction's copies reuse the names: as many as one log's at most
	l.now, l.first = "", ""
}

// lose notes that the log cannot undo what ran from its n-th statement on.
func (l *stmtLog) lose(n int) {
	if !l.lost {
		l.lost, l.lostAt = true, n
	}
}

// settleTag reads the command tag of the newest kept statement, whose result its client has
// read by the time the next statement runs.
func (l *stmtLog) settleTag() {
	if n := len(l.stmts); n > 0 && l.stmts[n-1].rows != nil {
		l.stmts[n-1].tag, l.stmts[n-1].rows = l.stmts[n-1].rows.Tag(), nil
	}
}

// Execute runs q; a MySQL client's statement refused inside its transaction is undone alone
// (undoStatement).
func (s *session) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	if !isMySQL(q) || s.undo.depth > 0 {
		return s.execute(ctx, q)
	}
	s.undo.depth++
	defer func() {
		s.undo.depth--
		if s.status == 'I' {
			s.releaseWrites() // a transaction ended here, not by a COMMIT or ROLLBACK of writeLocked's
			s.unpinNow(ctx)   // mysqlnowpin.go
		}
	}()
	s.lockWaited = 0
	if containsFold(q.SQL, "innodb_lock_wait_timeout") {
		s.lockBudget = 0 // set again, perhaps: read at the next wait
	}
	s.undo.settleTag()
	if s.status == 'E' {
		s.undoStatement(ctx) // a result's error while its rows were read failed the transaction
	}
	if s.undo.differed {
		return s.endDiffered(ctx, q)
	}
	if verb, name, ok := mysqlSavepointStmt(q.SQL); ok {
		rows, err := s.mysqlSavepoint(ctx, verb, name) // mysqlsavepoints.go
		if s.status == 'I' {
			s.undo.reset()
		}
		return rows, err
	}
	inTx := s.status == 'T'
	if inTx {
		s.undo.startStatement(q.SQL)
		ctx = withTxNow(ctx, &s.undo) // mysqlnowpin.go
	}
	var ids *stmtIDs
	var vars *varSnapshot
	varsKept := true
	if inTx && !s.undo.lost {
		ids = &stmtIDs{}
		ctx = withIDs(ctx, ids)
		if changesData(q.SQL) {
			vars, varsKept = s.snapshotVars(ctx, q.SQL) // mysqlundovars.go
		}
	}
	rows, err := s.execute(ctx, q)
	if isWriteConflict(err) {
		rows, err = s.afterConflict(ctx, q, inTx, ids, err) // mysqlwritelock.go
	}
	switch {
	case !inTx || s.status == 'I':
		s.undo.reset() // no transaction before, or it ended: a new one starts with nothing kept
	case s.status == 'E':
		s.undoStatement(ctx)
	case err == nil && !varsKept:
		s.undo.lose(len(s.undo.stmts))
	case err == nil:
		s.undo.keep(q, ids, rows, vars)
	}
	return rows, err
}

// undoStatement undoes the statement that failed the session's transaction: DuckDB's
// transaction rolled back and begun again, the kept statements run again. When that cannot be
// done the transaction stays failed.
func (s *session) undoStatement(ctx context.Context) {
	if s.undo.lost || s.status != 'E' {
		return
	}
	if s.replay(ctx) != nil && s.status == 'I' {
		// The kept writes changed other rows when run again: the client was told of its
		// statement's own error, so the transaction stays open for it (an empty one, 'T',
		// that its COMMIT reaches) until its next statement, which ends it (endDiffered).
		_ = s.exec(context.WithoutCancel(ctx), "BEGIN TRANSACTION")
		s.status, s.undo.differed = 'T', true
		s.undo.lose(0)
	}
}

// endDiffered answers the client's statement after a refused one whose undo found the kept
// writes changing other rows: the transaction is rolled back, and the statement, unless it is
// that ROLLBACK, answered errReplayDiffers (MariaDB's deadlock: 1213), not run. A COMMIT so
// answered tells the client nothing was committed.
func (s *session) endDiffered(ctx context.Context, q *query.Request) (query.Rows, error) {
	_, _ = s.transaction(ctx, statement{tx: txRollback})
	s.undo.reset()
	if _, _, ok := mysqlSavepointStmt(q.SQL); !ok && sqltok.FirstKeywordIs(q.SQL, sqltok.MySQL, "rollback") {
		return engine.TagRows("ROLLBACK"), nil
	}
	return nil, errReplayDiffers
}

// replay rolls DuckDB's failed transaction back, begins another and runs the kept statements
// again. A statement that fails again leaves the transaction failed and the log lost; one that
// changes another number of rows than the first time (another client committed between) rolls
// the whole transaction back (errReplayDiffers).
func (s *session) replay(ctx context.Context) error {
	ctx = withTxNow(context.WithoutCancel(ctx), &s.undo) // a cancelled statement is undone too (MariaDB's 1317, 1969)
	s.holdLast(ctx)
	s.undo.settleTag()
	if s.exec(ctx, "ROLLBACK") != nil || s.exec(ctx, "BEGIN TRANSACTION") != nil {
		s.undo.lose(0)
		return errAborted
	}
	s.status, s.written = 'T', nil
	if s.pinNow(ctx) != nil { // mysqlnowpin.go
		s.fail()
		s.undo.lose(0)
		return errAborted
	}
	if names := s.undo.keptVarNames(); len(names) > 0 {
		defer s.holdVars(ctx, names)() // the variables as they are now, after the run (mysqlundovars.go)
	}
	defer func(now string, writing bool) { s.undo.now, s.undo.writing = now, writing }(s.undo.now, s.undo.writing)
	for _, k := range s.undo.stmts {
		s.undo.now, s.undo.writing = k.now, true // its NOW() as it ran (mysqlnowpin.go)
		if k.vars != nil && k.vars.restore(s, ctx) != nil {
			s.fail()
			s.undo.lose(0)
			return errAborted
		}
		rows, err := s.execute(withIDs(ctx, &stmtIDs{ids: slices.Clone(k.ids), replaying: true}), k.q)
		tag := ""
		if err == nil {
			err = drain(ctx, rows)
			tag = rows.Tag()
		}
		s.last = nil
		if err == nil && s.status == 'T' && tag != k.tag {
			_, _ = s.transaction(ctx, statement{tx: txRollback})
			return errReplayDiffers
		}
		if err != nil || s.status != 'T' {
			s.fail()
			s.undo.lose(0)
			return errAborted
		}
	}
	if s.fkPending || s.fkChecksOff || slices.ContainsFunc(s.undo.stmts, func(k keptStmt) bool { return namesForeignKeyChecks(k.q) }) {
		s.fkChecksOff = foreignKeyChecksOff(ctx, s.conn)
		s.fkPending = !s.fkChecksOff && anyPending(ctx, s.conn)
	}
	return nil
}

// drain reads rows to their end and closes them.
func drain(ctx context.Context, rows query.Rows) error {
	defer rows.Close()
	for rows.Schema() != nil {
		b, err := rows.Next(ctx)
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		b.Release()
	}
	return nil
}

// keep notes q, which succeeded in the open transaction, to be run again if a later statement
// fails.
func (l *stmtLog) keep(q *query.Request, ids *stmtIDs, rows query.Rows, vars *varSnapshot) {
	if l.lost || !changesData(q.SQL) {
		return
	}
	if q.CopyIn != nil || ids == nil || ids.unplanned || randomValues(q.SQL) || rows == nil {
		l.lose(len(l.stmts))
		return
	}
	c := *q
	c.Args = slices.Clone(q.Args)
	n := len(q.SQL)
	for i, a := range c.Args {
		switch v := a.(type) {
		case []byte: // a frontend may reuse the buffer its parameters came in
			c.Args[i] = bytes.Clone(v)
			n += len(v)
		case string:
			n += len(v)
		}
	}
	l.bytes += n
	if len(l.stmts) >= stmtLogMax || l.bytes > stmtLogBytesMax {
		l.lose(len(l.stmts))
		return
	}
	l.stmts = append(l.stmts, keptStmt{q: &c, ids: ids.ids, rows: rows, vars: vars, now: l.now})
}

// changesData reports whether a MySQL client's statement may change what a ROLLBACK undoes:
// not a read, not a transaction's own statement, not a SET but one of FOREIGN_KEY_CHECKS.
func changesData(sqlText string) bool {
	switch strings.ToLower(sqltok.FirstKeyword(sqlText, sqltok.MySQL)) {
	case "select", "show", "describe", "desc", "explain", "with", "values", "table", "help", "do",
		"savepoint", "release", "rollback", "commit", "begin", "start", "xa", "lock", "unlock", "":
		return false
	case "set":
		return strings.Contains(strings.ToLower(sqlText), "foreign_key_checks")
	}
	return true
}

// randomValues reports whether a statement calls a function whose value differs each run.
func randomValues(sqlText string) bool {
	low := strings.ToLower(sqlText)
	if !strings.Contains(low, "rand") && !strings.Contains(low, "uuid") && !strings.Contains(low, "guid") {
		return false
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.MySQL)
	for i, t := range toks[:max(len(toks)-1, 0)] {
		if t.IsWord("rand", "random", "uuid", "uuid_short", "gen_random_uuid", "sys_guid") && toks[i+1].Text == "(" {
			return true
		}
	}
	return false
}

// stmtIDs are the AUTO_INCREMENT ids a kept statement reserved (autoinc.go's reserve), in
// order, so that it gets the same ones when it runs again: DuckDB's sequences do not roll back.
type stmtIDs struct {
	ids       []int64
	replaying bool // reserve gives ids[0], ... instead of taking new ones
	unplanned bool // an INSERT took ids from its column's DEFAULT: they would differ
}

type stmtIDsKey struct{}

func withIDs(ctx context.Context, r *stmtIDs) context.Context {
	return context.WithValue(ctx, stmtIDsKey{}, r)
}

func idsOf(ctx context.Context) *stmtIDs {
	r, _ := ctx.Value(stmtIDsKey{}).(*stmtIDs)
	return r
}

// recordingIDs reports whether the statement's ids are kept: its INSERT writes them in.
func recordingIDs(ctx context.Context) bool { return idsOf(ctx) != nil }

// replayedID is the next id a statement run again reserved the first time.
func replayedID(ctx context.Context) (int64, bool) {
	r := idsOf(ctx)
	if r == nil || !r.replaying || len(r.ids) == 0 {
		return 0, false
	}
	id := r.ids[0]
	r.ids = r.ids[1:]
	return id, true
}

// noteID keeps an id the statement reserved.
func noteID(ctx context.Context, id int64) {
	if r := idsOf(ctx); r != nil && !r.replaying {
		r.ids = append(r.ids, id)
	}
}

// noteUnplanned notes that the statement's ids came from its column's DEFAULT.
func noteUnplanned(ctx context.Context) {
	if r := idsOf(ctx); r != nil {
		r.unplanned = true
	}
}
