package duckengine

import (
	"database/sql"
	"strconv"
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// DuckDB leaves some parameters untyped that PostgreSQL types from their cast: $1::int compared
// with a BIGINT column, for one. Described as text, they make a client with typed values (pgx)
// refuse to send an integer there. castType types such a parameter by the cast the statement
// writes after it ($n::type, CAST($n AS type)), as DuckDB types a parameter cast alone.

// castType is the type of parameter n by its cast in sqlText, or TYPE_INVALID.
func castType(conn *sql.Conn, sqlText string, n int) duckdb.Type {
	for _, typ := range castCandidates(sqlText, n) {
		if p, err := prepare(conn, "SELECT $1::"+typ); err == nil && len(p.params) == 1 && p.params[0] != duckdb.TYPE_INVALID {
			return p.params[0]
		}
	}
	return duckdb.TYPE_INVALID
}

// castCandidates are the texts that may name the type parameter n is first cast to, longest
// first: after ::, up to four words (timestamp with time zone), each with its (precision) and
// [] suffixes; in CAST($n AS ...), everything up to the closing parenthesis.
func castCandidates(sqlText string, n int) []string {
	var toks []sqltok.Token
	for _, t := range sqltok.Tokenize(sqlText, sqltok.Postgres) {
		if t.Significant() {
			toks = append(toks, t)
		}
	}
	param := "$" + strconv.Itoa(n)
	for i, t := range toks {
		if t.Kind != sqltok.Param || t.Text != param || i+1 == len(toks) {
			continue
		}
		if toks[i+1].Text == "::" {
			return typeRuns(toks[i+2:])
		}
		if i >= 2 && strings.EqualFold(toks[i-2].Text, "cast") && toks[i-1].Text == "(" && strings.EqualFold(toks[i+1].Text, "as") {
			if end := closing(toks[i-1:]); end > 3 {
				return []string{joinTokens(toks[i+2 : i-1+end])}
			}
		}
		return nil
	}
	return nil
}

// typeRuns are the texts a type after :: may be at the start of toks, longest first.
func typeRuns(toks []sqltok.Token) []string {
	var runs []string
	end := 0
	for len(runs) < 4 && end < len(toks) && (toks[end].Kind == sqltok.Word || toks[end].Kind == sqltok.QuotedIdent) {
		end++
		for end < len(toks) && (toks[end].Text == "(" || toks[end].Text == "[") {
			c := closing(toks[end:])
			if c < 0 {
				break
			}
			end += c + 1
		}
		runs = append([]string{joinTokens(toks[:end])}, runs...)
	}
	return runs
}

// closing is the index in toks of the bracket that closes toks[0], or -1.
func closing(toks []sqltok.Token) int {
	depth := 0
	for i, t := range toks {
		switch t.Text {
		case "(", "[":
			depth++
		case ")", "]":
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

// joinTokens writes toks back as text, a blank between each two.
func joinTokens(toks []sqltok.Token) string {
	texts := make([]string, len(toks))
	for i, t := range toks {
		texts[i] = t.Text
	}
	return strings.Join(texts, " ")
}
