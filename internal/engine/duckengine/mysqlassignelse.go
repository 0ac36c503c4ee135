package duckengine

import (
	"context"
	"database/sql"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's `@v := expr` anywhere but a SELECT's own list (mysqlassign.go):
//   - a SELECT's derived table that only assigns, `FROM t, (SELECT @rn := 0) r` (MySQL 5's
//     ranking idiom, with `@rn := @rn + 1` in the list): MariaDB evaluates it once, before the
//     rows; here the variables are set first (SET VARIABLE, in order) and the derived table
//     reads them (`@rn AS "@rn := 0"`, its column named as MariaDB names it);
//   - anywhere else (WHERE, ORDER BY, an UPDATE's SET, INSERT ... VALUES, a subquery, inside an
//     expression of the list): MariaDB assigns row by row as it evaluates, which DuckDB's
//     statements cannot do; the statement is refused with MariaDB's 1235 naming the place,
//     rather than DuckDB's syntax error at ":=".

// varAssignment is one `@name := ...` of a statement: toks[at] is its "@".
type varAssignment struct {
	at    int
	name  string
	place string // where it is: "WHERE", "a subquery", ...; "" for the top-level select list
	init  int    // the "(" of the derived table that only assigns, -1 when it is not in one
}

// assignments finds the assignments of toks (a MySQL statement's significant tokens).
func assignments(toks []sqltok.Token) []varAssignment {
	type level struct {
		clause string // the last clause keyword at this depth
		open   int    // the "(" that opened it
	}
	levels := []level{{clause: strings.ToLower(toks[0].Text), open: -1}}
	var out []varAssignment
	for i, t := range toks {
		top := &levels[len(levels)-1]
		switch {
		case t.Text == "(": // in the clause it is in, until a SELECT says otherwise
			levels = append(levels, level{clause: top.clause, open: i})
		case t.Text == ")" && len(levels) > 1:
			levels = levels[:len(levels)-1]
		case t.IsWord("select", "from", "where", "group", "having", "order", "limit", "set", "values", "value", "on", "using", "into", "returning"):
			top.clause = strings.ToLower(t.Text)
		case t.Kind == sqltok.Operator && strings.HasPrefix(t.Text, ":=") && i >= 2 &&
			toks[i-2].Kind == sqltok.Operator && strings.HasSuffix(toks[i-2].Text, "@") && !strings.HasSuffix(toks[i-2].Text, "@@"):
			name, ok := userVarName(toks[i-1])
			if !ok {
				continue
			}
			a := varAssignment{at: i - 2, name: name, place: clausePlace[top.clause], init: -1}
			switch {
			case len(levels) > 1 && top.clause == "select" && toks[top.open+1].IsWord("select"):
				a.place = "a subquery"
				if len(levels) == 2 && onlyAssigns(toks, top.open) && levels[0].clause == "from" {
					a.init = top.open
				}
			case len(levels) > 1 && top.clause == "select":
				a.place = "an expression of the select list"
			case a.place == "" && !toks[0].IsWord("select"):
				a.place = "the select list of " + strings.ToUpper(toks[0].Text) + " ... SELECT"
			}
			out = append(out, a)
		}
	}
	return out
}

// clausePlace names the clause an assignment is in, for the error; "" for a select list.
var clausePlace = map[string]string{
	"from": "FROM", "where": "WHERE", "group": "GROUP BY", "having": "HAVING", "order": "ORDER BY", "limit": "LIMIT",
	"set": "an UPDATE's SET", "values": "INSERT ... VALUES", "value": "INSERT ... VALUES", "on": "a join's ON",
	"using": "a join's USING", "into": "INTO", "returning": "RETURNING", "update": "UPDATE", "insert": "INSERT",
	"delete": "DELETE", "replace": "REPLACE",
}

// onlyAssigns reports whether the parenthesized SELECT opening at toks[open] is `(SELECT @a :=
// ..., @b := ...)` and nothing else (no FROM, no other item), followed by its alias.
func onlyAssigns(toks []sqltok.Token, open int) bool {
	_, end := definitions(toks, open)
	if end < 0 || end+1 >= len(toks) || !toks[open+1].IsWord("select") {
		return false
	}
	if alias := toks[end+1]; alias.IsWord("as") || alias.Kind == sqltok.Word || alias.Kind == sqltok.QuotedIdent {
		for _, item := range sqltok.SplitAtCommas(toks[open+2 : end]) {
			if _, _, ok := assignmentAt(item); !ok {
				return false
			}
			for _, t := range item {
				if t.IsWord(selectListEnds...) {
					return false
				}
			}
		}
		return true
	}
	return false
}

// mysqlAssignElsewhere reads q for assignments anywhere but its select list: a refusal, or the
// statement with its derived tables' assignments run first.
func mysqlAssignElsewhere(q *query.Request) (ownRun, bool) {
	if !mayNameVariable(q.SQL) || !strings.Contains(q.SQL, ":=") || sqltok.FirstKeywordIs(q.SQL, sqltok.MySQL, "set") {
		return nil, false
	}
	if _, _, ok := updateVariables(q.SQL); ok {
		return nil, false // mysqlupdatevars.go
	}
	toks := sqltok.SignificantTokens(q.SQL, sqltok.MySQL)
	if len(toks) == 0 {
		return nil, false
	}
	var inits []varAssignment
	for _, a := range assignments(toks) {
		switch {
		case a.init >= 0 && toks[0].IsWord("select"):
			inits = append(inits, a)
		case a.place != "":
			return refuseAssignment(a), true
		}
	}
	if len(inits) == 0 {
		return nil, false
	}
	// The derived tables read the variables; each is set first, in order.
	var sets []string
	var b strings.Builder
	done := 0
	for _, a := range inits {
		item := itemAt(toks, a.at)
		end := item[len(item)-1].Pos + len(item[len(item)-1].Text)
		expr := q.SQL[toks[a.at+2].Pos+len(":=") : end]
		sets = append(sets, "SET VARIABLE "+quoteIdent("qf_uv_"+strings.ToLower(a.name))+" = ("+mysqlCompat("SELECT "+expr)+")")
		b.WriteString(q.SQL[done:toks[a.at].Pos])
		b.WriteString("@" + backticked(a.name) + " AS " + backticked(strings.TrimSpace(q.SQL[toks[a.at].Pos:end])))
		done = end
	}
	b.WriteString(q.SQL[done:])
	rest := *q
	rest.SQL = b.String()
	return func(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
		for _, s := range sets {
			if _, err := conn.ExecContext(ctx, s); err != nil {
				return nil, wrapErr(err)
			}
		}
		if run, ok := mysqlSelectVars(&rest); ok {
			return run(ctx, conn, inTx)
		}
		return selectVars{text: rest.SQL}.runAssigning(ctx, conn, inTx)
	}, true
}

// itemAt is the select list item of a derived table's `(SELECT @a := x, @b := y)` that begins
// at toks[at]: up to the next "," or ")" at its depth.
func itemAt(toks []sqltok.Token, at int) []sqltok.Token {
	depth := 0
	for i := at; i < len(toks); i++ {
		switch toks[i].Text {
		case "(":
			depth++
		case ")":
			if depth == 0 {
				return toks[at:i]
			}
			depth--
		case ",":
			if depth == 0 {
				return toks[at:i]
			}
		}
	}
	return toks[at:]
}

// backticked is name quoted as a MySQL client quotes a name.
func backticked(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// refuseAssignment is the statement's refusal for the assignment a: MariaDB's 1235, naming it.
func refuseAssignment(a varAssignment) ownRun {
	return func(context.Context, *sql.Conn, bool) (query.Rows, error) {
		return nil, &query.Error{Code: "42000", Message: "This version of QueryFlux on DuckDB doesn't yet support 'assigning a user variable (@" +
			a.name + " := ...) in " + a.place + "' (MySQL error 1235)"}
	}
}
