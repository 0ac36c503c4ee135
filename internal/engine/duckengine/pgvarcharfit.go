package duckengine

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// PostgreSQL fits a value to a varchar(n) or char(n) as follows, and DuckDB, which keeps no
// length, does neither:
//   - an explicit cast (`'abcdef'::varchar(3)`, `CAST(x AS character varying(3))`, `::char(2)`)
//     cuts the text to n characters, whatever they are (pgVarcharCasts);
//   - a value written to such a column (assignment) that is longer than n only by trailing
//     spaces is cut to n characters without an error ('abc  ' into a varchar(3) is 'abc');
//     longer by anything else it is 22001 (pglength.go's checks). A constant (a literal or a
//     parameter) is fitted at plan time, so `UPDATE t SET v = 'abcdef' WHERE false` is 22001
//     although no row is written (pgFitValues).
//
// pgFitValues fits the literals and parameters a PostgreSQL client's INSERT ... VALUES (its
// rows, and an ON CONFLICT's DO UPDATE SET) and UPDATE ... SET give a varchar(n) or char(n)
// column by name: a literal's text is cut, a parameter's value (a string) is cut when the
// parameter is used once; a constant too long is 22001 before anything runs. Values from
// expressions, INSERT ... SELECT and COPY FROM are not cut (a value longer by spaces is stored
// whole), but are cut when a SELECT of the column reads them (pgTextFit).

// pgFitValues is q with its constants fitted to their columns, or 22001 for one too long.
func pgFitValues(ctx context.Context, conn *sql.Conn, client, q *query.Request) (*query.Request, error) {
	if client.Protocol != query.ProtocolPostgres || !sqltok.FirstKeywordIs(q.SQL, sqltok.Postgres, "insert", "update") {
		return q, nil
	}
	toks := sqltok.SignificantTokens(q.SQL, sqltok.Postgres)
	name, at, ok := pgWriteTarget(toks)
	if !ok {
		return q, nil
	}
	full := append([]string{"", "main"}[:3-len(name)], name...)
	full[1] = duckSchema(full[1])
	cols := cachedPgTypes(ctx, conn, full[0], full[1], full[2])
	if !slices.ContainsFunc(cols, func(c pgTypedColumn) bool { return c.typ.oid != 0 && c.typ.typmod > 4 }) {
		return q, nil
	}
	typeOf := func(col string) pgColumnType {
		for _, c := range cols {
			if strings.EqualFold(c.name, col) {
				return c.typ
			}
		}
		return pgColumnType{}
	}
	// the values given each column by name: an INSERT's rows, then every SET's
	type target struct {
		tok sqltok.Token
		typ pgColumnType
	}
	var targets []target
	if isWord(toks[0], "insert") {
		names := make([]string, len(cols))
		for i, c := range cols {
			names[i] = c.name
		}
		if at < len(toks) && toks[at].Text == "(" {
			defs, end := definitions(toks, at)
			if end < 0 {
				return q, nil
			}
			names = names[:0]
			for _, d := range defs {
				if len(d) != 1 {
					return q, nil // col[1], col.field: not a column's whole value
				}
				names = append(names, pgIdent(d[0]))
			}
			at = end + 1
		}
		if at+1 < len(toks) && isWord(toks[at], "overriding") {
			at += 3
		}
		if at < len(toks) && isWord(toks[at], "values") {
			for at++; at < len(toks) && toks[at].Text == "("; at++ {
				defs, end := definitions(toks, at)
				if end < 0 {
					break
				}
				for j, d := range defs {
					if len(d) == 1 && j < len(names) {
						targets = append(targets, target{d[0], typeOf(names[j])})
					}
				}
				if at = end + 1; at >= len(toks) || toks[at].Text != "," {
					break
				}
			}
		}
	}
	for _, a := range setAssignments(toks) {
		if len(a.expr) == 1 {
			col := sqltok.Token{Kind: sqltok.Word, Text: a.col}
			if strings.HasPrefix(a.col, `"`) {
				col.Kind = sqltok.QuotedIdent
			}
			targets = append(targets, target{a.expr[0], typeOf(pgIdent(col))})
		}
	}
	var edits []textEdit
	args, cloned := q.Args, false
	for _, t := range targets {
		n := int(t.typ.typmod) - 4
		if t.typ.oid == 0 || n <= 0 {
			continue
		}
		switch {
		case t.tok.Kind == sqltok.String && len(t.tok.Text) >= 2 && t.tok.Text[0] == '\'' && !t.tok.Unterminated:
			s := strings.ReplaceAll(t.tok.Text[1:len(t.tok.Text)-1], "''", "'")
			fitted, err := fitText(s, n, t.typ.oid)
			if err != nil {
				return nil, err
			}
			if fitted != s {
				edits = append(edits, textEdit{t.tok.Pos, t.tok.Pos + len(t.tok.Text), quoteString(fitted)})
			}
		case t.tok.Kind == sqltok.Param && strings.HasPrefix(t.tok.Text, "$"):
			k, err := strconv.Atoi(t.tok.Text[1:])
			if err != nil || k < 1 || k > len(args) {
				continue
			}
			s, ok := args[k-1].(string)
			if !ok {
				continue
			}
			fitted, err := fitText(s, n, t.typ.oid)
			if err != nil {
				return nil, err
			}
			if fitted != s && paramUses(toks, t.tok.Text) == 1 {
				if !cloned {
					args, cloned = slices.Clone(q.Args), true
				}
				args[k-1] = fitted
			}
		}
	}
	if len(edits) == 0 && !cloned {
		return q, nil
	}
	out := *q
	out.Args = args
	if len(edits) > 0 {
		out.SQL, out.ClientSQL = applyEdits(q.SQL, edits), cmp.Or(q.ClientSQL, q.SQL) // pglike.go
	}
	return &out, nil
}

