package duckengine

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// txVerb is what a transaction-control statement asks for.
type txVerb int

const (
	txNone     txVerb = iota
	txBegin           // BEGIN, START TRANSACTION (isolation and access mode options allowed)
	txCommit          // COMMIT, END
	txRollback        // ROLLBACK, ABORT
	txSet             // SET TRANSACTION ...
	// txDeallocateAll is DEALLOCATE ALL (psycopg 3 sends it), which DuckDB lacks: a session's
	// prepared statements go with its connection, and a pooled one keeps none.
	txDeallocateAll
	// txSavepoint, txRelease and txRollbackTo are SAVEPOINT name, RELEASE [SAVEPOINT] name and
	// ROLLBACK TO [SAVEPOINT] name (session.go's savepoints: DuckDB has none).
	txSavepoint
	txRelease
	txRollbackTo
	// txSetLocal is SET LOCAL (setlocal.go: the session keeps it for the transaction).
	txSetLocal
)

// statement is a client statement as this engine sees it before it runs.
type statement struct {
	words    []string       // the significant words and symbols, lower case (transaction and SET statements only)
	tx       txVerb         // a transaction-control statement, handled here rather than by DuckDB
	readOnly bool           // BEGIN / SET TRANSACTION asked for READ ONLY
	p        *prepared      // nil for transaction-control statements
	q        *query.Request // the client's statement, for SET LOCAL (setlocal.go)
}

// clean reports whether the statement leaves nothing on its connection once it has run, so the
// connection may serve another client: plain queries and DML. Anything else (SET, USE,
// PREPARE, CREATE TEMP ..., PRAGMA, ATTACH) may, and retires its connection.
func (s statement) clean() bool {
	if s.p == nil {
		return true
	}
	switch s.p.kind {
	case duckdb.STATEMENT_TYPE_SELECT, duckdb.STATEMENT_TYPE_INSERT, duckdb.STATEMENT_TYPE_UPDATE,
		duckdb.STATEMENT_TYPE_DELETE, duckdb.STATEMENT_TYPE_EXPLAIN, duckdb.STATEMENT_TYPE_CALL:
		return true
	}
	return false
}

// readsOnly reports whether the statement may run in a READ ONLY transaction.
func (s statement) readsOnly() bool {
	if s.p == nil {
		return true
	}
	switch s.p.kind {
	case duckdb.STATEMENT_TYPE_SELECT, duckdb.STATEMENT_TYPE_EXPLAIN, duckdb.STATEMENT_TYPE_SET:
		return true
	}
	return false
}

// leadWords returns q's first significant tokens (at most n), words in lower case. They come
// from the analysis that travels with the request: the core's, so nothing is tokenized again.
func leadWords(q *query.Request, n int) []string {
	var out []string
	for _, t := range q.Analysis().Tokens {
		if !t.Significant() {
			continue
		}
		if len(out) == n {
			break
		}
		out = append(out, strings.ToLower(t.Text))
	}
	return out
}

// statement reads the client's statement q: transaction control by its words (DuckDB's parser
// knows no isolation levels), anything else prepared on conn as sqlText (q's SQL, or q's
// rewritten for DuckDB: compatRequest rewrites only queries). It refuses what this engine
// cannot do (savepoints, two-phase commit) and, on a locked cluster, what would change the
// connection's configuration or the database instance.
func (e *Engine) statement(conn *sql.Conn, q *query.Request, sqlText string) (statement, error) {
	st, err := readWords(q)
	if err != nil || st.tx != txNone {
		return st, err
	}
	p, err := prepareGrouped(conn, q, sqlText) // mysqlgroupby.go
	if err != nil {
		return st, wrapErr(err)
	}
	if typed, ok := typeUntypedParams(conn, q, p.sqlText, p.params, false); ok {
		if p, err = prepare(conn, typed); err != nil {
			return st, wrapErr(err)
		}
	}
	st.p = p
	if changesCompat(st, q, sqlText) {
		return st, errCompatReadOnly
	}
	if e.locked {
		if err := e.checkLocked(st); err != nil {
			return st, err
		}
		if f := lockedFunction(q, sqlText); f != "" {
			return st, e.errLocked(f)
		}
	}
	return st, nil
}

// readWords recognises, from a statement's words, what this engine handles or refuses before
// DuckDB sees it: transaction control and COPY to or from the client.
func readWords(q *query.Request) (statement, error) {
	words := leadWords(q, 16)
	st := statement{words: words, q: q}
	if len(words) == 0 {
		return st, nil
	}
	if err := st.readTransaction(); err != nil || st.tx != txNone {
		return st, err
	}
	if words[0] == "copy" {
		if all := leadWords(q, len(q.SQL)); slices.Contains(all, "stdin") || slices.Contains(all, "stdout") {
			return st, errCopyStdio
		}
	}
	return st, nil
}

