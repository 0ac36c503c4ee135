package mysqlwire

import (
	"context"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Division on PostgreSQL as MariaDB divides. divzero.go answers a divisor that is a literal
// zero; this file the rest of MariaDB's division on a PostgreSQL engine:
//   - a SELECT's divisor that is a column or an expression (a / b, a % b, MOD(a, b), in the
//     select list, an aggregate's argument, WHERE, HAVING, a subquery) is sent as NULLIF(b, 0):
//     MariaDB answers NULL where b is zero (under ERROR_FOR_DIVISION_BY_ZERO with a warning,
//     counted for a plain select list by a column of the proxy's: divZeroCounted), PostgreSQL
//     failed the whole statement with 22012. A write (INSERT ... SELECT, UPDATE) keeps the engine's error: MariaDB's strict
//     mode refuses it too (1365).
//   - MySQL's operators DIV and MOD, which PostgreSQL does not read (1064): a MOD b is a % b
//     (the remainder's sign is the dividend's on both); a DIV b is
//     CAST(div(CAST(a AS numeric), CAST(b AS numeric)) AS bigint): MariaDB's DIV truncates toward
//     zero (-7 DIV 2 is -3, 7.5 DIV 2 is 3) and answers a BIGINT; PostgreSQL's div() of
//     numerics truncates toward zero. In a SELECT its divisor is NULLIF'd as above.
// A divisor holding a parameter is left as written (NULLIF would type the parameter integer).
// An operand this file cannot delimit (an INTERVAL, a subquery without parentheses) leaves
// the statement's divisions as the engine reads them.

// pgDivisions is sql as a PostgreSQL engine must read its divisions to answer as MariaDB
// (sql itself when it has none).
func pgDivisions(sql string) string {
	if !strings.ContainsAny(sql, "/%") && !sqltok.ContainsFold(sql, "div") && !sqltok.ContainsFold(sql, "mod") {
		return sql
	}
	selects := sqltok.FirstKeywordIs(sql, sqltok.MySQL, "select")
	sql = divModOperators(sql, selects)
	if selects {
		sql = nullIfDivisors(sql)
	}
	return sql
}

// divModOperators writes sql's DIV and MOD operators as PostgreSQL's (the divisor of a DIV
// NULLIF'd when nullIf), one at a time from the left (a DIV b DIV c is (a DIV b) DIV c).
func divModOperators(sql string, nullIf bool) string {
	for range 64 {
		toks := sqltok.SignificantTokens(sql, sqltok.MySQL)
		op := -1
		for i := 1; i < len(toks)-1; i++ {
			if toks[i].IsWord("div", "mod") && endsOperand(toks[i-1]) {
				op = i
				break
			}
		}
		if op < 0 {
			return sql
		}
		t := toks[op]
		if t.IsWord("mod") {
			sql = sql[:t.Pos] + "%" + sql[t.Pos+len(t.Text):]
			continue
		}
		left, right := operandStart(toks, op-1), operandEnd(toks, op+1)
		if left < 0 || right < 0 {
			return sql
		}
		dividend := sql[toks[left].Pos:tokenEnd(toks[op-1])]
		divisor := "CAST((" + sql[toks[op+1].Pos:tokenEnd(toks[right])] + ") AS numeric)"
		if nullIf {
			divisor = "NULLIF(" + divisor + ", 0)"
		}
		sql = sql[:toks[left].Pos] + "CAST(div(CAST((" + dividend + ") AS numeric), " + divisor + ") AS bigint)" + sql[tokenEnd(toks[right]):]
	}
	return sql
}

// nullIfDivisors writes each divisor of sql's / and % and each MOD(a, b)'s b that is not a
// literal as NULLIF(b, 0).
func nullIfDivisors(sql string) string {
	toks := sqltok.SignificantTokens(sql, sqltok.MySQL)
	var ins []edit
	for i, t := range toks {
		from, to := -1, -1
		switch {
		case i > 0 && divides(t) && endsOperand(toks[i-1]):
			from, to = i+1, operandEnd(toks, i+1)
		case t.IsWord("mod") && i+1 < len(toks) && toks[i+1].Text == "(" && (i == 0 || !endsOperand(toks[i-1])):
			from, to = twoArguments(toks, i+1)
			to--
		default:
			continue
		}
		for from >= 0 && from < to && toks[from].Kind == sqltok.Operator && strings.Trim(toks[from].Text, "+-~!") == "" {
			from++ // the signs before it stay outside: -NULLIF(b, 0)
		}
		if from < 0 || to < from || to == from && toks[from].IsLiteral() || toks[from].IsWord("nullif") {
			continue
		}
		if hasParam(toks[from : to+1]) {
			continue
		}
		ins = append(ins, edit{at: toks[from].Pos, text: "NULLIF("}, edit{at: tokenEnd(toks[to]), text: ", 0)"})
	}
	if len(ins) == 0 {
		return sql
	}
	return applyEdits(sql, ins)
}

func tokenEnd(t sqltok.Token) int { return t.Pos + len(t.Text) }

func hasParam(toks []sqltok.Token) bool {
	for _, t := range toks {
		if t.Kind == sqltok.Param {
			return true
		}
	}
	return false
}

// notOperands are the words that cannot be an operand (a column's or a function's name) in a
// division.
var notOperands = map[string]bool{"select": true, "from": true, "where": true, "and": true, "or": true, "not": true,
	"xor": true, "on": true, "having": true, "when": true, "then": true, "else": true, "in": true, "exists": true,
	"as": true, "by": true, "is": true, "like": true, "between": true, "case": true, "values": true, "set": true,
	"join": true, "div": true, "mod": true, "distinct": true, "distinctrow": true, "all": true, "any": true, "some": true,
	"interval": true, "group": true, "order": true, "limit": true, "union": true, "return": true, "with": true,
	"into": true, "using": true, "escape": true, "regexp": true, "rlike": true, "sounds": true, "binary": true,
	"asc": true, "desc": true, "over": true, "partition": true, "rows": true, "range": true, "collate": true,
	"offset": true, "window": true, "for": true, "lock": true, "except": true, "intersect": true}

// endsOperand reports whether t can be an operand's last token.
func endsOperand(t sqltok.Token) bool {
	switch t.Kind {
	case sqltok.Number, sqltok.String, sqltok.Param, sqltok.QuotedIdent:
		return true
	case sqltok.Word:
		return !notOperands[strings.ToLower(t.Text)]
	}
	return t.Text == ")"
}

// unaryAt reports whether toks[p] is a prefix operator (+, -, ~, !).
func unaryAt(toks []sqltok.Token, p int) bool {
	t := toks[p]
	return t.Kind == sqltok.Operator && strings.Trim(t.Text, "+-~!") == "" && (p == 0 || !endsOperand(toks[p-1]))
}

// multiplies reports whether toks[p] is an operator of a multiplication's precedence or
// higher (*, /, %, ^, DIV, MOD), a prefix's signs joined to it.
func multiplies(toks []sqltok.Token, p int) bool {
	t := toks[p]
	if t.Kind == sqltok.Operator {
		return strings.IndexByte("*/%^", t.Text[0]) >= 0 && strings.Trim(t.Text[1:], "+-~!") == ""
	}
	return t.IsWord("div", "mod") && p > 0 && endsOperand(toks[p-1])
}

// operandEnd is the last token of the operand that starts at toks[j] as a multiplication's
// right operand reads it (prefix operators, one primary, ^ and COLLATE after it); -1 when it
// cannot be told.
func operandEnd(toks []sqltok.Token, j int) int {
	for j < len(toks) && toks[j].Kind == sqltok.Operator && strings.Trim(toks[j].Text, "+-~!") == "" {
		j++
	}
	end := primaryEnd(toks, j)
	for end >= 0 && end+2 < len(toks) {
		switch {
		case toks[end+1].Text == "^":
			end = primaryEnd(toks, end+2)
		case toks[end+1].IsWord("collate"):
			end += 2
		default:
			return end
		}
	}
	return end
}

// primaryEnd is the last token of the primary (a literal, a name, a call, a parenthesis, a
// CASE) that starts at toks[j]; -1 when there is none.
func primaryEnd(toks []sqltok.Token, j int) int {
	if j >= len(toks) {
		return -1
	}
	t := toks[j]
	switch {
	case t.Text == "(":
		return closing(toks, j)
	case t.IsWord("case"):
		depth := 0
		for k := j; k < len(toks); k++ {
			if toks[k].IsWord("case") {
				depth++
			} else if toks[k].IsWord("end") {
				if depth--; depth == 0 {
					return k
				}
			}
		}
		return -1
	case t.Kind == sqltok.Number || t.Kind == sqltok.String || t.Kind == sqltok.Param:
		return j
	case t.Kind == sqltok.Word && t.IsWord("date", "time", "timestamp") && j+1 < len(toks) && toks[j+1].Kind == sqltok.String:
		return j + 1
	case t.IsWord("mod") && j+1 < len(toks) && toks[j+1].Text == "(": // MOD(a, b)
		return closing(toks, j+1)
	case t.Kind == sqltok.QuotedIdent || t.Kind == sqltok.Word && !notOperands[strings.ToLower(t.Text)]:
		if j+1 < len(toks) && toks[j+1].Text == "(" {
			return closing(toks, j+1)
		}
		for j+2 < len(toks) && toks[j+1].Text == "." && (toks[j+2].Kind == sqltok.Word || toks[j+2].Kind == sqltok.QuotedIdent) {
			j += 2
		}
		return j
	}
	return -1
}

// operandStart is the first token of the left operand of a multiplication's operator whose
// operand ends at toks[k] (every operator of its precedence or higher before it, left to
// right); -1 when it cannot be told.
func operandStart(toks []sqltok.Token, k int) int {
	for {
		s := primaryStart(toks, k)
		if s < 0 {
			return -1
		}
		for s > 0 && unaryAt(toks, s-1) {
			s--
		}
		if s < 2 || !multiplies(toks, s-1) {
			return s
		}
		k = s - 2
	}
}

// primaryStart is the first token of the primary that ends at toks[k]; -1 when there is none.
func primaryStart(toks []sqltok.Token, k int) int {
	if k < 0 {
		return -1
	}
	t := toks[k]
	switch {
	case t.Text == ")":
		m := opening(toks, k)
		if m > 0 && (toks[m-1].Kind == sqltok.QuotedIdent || toks[m-1].Kind == sqltok.Word && !notOperands[strings.ToLower(toks[m-1].Text)] ||
			toks[m-1].IsWord("mod") && (m < 2 || !endsOperand(toks[m-2]))) { // a call, MOD(a, b) too
			return m - 1
		}
		return m
	case t.IsWord("end"):
		depth := 0
		for s := k; s >= 0; s-- {
			if toks[s].IsWord("end") {
				depth++
			} else if toks[s].IsWord("case") {
				if depth--; depth == 0 {
					return s
				}
			}
		}
		return -1
	case t.Kind == sqltok.Number || t.Kind == sqltok.Param:
		return k
	case t.Kind == sqltok.String:
		if k > 0 && toks[k-1].IsWord("date", "time", "timestamp") {
			return k - 1
		}
		return k
	case t.Kind == sqltok.QuotedIdent || t.Kind == sqltok.Word && !notOperands[strings.ToLower(t.Text)]:
		for k >= 2 && toks[k-1].Text == "." && (toks[k-2].Kind == sqltok.Word || toks[k-2].Kind == sqltok.QuotedIdent) {
			k -= 2
		}
		return k
	}
	return -1
}

// closing is the index of the parenthesis that closes toks[open]'s; -1 when none does.
func closing(toks []sqltok.Token, open int) int {
	depth := 0
	for k := open; k < len(toks); k++ {
		switch toks[k].Text {
		case "(":
			depth++
		case ")":
			if depth--; depth == 0 {
				return k
			}
		}
	}
	return -1
}

// opening is the index of the parenthesis that toks[close] closes; -1 when none opens it.
func opening(toks []sqltok.Token, close int) int {
	depth := 0
	for k := close; k >= 0; k-- {
		switch toks[k].Text {
		case ")":
			depth++
		case "(":
			if depth--; depth == 0 {
				return k
			}
		}
	}
	return -1
}

// divideOnPostgreSQL sets req to sent's divisions as a PostgreSQL engine must read them
// (pgDivisions) when req runs there, the client's text kept for the result's names; counted
// reports whether the statement's last column is then divZeroCounted's, which the client
// must not see (divZeroRows).
// Its arithmetic is then MariaDB's decimals (decimals.go).
func (h *session) divideOnPostgreSQL(req *query.Request, sql, sent string, args []any) (counted bool) {
	pg, c := decimalForms(pgDivisions(sent)), divZeroCounted(sql)
	if pg == sent && c == "" || !h.routesToPostgreSQL(req) {
		return false
	}
	c0 := c
	if c != "" && h.warnsDivisionByZero() {
		if z, _ := zeroDivisions(c); z != "" {
			c = z
		}
		pg, counted = decimalForms(pgDivisions(c)), true
		h.divZeros = 0 // the counted column counts the literal zeros too
	}
	h.fill(req, pg, args)
	req.ClientSQL = sql
	if counted {
		req.ClientSQL = c0 // the result's names read one for one, the counted column's too
	}
	return counted
}

// conditionals are the functions that may not evaluate an argument after their first: a
// division there is not counted (MariaDB warns only of the divisions it evaluates).
var conditionals = map[string]bool{"if": true, "ifnull": true, "coalesce": true, "elt": true, "field": true}

// divZeroCounted is sql, a plain SELECT (divzero.go's rule: no aggregate, GROUP BY, DISTINCT,
// UNION or subquery; one statement), with one more select item, last, counting the row's
// select-list divisions (/, %, DIV, MOD, MOD()) whose divisor is zero and dividend is not NULL
// (MariaDB does not look at the divisor of a NULL): MariaDB's warnings 1365 for that row. ""
// when it has no division by what may be zero, is not plain, or its select list has AND, OR or
// XOR. A division inside CASE or after the first argument of IF(), IFNULL(), COALESCE() and
// the like is not counted: MariaDB may not evaluate it.
func divZeroCounted(sql string) string {
	if !strings.ContainsAny(sql, "/%") && !sqltok.ContainsFold(sql, "div") && !sqltok.ContainsFold(sql, "mod") {
		return ""
	}
	toks := sqltok.SignificantTokens(sql, sqltok.MySQL)
	if len(toks) < 2 || !toks[0].IsWord("select") {
		return ""
	}
	var divs []division
	const plainParen, firstArgument, laterArgument = 0, 1, 2 // an open parenthesis: a conditional's call in which argument
	var parens []int
	cases, cond := 0, 0 // CASEs open; conditionals' arguments after the first open
	end := len(toks)    // the select list's end
	for i := 1; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.Text == "(":
			if i+1 < len(toks) && toks[i+1].IsWord("select") || toks[i-1].Kind == sqltok.Word && aggregates[strings.ToLower(toks[i-1].Text)] {
				return ""
			}
			p := plainParen
			if toks[i-1].Kind == sqltok.Word && conditionals[strings.ToLower(toks[i-1].Text)] {
				p = firstArgument
			}
			parens = append(parens, p)
		case t.Text == "," && len(parens) > 0 && parens[len(parens)-1] == firstArgument:
			parens[len(parens)-1] = laterArgument
			cond++
		case t.Text == ")":
			if len(parens) == 0 {
				return ""
			}
			if parens[len(parens)-1] == laterArgument {
				cond--
			}
			parens = parens[:len(parens)-1]
		case t.IsWord("case"):
			cases++
		case t.IsWord("end"):
			cases--
		case t.IsWord("group", "distinct", "distinctrow", "union", "into", "and", "or", "xor") || t.Text == "&&" || t.Text == "||":
			return ""
		}
		if len(parens) == 0 && (t.Text == ";" || t.IsWord("from", "where", "limit", "order", "having", "window", "for", "lock", "into", "union")) {
			end = i
			break
		}
		d := division{from: -1, to: -1} // the dividend's first and last token; the divisor's
		switch {
		case divides(t) && endsOperand(toks[i-1]), t.IsWord("div", "mod") && endsOperand(toks[i-1]):
			d = division{operandStart(toks, i-1), i - 1, i + 1, operandEnd(toks, i+1), divides(t) && t.Text[0] == '/'}
		case t.IsWord("mod") && i+1 < len(toks) && toks[i+1].Text == "(" && !endsOperand(toks[i-1]):
			d.from, d.to = twoArguments(toks, i+1)
			d.left, d.right, d.to = i+2, d.from-2, d.to-1
		default:
			continue
		}
		if d.left < 0 || d.right < d.left || d.from < 0 || d.to < d.from || cond > 0 || cases > 0 || hasParam(toks[d.left:d.to+1]) {
			continue
		}
		if d.to == d.from && toks[d.from].IsLiteral() && !isZeroLiteral(toks[d.from]) {
			continue
		}
		divs = append(divs, d)
	}
	text := func(from, to int) string { return "(" + sql[toks[from].Pos:tokenEnd(toks[to])] + ")" }
	var divisors []string
	for _, d := range divs {
		when := text(d.left, d.right) + " IS NOT NULL"
		for _, o := range divs { // d is in o's divisor: is that evaluated?
			if o.from <= d.left && d.to <= o.to {
				when = evaluatesDivisor(toks, o, text) + " AND " + when
			}
		}
		divisors = append(divisors, "CASE WHEN "+when+" AND CAST("+text(d.from, d.to)+" AS numeric) = 0 THEN 1 ELSE 0 END")
	}
	if len(divisors) == 0 {
		return ""
	}
	for _, t := range toks[end:] { // one statement only: the counted rows hide the results after it
		if t.Text == ";" && t.Pos+1 < len(sql) && strings.TrimSpace(sql[t.Pos+1:]) != "" {
			return ""
		}
	}
	at := len(sql)
	if end < len(toks) {
		at = toks[end].Pos
	}
	return strings.TrimRight(sql[:at], " \t\r\n") + ", (" + strings.Join(divisors, " + ") + ") AS queryflux_divzero " + sql[at:]
}