// pgWriteTarget reads `INSERT INTO name [[AS] alias]` or `UPDATE [ONLY] name [[AS] alias] SET`:
// the table's name (one to three parts, as the client wrote them) and the index of the token
// after it and its alias.
func pgWriteTarget(toks []sqltok.Token) (name []string, at int, ok bool) {
	at = 1
	insert := isWord(toks[0], "insert")
	if insert {
		if len(toks) < 3 || !isWord(toks[1], "into") {
			return nil, 0, false
		}
		at = 2
	} else if at < len(toks) && isWord(toks[at], "only") {
		at++
	}
	for at < len(toks) && (toks[at].Kind == sqltok.Word || toks[at].Kind == sqltok.QuotedIdent) {
		name = append(name, pgIdent(toks[at]))
		if at++; at >= len(toks) || toks[at].Text != "." {
			break
		}
		at++
	}
	if len(name) == 0 || len(name) > 3 || at >= len(toks) {
		return nil, 0, false
	}
	if isWord(toks[at], "as") {
		at += 2
	} else if !insert && !isWord(toks[at], "set") && (toks[at].Kind == sqltok.Word || toks[at].Kind == sqltok.QuotedIdent) {
		at++ // UPDATE t alias SET
	}
	if at > len(toks) || !insert && (at >= len(toks) || !isWord(toks[at], "set")) {
		return nil, 0, false
	}
	return name, at, true
}

// paramUses is how many times the parameter p ($n) appears in toks.
func paramUses(toks []sqltok.Token, p string) int {
	n := 0
	for _, t := range toks {
		if t.Kind == sqltok.Param && t.Text == p {
			n++
		}
	}
	return n
}

// fitText is s assigned to a varchar(n) (oid 1043) or char(n) (1042): cut to n characters when
// only spaces follow them, else 22001 when longer.
func fitText(s string, n int, oid uint32) (string, error) {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s, nil
	}
	cut := runePrefix(s, n)
	if strings.Trim(s[len(cut):], " ") != "" {
		return "", tooLong(n, oid)
	}
	return cut, nil
}

