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

// numericOID is PostgreSQL's numeric.
const numericOID = 1700

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
		operand := ""
		if !declared {
			operand = operandType(conn, sqlText, i+1)
		}
		switch {
		case declared:
		case operand != "":
			typ = operand // x = ANY($n), qty + $n: x's type
			if i < len(q.ArgOIDs) && q.ArgOIDs[i] == numericOID && !strings.HasSuffix(operand, "]") {
				typ = "DOUBLE" // a numeric's fraction kept (psycopg 3's Decimal times an integer column)
			}
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

// Where a parameter is an operand, PostgreSQL types it by the other operand, and DuckDB leaves
// it untyped:
//   - the whole operand of ANY or ALL (x = ANY($1), as node-postgres, pgx and psycopg 3 send
//     an array): PostgreSQL's is an array of x's type;
//   - an operand of arithmetic (qty + $1, as an UPDATE's SET writes it): PostgreSQL's is the
//     other operand's type.
// operandType asks DuckDB the type of x: the type it infers for $n compared with x instead
// (x = $n), and the parameter is cast to that type (a list of it for ANY). An array's text then
// reads as PostgreSQL's (pgarray.go), and the parameter is described with the type.

// arithmetic are the operators whose unknown operand PostgreSQL types as the other one.
var arithmetic = map[string]bool{"+": true, "-": true, "*": true, "/": true, "%": true}

// operandType is the type parameter n takes as an operand of ANY or arithmetic in sqlText; ""
// when it is neither, or when DuckDB cannot tell (or, for arithmetic, tells no number).
func operandType(conn *sql.Conn, sqlText string, n int) string {
	toks := sqltok.Tokenize(sqlText, sqltok.Postgres)
	param := "$" + strconv.Itoa(n)
	for i, t := range toks {
		if t.Kind != sqltok.Param || t.Text != param {
			continue
		}
		before, after := prevSignificant(toks, i), nextSignificant(toks, i+1)
		if after == len(toks) {
			after = -1
		}
		switch {
		case before >= 0 && after >= 0 && toks[before].Text == "(" && toks[after].Text == ")" &&
			prevSignificant(toks, before) >= 0 && toks[prevSignificant(toks, before)].IsWord("any", "some", "all"):
			if elem := elementTypeName(comparedType(conn, toks, prevSignificant(toks, before), after, n)); elem != "" {
				return elem + "[]"
			}
		case before >= 0 && arithmetic[toks[before].Text] || after >= 0 && arithmetic[toks[after].Text]:
			for _, op := range []int{before, after} {
				if op >= 0 && arithmetic[toks[op].Text] {
					if typ := numberTypeName(comparedType(conn, toks, op, op, n)); typ != "" {
						return typ
					}
				}
			}
			// Between two untyped parameters ($1 * $2, qty * $1 + $2): a number DuckDB can
			// compute with any other.
			return "DOUBLE"
		}
		return ""
	}
	return ""
}

// comparedType prepares toks with toks[from:to+1] written as "= $n" (the operator, or
// "ANY($n)") and returns the type DuckDB infers for parameter n there.
func comparedType(conn *sql.Conn, toks []sqltok.Token, from, to, n int) duckdb.Type {
	var b strings.Builder
	for _, t := range toks[:from] {
		b.WriteString(t.Text)
	}
	if toks[from].IsWord("any", "some", "all") {
		b.WriteString(" $" + strconv.Itoa(n) + " ")
	} else {
		b.WriteString(" = ")
	}
	for _, t := range toks[to+1:] {
		b.WriteString(t.Text)
	}
	p, err := prepare(conn, b.String())
	if err != nil || n > len(p.params) {
		return duckdb.TYPE_INVALID
	}
	return p.params[n-1]
}

// prevSignificant is the index of the last token before toks[i] that is neither blank nor a
// comment (-1 when there is none).
func prevSignificant(toks []sqltok.Token, i int) int {
	for i--; i >= 0 && !toks[i].Significant(); i-- {
	}
	return i
}

// numberTypeName names DuckDB number type t; "" for any other type.
func numberTypeName(t duckdb.Type) string {
	switch t {
	case duckdb.TYPE_TINYINT, duckdb.TYPE_SMALLINT, duckdb.TYPE_INTEGER, duckdb.TYPE_BIGINT, duckdb.TYPE_FLOAT,
		duckdb.TYPE_DOUBLE, duckdb.TYPE_HUGEINT, duckdb.TYPE_DECIMAL:
		return elementTypeName(t)
	}
	return ""
}

// elementTypeName names a value of DuckDB type t; "" for a type with no name here.
func elementTypeName(t duckdb.Type) string {
	switch t {
	case duckdb.TYPE_INVALID:
		return ""
	case duckdb.TYPE_UUID:
		return "UUID"
	case duckdb.TYPE_HUGEINT:
		return "HUGEINT"
	case duckdb.TYPE_DECIMAL:
		return "DOUBLE" // its width is not told; a double computes and compares with any decimal
	case duckdb.TYPE_TIME:
		return "TIME"
	case duckdb.TYPE_INTERVAL:
		return "INTERVAL"
	}
	return paramTypeName(t)
}