// slashed reports whether the operand toks[from..to] is a / (a decimal in MariaDB, whatever its
// operands): its last operator outside parentheses is / or a % of one; a parenthesis whole is
// read inside.
func slashed(toks []sqltok.Token, from, to int) bool {
	for from < to && toks[from].Text == "(" && closing(toks, from) == to {
		from, to = from+1, to-1
	}
	decimal, depth := false, 0
	for i := from; i <= to; i++ {
		depth += sqltok.ParenStep(toks[i])
		switch {
		case depth != 0 || i == from:
		case divides(toks[i]) && toks[i].Text[0] == '/':
			decimal = true
		case toks[i].IsWord("div"):
			decimal = false // DIV answers an integer
		}
	}
	return decimal
}

// division is the tokens of a division's dividend (left to right) and divisor (from to to);
// slash: it is a /.
type division struct {
	left, right, from, to int
	slash                 bool
}

// evaluatesDivisor is the condition under which MariaDB evaluates d's divisor: a division of
// integers (MOD, %, DIV) evaluates both operands, then answers NULL if one is; a / or a
// division of a decimal or a double does not look at the divisor of a NULL dividend. An
// operand's type is PostgreSQL's (pg_typeof); one holding a / is MariaDB's decimal.
func evaluatesDivisor(toks []sqltok.Token, d division, text func(from, to int) string) string {
	dividend, divisor := text(d.left, d.right), text(d.from, d.to)
	if d.slash || slashed(toks, d.left, d.right) || slashed(toks, d.from, d.to) {
		return dividend + " IS NOT NULL"
	}
	return "(" + dividend + " IS NOT NULL OR pg_typeof(" + dividend + ") IN ('integer', 'bigint', 'smallint') AND pg_typeof(" + divisor + ") IN ('integer', 'bigint', 'smallint'))"
}

