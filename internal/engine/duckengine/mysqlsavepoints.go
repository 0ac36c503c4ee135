package duckengine

import (
	"context"
	"fmt"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's savepoints on DuckDB, which has none. The statement log of the client's
// open transaction (mysqlstmtundo.go) is what makes them: SAVEPOINT notes how many statements
// the log holds, ROLLBACK TO one cuts the log back to that many and runs them again in a new
// DuckDB transaction, as the undo of a refused statement does. MariaDB's rules, not
// PostgreSQL's: names are caseless, a SAVEPOINT of a name the transaction has moves it (the
// old one is gone), ROLLBACK TO keeps its savepoint and drops the later ones, RELEASE drops
// its savepoint and the later ones, a name the transaction lacks is 1305 and the transaction
// goes on, and outside a transaction SAVEPOINT is taken and forgotten.
//
// The log may have lost what it needed (mysqlstmtundo.go: RAND(), streamed
// data, a full log): a savepoint taken after the loss cannot be rolled back to, and its
// ROLLBACK TO fails the transaction (1235, naming why), as every ROLLBACK TO did before. One
// taken before it can: the statements before the savepoint are all kept, and the log is whole
// again.
//
// Run again, the kept statements read what other clients committed since they first ran
// (DuckDB's new transaction is a new snapshot, and DuckDB takes no gap locks where InnoDB
// would have kept the other client waiting). A statement that then changes another number of
// rows than it told its client ends the transaction as a deadlock does on MariaDB (1213: the
// whole transaction rolled back, run it again) rather than go on with writes the client was
// not told of (errReplayDiffers).

// spMark is a savepoint of a MySQL client's transaction: the statement log's length and size
// when it was taken.
type spMark struct {
	name  string
	n     int
	bytes int
	// lost: taken once the log had lost a statement, which ROLLBACK TO it would have to run
	// again.
	lost bool
}

// mysqlSavepointStmt reads a MySQL client's SAVEPOINT name, RELEASE SAVEPOINT name or
// ROLLBACK [WORK] TO [SAVEPOINT] name: the verb and the name as MySQL reads it.
func mysqlSavepointStmt(sqlText string) (verb txVerb, name string, ok bool) {
	first := strings.ToLower(sqltok.FirstKeyword(sqlText, sqltok.MySQL))
	if first != "savepoint" && first != "release" && first != "rollback" {
		return txNone, "", false
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.MySQL)
	for len(toks) > 0 && toks[len(toks)-1].Text == ";" {
		toks = toks[:len(toks)-1]
	}
	var rest []sqltok.Token
	switch {
	case first == "savepoint":
		verb, rest = txSavepoint, toks[1:]
	case first == "release":
		if len(toks) < 2 || !toks[1].IsWord("savepoint") {
			return txNone, "", false
		}
		verb, rest = txRelease, toks[2:]
	default:
		rest = toks[1:]
		if len(rest) > 0 && rest[0].IsWord("work") {
			rest = rest[1:]
		}
		if len(rest) == 0 || !rest[0].IsWord("to") {
			return txNone, "", false
		}
		rest = rest[1:]
		if len(rest) > 1 && rest[0].IsWord("savepoint") {
			rest = rest[1:]
		}
		verb = txRollbackTo
	}
	if len(rest) != 1 || rest[0].Kind != sqltok.Word && rest[0].Kind != sqltok.QuotedIdent || rest[0].Unterminated {
		return txNone, "", false
	}
	return verb, sqltok.MySQLIdent(rest[0]), true
}

// errNoSavepoint is MariaDB's 1305 for a savepoint the transaction does not have.
func errNoSavepoint(name string) error {
	return &query.Error{Code: sqlstate.InvalidSavepointSpecification, Message: fmt.Sprintf("SAVEPOINT %s does not exist", name)}
}

// errReplayDiffers: a statement run again to roll back to a savepoint or to undo a refused
// one changed another number of rows than the first time (another client committed between):
// the transaction is rolled back (mysqlWritesDiffered).
var errReplayDiffers = &query.Error{Code: sqlstate.SerializationFailure, Message: "another client's commit changed the rows " +
	"this transaction's statements wrote, which DuckDB ran again to undo a statement or roll back to a savepoint: " +
	"the transaction is rolled back; run it again"}

// mysqlSavepointOutside answers a MySQL client's savepoint statement outside a transaction:
// SAVEPOINT is taken (and forgotten at once, as autocommit ends it), ROLLBACK TO and RELEASE
// name none (1305).
func mysqlSavepointOutside(sqlText string) (query.Rows, error) {
	verb, name, ok := mysqlSavepointStmt(sqlText)
	if !ok || verb == txSavepoint {
		return engine.TagRows("SAVEPOINT"), nil
	}
	return nil, errNoSavepoint(name)
}

// mysqlSavepoint answers a MySQL client's savepoint statement in its session.
func (s *session) mysqlSavepoint(ctx context.Context, verb txVerb, name string) (query.Rows, error) {
	l := &s.undo
	at := -1
	for i, m := range l.marks {
		if strings.EqualFold(m.name, name) {
			at = i
		}
	}
	switch {
	case s.status == 'I' && verb == txSavepoint:
		return engine.TagRows("SAVEPOINT"), nil // MariaDB takes it; autocommit forgets it
	case s.status == 'I' || at < 0 && verb != txSavepoint:
		return nil, errNoSavepoint(name)
	case s.status == 'E' && verb != txRollbackTo:
		return nil, errAborted
	case verb == txSavepoint:
		if at >= 0 {
			l.marks = append(l.marks[:at], l.marks[at+1:]...)
		}
		l.marks = append(l.marks, spMark{name: name, n: len(l.stmts), bytes: l.bytes, lost: l.lost})
		return engine.TagRows("SAVEPOINT"), nil
	case verb == txRelease:
		l.marks = l.marks[:at]
		return engine.TagRows("RELEASE"), nil
	}
	m := l.marks[at]
	l.marks = l.marks[:at+1]
	if m.lost || l.lost && l.lostAt < m.n {
		s.fail()
		return nil, &query.Error{Code: sqlstate.FeatureNotSupported, Message: fmt.Sprintf("ROLLBACK TO SAVEPOINT %s is not "+
			"supported on DuckDB after a statement that cannot be run again (RAND() or UUID(), "+
			"LOAD DATA LOCAL, an INSERT ... SELECT of AUTO_INCREMENT ids, more than %d writes) ran before the savepoint: "+
			"the transaction is aborted, roll it back", name, stmtLogMax)}
	}
	if s.status == 'T' && !l.lost && len(l.stmts) == m.n {
		return engine.TagRows("ROLLBACK"), nil // nothing written since the savepoint
	}
	clear(l.stmts[m.n:])
	l.stmts, l.bytes, l.lost = l.stmts[:m.n], m.bytes, false
	s.status = 'E'
	if err := s.replay(ctx); err != nil {
		return nil, err
	}
	return engine.TagRows("ROLLBACK"), nil
}
