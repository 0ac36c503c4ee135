package duckengine

import (
	"database/sql"
	"slices"
	"strconv"
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/queryflux/queryflux/internal/query"
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

// A parameter DuckDB leaves untyped where nothing around it gives a type (SELECT $1, $1 IS
// NULL) takes the type of the value bound to it, which is not PostgreSQL's answer: PostgreSQL
// types it as the client declared it (psycopg 3's date is a date, its small int an int2),
// else as text. So for a PostgreSQL client such a parameter is cast to its declared type
// (declaredTypes), else, where no cast in the statement types it either (castType), to VARCHAR.
// The result's columns are then what the statement was described with, and PostgreSQL's.

// declaredTypes are the DuckDB types of the PostgreSQL types a client declares a parameter
// with that DuckDB holds as PostgreSQL does. numeric is not among them: DuckDB's NUMERIC is
// DECIMAL(18,3), which would round the value; it stays text.
var declaredTypes = map[uint32]string{
	16: "BOOLEAN", 17: "BLOB", 20: "BIGINT", 21: "SMALLINT", 23: "INTEGER", 25: "VARCHAR", 114: "JSON",
	700: "FLOAT", 701: "DOUBLE", 1043: "VARCHAR", 1082: "DATE", 1083: "TIME", 1114: "TIMESTAMP",
	1184: "TIMESTAMPTZ", 1186: "INTERVAL", 2950: "UUID",
}

// typeUntypedParams is sqlText with each parameter DuckDB left untyped (params, as prepared)
// cast as PostgreSQL types it, for a PostgreSQL client's q; ok is false when nothing changes.
// A parameter a cast in the statement types ($1::int[], castType) is left to that cast, so
// that it is described, bound and answered with that type.
func typeUntypedParams(conn *sql.Conn, q *query.Request, sqlText string, params []duckdb.Type, describing bool) (string, bool) {
	if q.Protocol != query.ProtocolPostgres || !slices.Contains(params, duckdb.TYPE_INVALID) {
		return sqlText, false
	}
	casts := map[string]string{}
	for i, t := range params {
		if t != duckdb.TYPE_INVALID {
			continue
		}
		typ, declared := "", false
		if i < len(q.ArgOIDs) {
			typ, declared = declaredTypes[q.ArgOIDs[i]]
		}
		switch {
		case declared:
		case describing && castType(conn, sqlText, i+1) != duckdb.TYPE_INVALID:
			continue
		case !describing && len(castCandidates(sqlText, i+1)) > 0:
			continue // its cast types it (a PostgreSQL array's text, $1::int[], is read by its list type)
		default:
			typ = "VARCHAR" // PostgreSQL's text for a parameter of unknown type
		}
		casts["$"+strconv.Itoa(i+1)] = typ
	}
	if len(casts) == 0 {
		return sqlText, false
	}
	var b strings.Builder
	for _, t := range sqltok.Tokenize(sqlText, sqltok.Postgres) {
		if typ, ok := casts[t.Text]; ok && t.Kind == sqltok.Param {
			b.WriteString("CAST(" + t.Text + " AS " + typ + ")")
		} else {
			b.WriteString(t.Text)
		}
	}
	return b.String(), true
}