// divZeroRows is a result whose last column is divZeroCounted's: the client is given the
// columns before it, and zeros sums it.
type divZeroRows struct {
	query.Rows
	schema *arrow.Schema
	last   arrow.RecordBatch
	zeros  int
}

func newDivZeroRows(rows query.Rows) query.Rows {
	s := rows.Schema()
	if s == nil || s.NumFields() < 2 {
		return rows
	}
	fields := s.Fields()
	md := s.Metadata()
	return &divZeroRows{Rows: rows, schema: arrow.NewSchema(fields[:len(fields)-1], &md)}
}

func (r *divZeroRows) Schema() *arrow.Schema { return r.schema }

func (r *divZeroRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	r.release()
	b, err := r.Rows.Next(ctx)
	if b == nil || err != nil {
		return b, err
	}
	cols := b.Columns()
	n := len(cols) - 1
	for i := 0; i < int(b.NumRows()); i++ {
		if !cols[n].IsNull(i) {
			v, _ := strconv.Atoi(cols[n].ValueStr(i))
			r.zeros += v
		}
	}
	r.last = array.NewRecordBatch(r.schema, cols[:n], b.NumRows())
	return r.last, nil
}

func (r *divZeroRows) Close() error {
	r.release()
	return r.Rows.Close()
}

func (r *divZeroRows) release() {
	if r.last != nil {
		r.last.Release()
		r.last = nil
	}
}

// countedZeros is the divisions by zero counted in rows' last column, if it is divZeroCounted's.
func countedZeros(rows query.Rows) int {
	if r, ok := rows.(*divZeroRows); ok {
		return r.zeros
	}
	return 0
}