// runePrefix is s's first n characters (s when it has fewer).
func runePrefix(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// tooLong is PostgreSQL's 22001 for a value too long for a varchar(n) (1043) or char(n).
func tooLong(n int, oid uint32) error {
	typ := "character varying"
	if oid == 1042 {
		typ = "character"
	}
	return &query.Error{Code: sqlstate.StringDataRightTruncation, Message: "value too long for type " + typ + "(" + strconv.Itoa(n) + ")"}
}

// pgTextFit is a value of a varchar(n) or char(n) column (t) as a SELECT reads it: cut to n
// characters (the length check lets only spaces follow them: a value stored whole by a write
// pgFitValues does not see), a char(n)'s padded to n.
func pgTextFit(v any, t pgColumnType) any {
	s, ok := v.(string)
	n := int(t.typmod) - 4
	if !ok || n <= 0 {
		return v
	}
	if len(s) > n && utf8.RuneCountInString(s) > n {
		return runePrefix(s, n)
	}
	if t.oid == 1042 {
		return bpcharPad(v, t.typmod)
	}
	return v
}

// pgVarcharCasts gives a PostgreSQL client's explicit casts to varchar(n) and char(n)
// PostgreSQL's cut to n characters: a literal's text is cut where it is written, any other
// operand x becomes (CAST(x AS VARCHAR))[1:n], a slice, which the result column's name looks
// through as PostgreSQL's looks through the cast (`v::varchar(2)` is named v, `upper(v)::...`
// upper). `::char` is char(1); `::bpchar` and a varchar without a length cut nothing; a cast to
// char(n) is not padded. q is returned as it is when it has no such cast.
func pgVarcharCasts(q *query.Request) *query.Request {
	if q.Protocol != query.ProtocolPostgres || !containsFold(q.SQL, "char") || !strings.Contains(q.SQL, "::") && !containsFold(q.SQL, "cast") {
		return q
	}
	toks := sqltok.SignificantTokens(q.SQL, sqltok.Postgres)
	var edits []textEdit
	// cast replaces toks[from:to] (an operand, whose tokens are toks[x0:x1]) cut to n
	cast := func(from, to, x0, x1, n int) {
		if x1-x0 == 1 && toks[x0].Kind == sqltok.String && strings.HasPrefix(toks[x0].Text, "'") && !toks[x0].Unterminated {
			lit := toks[x0]
			s := strings.ReplaceAll(lit.Text[1:len(lit.Text)-1], "''", "'")
			if cut := runePrefix(s, n); cut != s {
				edits = append(edits, textEdit{lit.Pos, lit.Pos + len(lit.Text), quoteString(cut)})
			}
			return
		}
		last := toks[to-1]
		edits = append(edits, textEdit{toks[from].Pos, last.Pos + len(last.Text),
			"(CAST(" + q.SQL[toks[x0].Pos:toks[x1-1].Pos+len(toks[x1-1].Text)] + " AS VARCHAR))[1:" + strconv.Itoa(n) + "]"})
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.Kind == sqltok.Operator && t.Text == "::":
			n, width := castLength(toks[i+1:])
			if n <= 0 {
				continue
			}
			start := castOperandStart(toks, i)
			if start < 0 || i+1+width < len(toks) && toks[i+1+width].Text == "[" {
				continue
			}
			cast(start, i+1+width, start, i, n)
			i += width
		case isWord(t, "cast") && i+1 < len(toks) && toks[i+1].Text == "(":
			_, end := definitions(toks, i+1)
			if end < 0 {
				continue
			}
			as := -1
			depth := 0
			for j := i + 2; j < end; j++ {
				switch {
				case toks[j].Text == "(":
					depth++
				case toks[j].Text == ")":
					depth--
				case depth == 0 && isWord(toks[j], "as"):
					as = j
				}
			}
			if as <= i+2 {
				continue
			}
			if n, width := castLength(toks[as+1 : end]); n > 0 && as+1+width == end {
				cast(i, end+1, i+2, as, n)
				i = end
			}
		}
	}
	if len(edits) == 0 {
		return q
	}
	c := *q
	c.SQL, c.ClientSQL = applyEdits(q.SQL, edits), cmp.Or(q.ClientSQL, q.SQL) // pglike.go
	return &c
}

