package duckengine

import (
	"context"
	"database/sql"
	"regexp"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// MariaDB (without ONLY_FULL_GROUP_BY, its default) takes a grouped query's column that is
// neither grouped nor aggregated, answering a value of the group: Django's annotate() groups
// by the primary key alone and selects the model's other columns (SELECT c.id, c.name,
// COUNT(p.id) ... GROUP BY c.id ORDER BY c.name), as do applications written against MySQL.
// DuckDB's binder refuses it ("column "name" must appear in the GROUP BY clause"). A MySQL
// client's query it refuses so is prepared again with that column, where it is a whole item of
// the select list or ORDER BY of a grouped SELECT, read as ANY_VALUE(column) (named as the
// column was), once for each column DuckDB names. A binder error leaves a transaction usable.

// notGrouped finds the column DuckDB's binder names.
var notGrouped = regexp.MustCompile(`column "([^"]+)" must appear in the GROUP BY clause`)

// maxUngrouped bounds the retries: one per column of the query the binder names.
const maxUngrouped = 16

// prepareGrouped prepares sqlText (q's, as DuckDB runs it) on conn, its ungrouped columns
// read as ANY_VALUE for a MySQL client.
func prepareGrouped(conn *sql.Conn, q *query.Request, sqlText string) (*prepared, error) {
	p, err := prepare(conn, sqlText)
	for i := 0; err != nil && isMySQL(q) && i < maxUngrouped; i++ {
		m := notGrouped.FindStringSubmatch(err.Error())
		if m == nil {
			break
		}
		fixed := anyValueOf(sqlText, m[1])
		if fixed == sqlText {
			break
		}
		sqlText = fixed
		p, err = prepare(conn, sqlText)
	}
	if err == nil && isMySQL(q) {
		if scaled := avgScaled(context.Background(), conn, sqlText); scaled != sqlText { // mysqlavg.go
			if ps, err := prepare(conn, scaled); err == nil {
				p = ps
			}
		}
	}
	return p, err
}

// anyValueOf is sqlText with each whole select-list and ORDER BY item of a grouped SELECT
// that is the column col (qualified or not) read as ANY_VALUE(col). An unqualified ORDER BY
// item is left alone when the select list has an item of that name (the item is what it
// orders by).
func anyValueOf(sqlText, col string) string {
	toks := sqltok.SignificantTokens(sqlText, sqltok.Generic)
	depth := make([]int, len(toks)+1)
	for i, t := range toks {
		depth[i+1] = depth[i]
		switch t.Text {
		case "(":
			depth[i+1]++
		case ")":
			depth[i+1]--
		}
	}
	type edit struct {
		from, to int
		text     string
	}
	var edits []edit
	for s, t := range toks {
		if !t.IsWord("select") {
			continue
		}
		d := depth[s]
		clauses := map[string]int{}
		end := len(toks)
		for i := s + 1; i < len(toks); i++ {
			if depth[i] < d || depth[i] == d && toks[i].IsWord("union", "except", "intersect") || toks[i].Text == ";" {
				end = i
				break
			}
			if depth[i] == d && depth[i+1] == d && toks[i].IsWord("from", "where", "group", "having", "order", "limit", "offset", "qualify", "window") {
				if _, seen := clauses[strings.ToLower(toks[i].Text)]; !seen {
					clauses[strings.ToLower(toks[i].Text)] = i
				}
			}
		}
		group, grouped := clauses["group"]
		if !grouped || group+1 >= end || !toks[group+1].IsWord("by") {
			continue
		}
		listEnd := end
		for _, c := range []string{"from", "where", "group"} {
			if i, ok := clauses[c]; ok && i < listEnd {
				listEnd = i
			}
		}
		items := splitItems(toks, depth, d, s+1, listEnd)
		named := false
		for _, it := range items {
			ref, alias, _ := columnItem(toks, it[0], it[1], true)
			if strings.EqualFold(alias, col) || alias == "" && ref >= 0 && strings.EqualFold(unquoteIdent(toks[ref]), col) {
				named = true
			}
		}
		for _, it := range items {
			ref, _, aliased := columnItem(toks, it[0], it[1], true)
			if ref < 0 || !strings.EqualFold(unquoteIdent(toks[ref]), col) {
				continue
			}
			name := ""
			if !aliased {
				name = " AS " + quoteIdent(unquoteIdent(toks[ref]))
			}
			edits = append(edits, edit{toks[it[0]].Pos, toks[ref].Pos + len(toks[ref].Text),
				"ANY_VALUE(" + sqlText[toks[it[0]].Pos:toks[ref].Pos+len(toks[ref].Text)] + ")" + name})
		}
		order, ordered := clauses["order"]
		if !ordered || order+1 >= end || !toks[order+1].IsWord("by") {
			continue
		}
		orderEnd := end
		for _, c := range []string{"limit", "offset"} {
			if i, ok := clauses[c]; ok && i > order && i < orderEnd {
				orderEnd = i
			}
		}
		for _, it := range splitItems(toks, depth, d, order+2, orderEnd) {
			ref, _, _ := columnItem(toks, it[0], it[1], false)
			if ref < 0 || !strings.EqualFold(unquoteIdent(toks[ref]), col) || ref == it[0] && named {
				continue
			}
			edits = append(edits, edit{toks[it[0]].Pos, toks[ref].Pos + len(toks[ref].Text),
				"ANY_VALUE(" + sqlText[toks[it[0]].Pos:toks[ref].Pos+len(toks[ref].Text)] + ")"})
		}
	}
	for i := len(edits) - 1; i >= 0; i-- { // from the end: the earlier places stand
		e := edits[i]
		sqlText = sqlText[:e.from] + e.text + sqlText[e.to:]
	}
	return sqlText
}

// splitItems splits toks[from:to] at the commas at depth d, as [start, end) pairs.
func splitItems(toks []sqltok.Token, depth []int, d, from, to int) [][2]int {
	var items [][2]int
	start := from
	for i := from; i <= to; i++ {
		if i == to || depth[i] == d && toks[i].Text == "," {
			if i > start {
				items = append(items, [2]int{start, i})
			}
			start = i + 1
		}
	}
	return items
}

// columnItem reads toks[from:to] as a column reference (name(.name)*) and what may follow it:
// in a select list an alias ([AS] alias), in ORDER BY ASC / DESC / NULLS FIRST / LAST. ref is
// the index of the reference's last name (-1 when the item is anything else) and alias the
// alias given, if any.
func columnItem(toks []sqltok.Token, from, to int, selectList bool) (ref int, alias string, aliased bool) {
	isName := func(i int) bool {
		return toks[i].Kind == sqltok.Word || toks[i].Kind == sqltok.QuotedIdent && toks[i].Text[0] == '"' && !toks[i].Unterminated
	}
	i := from
	if !isName(i) {
		return -1, "", false
	}
	for i+2 < to && toks[i+1].Text == "." && isName(i+2) {
		i += 2
	}
	ref = i
	rest := toks[i+1 : to]
	switch {
	case len(rest) == 0:
		return ref, "", false
	case selectList && len(rest) == 2 && rest[0].IsWord("as") && (rest[1].Kind == sqltok.Word || rest[1].Kind == sqltok.QuotedIdent):
		return ref, unquoteIdent(rest[1]), true
	case selectList && len(rest) == 1 && (rest[0].Kind == sqltok.Word && !rest[0].IsWord("from") || rest[0].Kind == sqltok.QuotedIdent):
		return ref, unquoteIdent(rest[0]), true
	case !selectList:
		for _, t := range rest {
			if !t.IsWord("asc", "desc", "nulls", "first", "last") {
				return -1, "", false
			}
		}
		return ref, "", false
	}
	return -1, "", false
}
