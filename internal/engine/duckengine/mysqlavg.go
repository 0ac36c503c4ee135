package duckengine

import (
	"context"
	"database/sql"
	"regexp"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// MariaDB's AVG of a DECIMAL(p,s) is a DECIMAL(p+4,s+4) (div_precision_increment): AVG of
// DECIMAL(8,2) prices 2.5 is 2.500000, and clients read that scale (mysqlclient's Decimal,
// mysql2's string). DuckDB's avg of a DECIMAL is a DOUBLE (2.5), and a macro cannot choose its
// result's type from its argument's scale (its overloads take DECIMAL whatever the scale). So a
// MySQL client's SELECT whose select list calls AVG (qf_mysql_avg, mysqlfunctions.go) asks
// DuckDB, by DESCRIBE of its FROM and WHERE with the arguments as columns, for each argument's
// type, and a DECIMAL one's average is cast to MariaDB's type. One DESCRIBE (a bind, nothing
// runs) for a statement that calls AVG; any other is as it was.

// decimalType reads DuckDB's DECIMAL(p,s).
var decimalType = regexp.MustCompile(`^DECIMAL\((\d+),(\d+)\)$`)

// avgCall is one qf_mysql_avg(arg) or AVG(DISTINCT arg) of the select list.
type avgCall struct {
	name, end int    // the tokens of its name and closing parenthesis
	arg       string // its argument, as written
	distinct  bool   // AVG(DISTINCT arg)
}

// integerTypes are DuckDB's types whose AVG MariaDB answers with four decimals.
var integerTypes = map[string]bool{"TINYINT": true, "SMALLINT": true, "INTEGER": true, "BIGINT": true,
	"UTINYINT": true, "USMALLINT": true, "UINTEGER": true, "UBIGINT": true, "HUGEINT": true}

// avgScaled is sqlText (DuckDB's, a MySQL client's SELECT) with each AVG of its select list
// whose argument is a DECIMAL cast to MariaDB's DECIMAL(p+4,s+4); sqlText when there is none or
// DuckDB cannot tell the arguments' types.
func avgScaled(ctx context.Context, conn *sql.Conn, sqlText string) string {
	if !containsFold(sqlText, "avg") || !sqltok.FirstKeywordIs(sqlText, sqltok.Generic, "select") {
		return sqlText
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.Generic)
	depth, d := make([]int, len(toks)), 0
	for i, t := range toks {
		if t.Text == ")" {
			d--
		}
		depth[i] = d
		if t.Text == "(" {
			d++
		}
	}
	from, rest := -1, len(toks) // the top level's FROM, and where its WHERE ends
	for i := 1; i < len(toks); i++ {
		if depth[i] != 0 {
			continue
		}
		switch {
		case from < 0 && toks[i].IsWord("from"):
			from = i
		case from >= 0 && toks[i].IsWord("group", "having", "order", "limit", "window", "qualify", "union", "except", "intersect", "offset") || toks[i].Text == ";":
			rest = min(rest, i)
		}
	}
	list := from // the select list's end
	if from < 0 {
		list = rest
	}
	var calls []avgCall
	for i := 1; i+1 < list; i++ {
		if !toks[i].IsWord("qf_mysql_avg", "avg") || toks[i+1].Text != "(" {
			continue
		}
		argAt, distinct := i+2, false
		if toks[i].IsWord("avg") { // AVG(DISTINCT x), which the macro does not take
			if argAt >= list || !toks[argAt].IsWord("distinct") {
				continue
			}
			argAt, distinct = argAt+1, true
		}
		end := argAt
		for end < list && depth[end] > depth[i] {
			end++
		}
		if end >= list || end == argAt {
			return sqlText
		}
		calls = append(calls, avgCall{name: i, end: end, distinct: distinct, arg: sqlText[toks[argAt].Pos : toks[end-1].Pos+len(toks[end-1].Text)]})
	}
	if len(calls) == 0 {
		return sqlText
	}
	cols := make([]string, len(calls))
	for k, c := range calls {
		cols[k] = "min(" + c.arg + ")"
	}
	probe := "DESCRIBE SELECT " + strings.Join(cols, ", ")
	switch {
	case from >= 0 && rest < len(toks):
		probe += " " + sqlText[toks[from].Pos:toks[rest].Pos]
	case from >= 0:
		probe += " " + sqlText[toks[from].Pos:]
	}
	params := 0 // the probe's parameters, bound NULL as resultSchema binds them
	for _, t := range sqltok.SignificantTokens(probe, sqltok.Generic) {
		if t.Kind != sqltok.Param {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimPrefix(t.Text, "$")); err == nil && t.Text[0] == '$' {
			params = max(params, n)
		} else {
			params++
		}
	}
	rows, err := conn.QueryContext(ctx, probe, make([]any, params)...)
	if err != nil {
		return sqlText // DuckDB's double
	}
	defer rows.Close()
	var types []string
	for rows.Next() {
		var name, typ string
		var skip [4]any
		if rows.Scan(&name, &typ, &skip[0], &skip[1], &skip[2], &skip[3]) != nil {
			return sqlText
		}
		types = append(types, typ)
	}
	if rows.Err() != nil || len(types) != len(calls) {
		return sqlText
	}
	var b strings.Builder
	at := 0
	for k, c := range calls {
		var p, s int
		if m := decimalType.FindStringSubmatch(types[k]); m != nil {
			p, _ = strconv.Atoi(m[1])
			s, _ = strconv.Atoi(m[2])
			p, s = min(p+4, 38), min(s+4, 38)
		} else if c.distinct && integerTypes[types[k]] {
			p, s = 38, 4 // as qf_mysql_avg's of an integer
		} else {
			continue
		}
		start, end := toks[c.name].Pos, toks[c.end].Pos+1
		b.WriteString(sqlText[at:start])
		b.WriteString("CAST(" + sqlText[start:end] + " AS DECIMAL(" + strconv.Itoa(p) + "," + strconv.Itoa(s) + "))")
		at = end
	}
	if at == 0 {
		return sqlText
	}
	b.WriteString(sqlText[at:])
	return b.String()
}