// castLength reads a cast's type at the start of ts: n for varchar(n) and char(n) (char alone
// is char(1)), 0 for any other type; and the type's tokens.
func castLength(ts []sqltok.Token) (n, width int) {
	oid, typmod, width, ok := readPGType(ts)
	if !ok || oid != 1043 && oid != 1042 || typmod <= 4 {
		return 0, 0
	}
	if width == 1 && !isWord(ts[0], "char") && !isWord(ts[0], "character") {
		return 0, 0 // bpchar: no length
	}
	return int(typmod) - 4, width
}

// castOperandStart is the index of the first token of the operand that ends just before toks[op]
// (a :: operator): a literal, a parameter, a (qualified) name, a parenthesized expression or a
// function's call, and a cast of one; -1 when it is none of those.
func castOperandStart(toks []sqltok.Token, op int) int {
	j := op - 1
	if j < 0 {
		return -1
	}
	start := -1
	switch t := toks[j]; {
	case t.Kind == sqltok.String || t.Kind == sqltok.Number || t.Kind == sqltok.Param:
		start = j
		if t.Kind == sqltok.String && j > 0 && toks[j-1].Kind == sqltok.Word && !operandKeywords[strings.ToLower(toks[j-1].Text)] &&
			(j < 2 || toks[j-2].Text != "::") {
			start = j - 1 // a typed literal: date '2020-01-01'
		}
	case t.Text == ")":
		depth := 0
		for k := j; k >= 0; k-- {
			switch toks[k].Text {
			case ")":
				depth++
			case "(":
				depth--
			}
			if depth == 0 {
				start = k
				break
			}
		}
		if start > 0 && (toks[start-1].Kind == sqltok.Word || toks[start-1].Kind == sqltok.QuotedIdent) &&
			!operandKeywords[strings.ToLower(toks[start-1].Text)] {
			start = nameStart(toks, start-1) // a function's call
		}
	case t.Kind == sqltok.QuotedIdent || t.Kind == sqltok.Word && !operandKeywords[strings.ToLower(t.Text)]:
		start = nameStart(toks, j)
	}
	if start <= 0 {
		return start
	}
	// a cast of a cast (x::text::varchar(2), x::character varying::varchar(2)): the first's
	// operand on, the type's words before start stepped over
	k := start - 1
	for k > 0 && toks[k].Kind == sqltok.Word && castTypeWords[strings.ToLower(toks[k].Text)] {
		k--
	}
	if toks[k].Text == "::" {
		return castOperandStart(toks, k)
	}
	if prev := toks[start-1]; prev.Kind == sqltok.Word && !operandKeywords[strings.ToLower(prev.Text)] || prev.Kind == sqltok.QuotedIdent {
		return -1 // not told apart here
	}
	return start
}

// nameStart is the first token of the qualified name ending at toks[j].
func nameStart(toks []sqltok.Token, j int) int {
	for j >= 2 && toks[j-1].Text == "." && (toks[j-2].Kind == sqltok.Word || toks[j-2].Kind == sqltok.QuotedIdent) {
		j -= 2
	}
	return j
}

// castTypeWords are the words of a type's name that may come before its last word.
var castTypeWords = map[string]bool{"character": true, "varying": true, "double": true, "precision": true, "timestamp": true,
	"time": true, "with": true, "without": true, "zone": true, "national": true, "char": true, "bit": true}

// operandKeywords are words before a parenthesis or a literal that are no function's name nor
// a literal's type.
var operandKeywords = map[string]bool{"select": true, "where": true, "and": true, "or": true, "not": true, "in": true,
	"on": true, "by": true, "when": true, "then": true, "else": true, "as": true, "like": true, "ilike": true, "is": true,
	"between": true, "values": true, "from": true, "having": true, "exists": true, "any": true, "all": true, "some": true,
	"array": true, "case": true, "end": true, "returning": true, "set": true, "distinct": true, "using": true, "escape": true,
	"return": true, "default": true, "with": true, "into": true, "limit": true, "offset": true, "null": true, "true": true, "false": true}
