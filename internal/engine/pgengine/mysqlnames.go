package pgengine

import (
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's result columns are named as MariaDB names them: an item without an alias by
// its text as written (sqltok.MySQLItemName: COUNT(*), where PostgreSQL says count), an alias
// and a column as the client wrote them (PostgreSQL folds them to lower case); and a table's
// column names its table by the alias the statement gave it (MariaDB's table, beside its
// org_table). PostgreSQL's RowDescription has neither: both are read off the client's text.

// mysqlTokens are the significant tokens of q's statement as its client wrote it, and that
// text; nil unless it is one MySQL client's query (a SELECT, WITH ... SELECT: an EXPLAIN's
// columns are its own).
func mysqlTokens(q *query.Request) (text string, toks []sqltok.Token) {
	if q.Protocol != query.ProtocolMySQL {
		return "", nil
	}
	if q.ClientSQL != "" {
		text, toks = q.ClientSQL, sqltok.SignificantTokens(q.ClientSQL, sqltok.MySQL)
	} else if a := q.Analysis(); len(a.Statements) == 1 {
		text, toks = a.SQL, a.Statements[0].Significant
	}
	if len(toks) == 0 || !toks[0].IsWord("select", "with") && toks[0].Text != "(" {
		return "", nil
	}
	return text, toks
}

// mysqlNames is fields with MySQL's names for a MySQL client's statement (a copy; fields when
// no name changes). An item whose last word is PostgreSQL's name of its column is an alias or a
// column (`count(*) AS C`, `g.V`): named by that word as written. A statement whose items
// cannot be told one for one (a *) keeps PostgreSQL's names.
func mysqlNames(q *query.Request, fields []pgconn.FieldDescription) []pgconn.FieldDescription {
	text, toks := mysqlTokens(q)
	if toks == nil {
		return fields
	}
	items := sqltok.MySQLSelectItems(text, toks)
	if len(items) != len(fields) {
		return fields
	}
	out := fields
	for i, item := range items {
		name := mysqlItemName(item, fields[i].Name)
		if name == "" {
			return fields // a *
		}
		if name != fields[i].Name {
			if &out[0] == &fields[0] {
				out = append([]pgconn.FieldDescription(nil), fields...)
			}
			out[i].Name = name
		}
	}
	return out
}

// mysqlItemName is MySQL's name of item, PostgreSQL's name for it pgName; "" for a *.
func mysqlItemName(item, pgName string) string {
	toks := sqltok.SignificantTokens(item, sqltok.MySQL)
	if len(toks) == 0 || toks[len(toks)-1].Text == "*" {
		return ""
	}
	if last := toks[len(toks)-1]; len(toks) > 1 && pgFolded(last) == pgName {
		switch {
		case last.Kind == sqltok.String: // AS "alias", AS 'alias'
			return sqltok.MySQLStringValue(last.Text)
		case last.Kind == sqltok.Word || last.Kind == sqltok.QuotedIdent:
			return sqltok.MySQLIdent(last)
		}
	}
	return sqltok.MySQLItemName(item)
}

// pgFolded is the name PostgreSQL reads in t (numberedParams writes `x` as "x"); "" when t is no
// name.
func pgFolded(t sqltok.Token) string {
	switch {
	case t.Unterminated:
		return ""
	case t.Kind == sqltok.Word:
		return strings.ToLower(t.Text)
	case t.Kind == sqltok.QuotedIdent:
		return sqltok.MySQLIdent(t)
	case t.Kind == sqltok.String && t.Text[0] == '"':
		return sqltok.MySQLStringValue(t.Text)
	}
	return ""
}

// fromAliases maps each table of q's FROM list (its name as PostgreSQL reads it) to the alias
// the statement gives it; a table named twice, or not at all, is not in it.
func fromAliases(q *query.Request) map[string]string {
	_, toks := mysqlTokens(q)
	i, depth := 0, 0
	for ; i < len(toks); i++ { // the outermost FROM
		if depth == 0 && toks[i].Kind == sqltok.Word && strings.EqualFold(toks[i].Text, "from") {
			break
		}
		depth += sqltok.ParenStep(toks[i])
	}
	var aliases map[string]string
	seen := map[string]int{}
	for i++; i < len(toks); {
		t := toks[i]
		if t.Kind == sqltok.Word && fromEnds[strings.ToLower(t.Text)] || t.Text == ";" || t.Text == ")" {
			break
		}
		if t.Kind == sqltok.Word && fromJoins[strings.ToLower(t.Text)] || t.Text == "," {
			i++
			continue
		}
		if t.Kind != sqltok.Word && t.Kind != sqltok.QuotedIdent {
			return nil // a subquery, a function: not read
		}
		// [schema.]table [AS] alias
		j := i
		for j+2 < len(toks) && toks[j+1].Text == "." {
			j += 2
		}
		table := pgFolded(toks[j])
		seen[table]++
		j++
		if j < len(toks) && toks[j].Kind == sqltok.Word && strings.EqualFold(toks[j].Text, "as") {
			j++
		}
		if j < len(toks) && (toks[j].Kind == sqltok.QuotedIdent || toks[j].Kind == sqltok.Word && !aliasStops[strings.ToLower(toks[j].Text)]) {
			if aliases == nil {
				aliases = map[string]string{}
			}
			aliases[table] = sqltok.MySQLIdent(toks[j])
			j++
		}
		// past ON / USING's condition, to the next table
		for depth = 0; j < len(toks); j++ {
			w := strings.ToLower(toks[j].Text)
			if depth == 0 && (toks[j].Text == "," || toks[j].Text == ";" || toks[j].Text == ")" ||
				toks[j].Kind == sqltok.Word && (fromJoins[w] || fromEnds[w])) {
				break
			}
			depth += sqltok.ParenStep(toks[j])
		}
		i = j
	}
	for table, n := range seen { //determinism:ok each table is looked at alone
		if n > 1 {
			delete(aliases, table)
		}
	}
	return aliases
}

// fromEnds end a FROM list; fromJoins come between its tables; aliasStops are words after a
// table that are no alias.
var (
	fromEnds = map[string]bool{"where": true, "group": true, "having": true, "order": true, "limit": true,
		"union": true, "except": true, "intersect": true, "for": true, "lock": true, "window": true, "into": true}
	fromJoins = map[string]bool{"join": true, "inner": true, "left": true, "right": true, "full": true, "outer": true,
		"cross": true, "natural": true, "straight_join": true}
	aliasStops = map[string]bool{"on": true, "using": true, "where": true, "group": true, "having": true, "order": true,
		"limit": true, "union": true, "except": true, "intersect": true, "for": true, "lock": true, "window": true,
		"into": true, "join": true, "inner": true, "left": true, "right": true, "full": true, "cross": true,
		"natural": true, "straight_join": true, "force": true, "use": true, "ignore": true, "partition": true}
)

// countItems reports which of q's n select items are a COUNT (sqltok.IsCountItem); none when
// its items cannot be told one for one.
func countItems(q *query.Request, n int) []bool {
	counts := make([]bool, n)
	text, toks := mysqlTokens(q)
	items := sqltok.MySQLSelectItems(text, toks)
	if len(items) != n {
		return counts
	}
	for i, item := range items {
		counts[i] = sqltok.IsCountItem(sqltok.SignificantTokens(item, sqltok.MySQL))
	}
	return counts
}
