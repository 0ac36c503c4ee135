package duckengine

import (
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A SELECT's locking clause, as ORMs write it (Django's select_for_update, SQLAlchemy's
// with_for_update, Rails' lock, a job queue's FOR UPDATE SKIP LOCKED), was DuckDB's parser
// error ("SELECT locking clause is not supported!"). DuckDB takes no row locks: a transaction
// runs on a snapshot, and of two that write the same row the second fails at its write with
// 40001 (a serialization failure, which clients retry), where PostgreSQL and MySQL would make
// it wait at the SELECT. So a PostgreSQL or MySQL client's SELECT runs without the clause:
//   - PostgreSQL's FOR {UPDATE | NO KEY UPDATE | SHARE | KEY SHARE} [OF table, ...]
//     [NOWAIT | SKIP LOCKED], one or more;
//   - MySQL's FOR UPDATE [NOWAIT | SKIP LOCKED], FOR SHARE and LOCK IN SHARE MODE.
//
// SKIP LOCKED skips nothing: two workers may read the same row, and the second to update it
// fails (40001).

// withoutLocking is q without its SELECT's locking clauses (q itself when it has none).
func withoutLocking(q *query.Request) *query.Request {
	if q.Protocol != query.ProtocolPostgres && !isMySQL(q) || !mayLock(q.SQL) {
		return q
	}
	d := sqltok.Postgres
	if isMySQL(q) {
		d = sqltok.MySQL
	}
	if !sqltok.FirstKeywordIs(q.SQL, d, "select", "with") {
		return q
	}
	toks := sqltok.Tokenize(q.SQL, d)
	var b strings.Builder
	depth, changed := 0, false
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch t.Text {
		case "(":
			depth++
		case ")":
			depth--
		}
		if depth == 0 && t.Kind == sqltok.Word {
			if end := lockingClause(toks, i); end > i {
				i, changed = end, true
				continue
			}
		}
		b.WriteString(t.Text)
	}
	if !changed {
		return q
	}
	c := *q
	c.SQL = b.String()
	return &c
}

// mayLock reports cheaply whether sqlText may have a locking clause.
func mayLock(sqlText string) bool {
	return containsFold(sqlText, "for update") || containsFold(sqlText, "for share") || containsFold(sqlText, "for no key") ||
		containsFold(sqlText, "for key share") || containsFold(sqlText, "lock in share mode")
}

// lockingClause is the index of the last token of the locking clause that starts at toks[i]
// (with the blanks and comments before the next significant token); i when none starts there.
func lockingClause(toks []sqltok.Token, i int) int {
	at := i
	word := func(words ...string) bool { // the next significant token from at is words[0], ...
		j := at
		for _, w := range words {
			for j < len(toks) && !toks[j].Significant() {
				j++
			}
			if j >= len(toks) || !toks[j].IsWord(w) {
				return false
			}
			j++
		}
		at = j
		return true
	}
	if word("lock", "in", "share", "mode") {
		return at - 1
	}
	if !(word("for", "update") || word("for", "share") || word("for", "no", "key", "update") || word("for", "key", "share")) {
		return i
	}
	if word("of") {
		for {
			j := at
			for j < len(toks) && !toks[j].Significant() {
				j++
			}
			if j >= len(toks) || toks[j].Kind != sqltok.Word && toks[j].Kind != sqltok.QuotedIdent {
				return i // OF without a table: not a clause read here
			}
			at = j + 1
			if next := nextSignificant(toks, at); next < len(toks) && (toks[next].Text == "." || toks[next].Text == ",") {
				at = next + 1
				continue
			}
			break
		}
	}
	if !word("nowait") {
		word("skip", "locked")
	}
	end := at - 1
	if next := nextSignificant(toks, at); next < len(toks) && (toks[next].IsWord("for") || toks[next].IsWord("lock")) {
		if more := lockingClause(toks, next); more > next {
			return more
		}
	}
	return end
}