// readTransaction recognises transaction control from st.words.
func (st *statement) readTransaction() error {
	w := st.words
	at := func(i int) string {
		if i < len(w) {
			return w[i]
		}
		return ""
	}
	notSupported := func(what string) error {
		return &query.Error{Code: sqlstate.FeatureNotSupported, Message: what + " is not supported on DuckDB"}
	}
	switch at(0) {
	case "begin", "start":
		if at(0) == "start" && at(1) != "transaction" {
			return nil
		}
		st.tx = txBegin
	case "commit", "end":
		if at(1) == "prepared" {
			return notSupported("two-phase commit (COMMIT PREPARED)")
		}
		st.tx = txCommit
	case "rollback", "abort":
		if at(1) == "to" || (at(1) == "transaction" || at(1) == "work") && at(2) == "to" {
			st.tx = txRollbackTo
			return nil
		}
		if at(1) == "prepared" {
			return notSupported("two-phase commit (ROLLBACK PREPARED)")
		}
		st.tx = txRollback
	case "savepoint":
		st.tx = txSavepoint
	case "release":
		st.tx = txRelease
	case "listen", "unlisten", "notify":
		return notSupported(strings.ToUpper(at(0)))
	case "declare", "fetch", "move":
		return notSupported("server-side cursors (" + strings.ToUpper(at(0)) + ")")
	case "deallocate":
		if at(1) == "all" || at(1) == "prepare" && at(2) == "all" {
			st.tx = txDeallocateAll
		}
	case "prepare":
		if at(1) == "transaction" {
			return notSupported("two-phase commit (PREPARE TRANSACTION)")
		}
	case "set":
		switch {
		case at(1) == "transaction":
			st.tx = txSet
		case at(1) == "local" && at(2) != "transaction" && !isMySQL(st.q): // MySQL's LOCAL is SESSION
			st.tx = txSetLocal
		}
	}
	for i := range w {
		if (st.tx == txBegin || st.tx == txSet) && w[i] == "read" && at(i+1) == "only" {
			st.readOnly = true
		}
	}
	return nil
}

// savepointName is the savepoint a SAVEPOINT, RELEASE or ROLLBACK TO statement names: its
// last word (an unquoted name in lower case, as PostgreSQL folds it).
func (s statement) savepointName() string {
	name := s.words[len(s.words)-1]
	if name == ";" && len(s.words) > 1 {
		name = s.words[len(s.words)-2]
	}
	return name
}

// errNoTransactionBlock is PostgreSQL's answer to a savepoint statement outside a transaction.
func errNoTransactionBlock(st statement) error {
	verb := map[txVerb]string{txSavepoint: "SAVEPOINT", txRelease: "RELEASE SAVEPOINT", txRollbackTo: "ROLLBACK TO SAVEPOINT"}[st.tx]
	return &query.Error{Code: sqlstate.NoActiveSQLTransaction, Message: verb + " can only be used in transaction blocks"}
}

// outsideTransaction answers a transaction-control statement run outside a pinned session:
// BEGIN is refused (its transaction would stay on a pooled connection, for other clients),
// COMMIT and ROLLBACK have no transaction to end (PostgreSQL only warns).
func outsideTransaction(st statement) (query.Rows, error) {
	switch st.tx {
	case txBegin:
		return nil, errNoSession
	case txCommit:
		return engine.TagRows("COMMIT"), nil
	case txRollback:
		return engine.TagRows("ROLLBACK"), nil
	case txDeallocateAll:
		return engine.TagRows("DEALLOCATE ALL"), nil
	case txSavepoint, txRelease, txRollbackTo:
		if isMySQL(st.q) {
			return mysqlSavepointOutside(st.q.SQL) // mysqlsavepoints.go
		}
		return nil, errNoTransactionBlock(st)
	}
	return engine.TagRows("SET"), nil
}

// errCopyStdio refuses COPY FROM STDIN / TO STDOUT: DuckDB would read the daemon's standard
// input or write rows into its log, not the client's connection.
var errCopyStdio = &query.Error{Code: sqlstate.FeatureNotSupported, Message: "COPY FROM STDIN and COPY TO STDOUT (psql's \\copy) are not supported on DuckDB: " +
	"use INSERT for data in, and SELECT for data out"}

var errNoSession = &query.Error{Code: sqlstate.FeatureNotSupported, Message: "transactions on DuckDB need a session pinned to one connection, " +
	"which this client's protocol does not open here: each statement runs in a transaction of its own"}

// checkLocked refuses, on a locked cluster, statements that change the connection's
// configuration (PRAGMA, SET other than the schema search path) or the database instance
// (ATTACH, DETACH: an attached database would be every client's).
func (e *Engine) checkLocked(st statement) error {
	switch st.p.kind {
	case duckdb.STATEMENT_TYPE_PRAGMA:
		return e.errLocked("PRAGMA")
	case duckdb.STATEMENT_TYPE_ATTACH:
		return e.errLocked("ATTACH")
	case duckdb.STATEMENT_TYPE_DETACH:
		return e.errLocked("DETACH")
	case duckdb.STATEMENT_TYPE_SET:
		if name := setName(st.words); !slices.Contains(settableNames, name) {
			return e.errLocked("SET " + name)
		}
	}
	return nil
}

// settableNames are the settings a client may change on a locked cluster: where unqualified
// names resolve (USE, SET search_path / schema), and its own SQL variables.
var settableNames = []string{"use", "search_path", "schema", "variable"}

// setName is the setting a SET, RESET or USE statement changes.
func setName(words []string) string {
	if len(words) == 0 {
		return ""
	}
	if words[0] == "use" {
		return "use"
	}
	i := 1
	if i < len(words) && (words[i] == "session" || words[i] == "local" || words[i] == "global") {
		i++
	}
	if i < len(words) {
		return words[i]
	}
	return ""
}

func (e *Engine) errLocked(what string) error {
	return &query.Error{Code: query.CodeAccessDenied, Message: fmt.Sprintf(
		"%s is not allowed: cluster %s's DuckDB configuration is locked (the cluster's options.%s)", what, e.name, settingLockConfig)}
}
