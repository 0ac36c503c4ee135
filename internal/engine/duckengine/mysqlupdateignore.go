package duckengine

import (
	"context"
	"io"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// MariaDB's UPDATE IGNORE leaves a row as it was when its new values would take a UNIQUE key
// another row has, and updates the others, in the order it reads them (the primary key's):
// `UPDATE IGNORE t SET u = u + 1` over u = 1, 2, 3, 4 changes only the last row. DuckDB
// refuses the whole statement (1062). So a MySQL client's UPDATE IGNORE that sets a key's
// column runs a row at a time: each row the WHERE matches, in the primary key's order, is
// updated unless a key of its new values finds another row. The statement counts every row
// matched and the rows changed, as MariaDB's (which gives no warning for a row left).

// ignoredUpdate is such an UPDATE as read from the client's text.
type ignoredUpdate struct {
	db, table string
	target    string    // the table and its alias, as written
	sets      []sqlPart // each assignment's expression, with its parameters' arguments
	columns   []string  // each assignment's column
	setsText  sqlPart   // the SET list, as written
	where     sqlPart   // the WHERE condition ("" for none)
}

// readIgnoredUpdate reads sqlText (args its ? parameters') as UPDATE IGNORE t [[AS] alias] SET
// col = expr, ... [WHERE cond]; ok is false for any other form.
func readIgnoredUpdate(sqlText string, args []any) (u ignoredUpdate, ok bool) {
	toks := sqltok.SignificantTokens(sqlText, sqltok.MySQL)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	isName := func(i int) bool {
		return i < len(toks) && (toks[i].Kind == sqltok.Word || toks[i].Kind == sqltok.QuotedIdent && !toks[i].Unterminated)
	}
	if len(toks) < 7 || !toks[0].IsWord("update") || !toks[1].IsWord("ignore") || !isName(2) {
		return u, false
	}
	params := 0
	for _, t := range toks {
		if t.Kind == sqltok.Param {
			if t.Text != "?" {
				return u, false
			}
			params++
		}
	}
	if params != len(args) {
		return u, false
	}
	argAt := 0
	part := func(ts []sqltok.Token) sqlPart {
		p := sqlPart{text: sqlText[ts[0].Pos : ts[len(ts)-1].Pos+len(ts[len(ts)-1].Text)]}
		for _, t := range ts {
			if t.Kind == sqltok.Param {
				p.args = append(p.args, args[argAt])
				argAt++
			}
		}
		return p
	}
	i := 3
	u.table = identText(toks[2])
	if i+1 < len(toks) && toks[i].Text == "." && isName(i+1) {
		u.db, u.table = u.table, identText(toks[i+1])
		i += 2
	}
	if toks[i].IsWord("as") {
		i++
	}
	if !toks[i].IsWord("set") && isName(i) {
		i++
	}
	if i >= len(toks) || !toks[i].IsWord("set") {
		return u, false
	}
	u.target = sqlText[toks[2].Pos : toks[i-1].Pos+len(toks[i-1].Text)]
	start, end, depth := i+1, len(toks), 0
	for k := start; k < len(toks); k++ {
		switch t := toks[k]; {
		case t.Text == "(":
			depth++
		case t.Text == ")":
			depth--
		case depth == 0 && t.IsWord("order", "limit", "from", "returning"):
			return u, false
		case depth == 0 && t.IsWord("where") && end == len(toks):
			end = k
		}
	}
	if end == start || end == len(toks)-1 {
		return u, false
	}
	for _, set := range sqltok.SplitAtCommas(toks[start:end]) {
		eq := 1
		if len(set) > 3 && set[1].Text == "." {
			eq = 3
		}
		if len(set) < eq+2 || set[eq].Text != "=" || !(set[eq-1].Kind == sqltok.Word || set[eq-1].Kind == sqltok.QuotedIdent) {
			return u, false
		}
		u.columns = append(u.columns, identText(set[eq-1]))
		u.sets = append(u.sets, part(set[eq+1:]))
	}
	argAt = 0
	u.setsText = part(toks[start:end])
	if end < len(toks) {
		u.where = part(toks[end+1:])
	}
	return u, true
}

// updateIgnoreByRows runs client, a MySQL client's UPDATE IGNORE, a row at a time when it sets
// a key's column (handled).
func (s *session) updateIgnoreByRows(ctx context.Context, client *query.Request) (query.Rows, bool, error) {
	if idsGiven(ctx) {
		return nil, false, nil
	}
	u, ok := readIgnoredUpdate(client.SQL, client.Args)
	if !ok {
		return nil, false, nil
	}
	var keys [][]string // the keys an assignment changes
	for _, k := range keyedColumns(ctx, s.conn, u.db, u.table) {
		for _, c := range u.columns {
			if containsFoldName(k, c) {
				keys = append(keys, k)
				break
			}
		}
	}
	if len(keys) == 0 {
		return nil, false, nil // no row can take another's key: DuckDB's UPDATE is MariaDB's
	}
	return s.byRows(ctx, client, func() (engine.TagRows, error) { return s.updateIgnoreRows(ctx, client, &u, keys) })
}

// updateIgnoreRows updates u's rows one at a time, leaving each whose new values keys find in
// another row, and answers the statement's MySQL tag.
func (s *session) updateIgnoreRows(ctx context.Context, client *query.Request, u *ignoredUpdate, keys [][]string) (engine.TagRows, error) {
	order := "rowid"
	if pk := primaryKey(ctx, s, u.db, u.table); len(pk) > 0 {
		var cols []string
		for _, c := range pk {
			cols = append(cols, mysqlIdent(c))
		}
		order = strings.Join(cols, ", ")
	}
	var t stmtText
	t.add("SELECT rowid FROM ", u.target)
	if u.where.text != "" {
		t.add(" WHERE ").part(u.where)
	}
	rowids, err := s.int64s(ctx, client, t.add(" ORDER BY ", order).b.String(), t.args...)
	if err != nil {
		return "", err
	}
	// A row's new values of the keys' columns (an assignment's value, else the column's own),
	// and the condition that another row has them in a key.
	var newVals stmtText
	var cond strings.Builder
	slot := 0
	for i, k := range keys {
		if i > 0 {
			cond.WriteString(" OR ")
		}
		cond.WriteString("(")
		for j, c := range k {
			val := sqlPart{text: mysqlIdent(c)}
			for a := len(u.columns) - 1; a >= 0; a-- {
				if strings.EqualFold(u.columns[a], c) {
					val = u.sets[a]
					break
				}
			}
			if slot > 0 {
				newVals.add(", ")
			}
			name := "qf_k" + strconv.Itoa(slot)
			newVals.add("(").part(val).add(") AS ", name)
			if j > 0 {
				cond.WriteString(" AND ")
			}
			cond.WriteString("qf_other." + mysqlIdent(c) + " = qf_new." + name)
			slot++
		}
		cond.WriteString(")")
	}
	var matched, changed int64
	for _, r := range rowids {
		id := strconv.FormatInt(r, 10)
		var check stmtText
		check.add("SELECT count(*) FROM ", mysqlTableName(u.db, u.table), " AS qf_other, (SELECT ").part(sqlPart{newVals.b.String(), newVals.args}).
			add(" FROM ", u.target, " WHERE rowid = ", id, ") AS qf_new WHERE qf_other.rowid <> ", id, " AND (", cond.String(), ")")
		taken, err := s.int64s(ctx, client, check.b.String(), check.args...)
		if err != nil {
			return "", err
		}
		matched++
		if len(taken) == 1 && taken[0] > 0 {
			continue // its new key is another row's: left as it was
		}
		var up stmtText
		up.add("UPDATE IGNORE ", u.target, " SET ").part(u.setsText).add(" WHERE rowid = ", id)
		q := *client
		q.FoundRows = false
		res, err := s.sub(context.WithValue(ctx, givenIDs{}, true), &q, up.b.String(), up.args...)
		if err != nil {
			return "", err
		}
		tag := ""
		if tr, ok := res.(interface{ Tag() string }); ok {
			tag = tr.Tag()
		}
		if err := res.Close(); err != nil {
			return "", err
		}
		_, rest, _ := strings.Cut(tag, "changed:")
		n, _ := strconv.ParseInt(strings.Fields(rest + " 0")[0], 10, 64)
		changed += n
	}
	n := changed
	if client.FoundRows {
		n = matched
	}
	return engine.TagRows("UPDATE matched:" + strconv.FormatInt(matched, 10) + " changed:" + strconv.FormatInt(changed, 10) + " " + strconv.FormatInt(n, 10)), nil
}

// mysqlTableName is table db.table as a MySQL client writes it.
func mysqlTableName(db, table string) string {
	if db == "" {
		return mysqlIdent(table)
	}
	return mysqlIdent(db) + "." + mysqlIdent(table)
}

// primaryKey is the columns of table db.table's primary key (nil without one).
func primaryKey(ctx context.Context, s *session, db, table string) []string {
	var cols []any
	err := s.conn.QueryRowContext(ctx, "SELECT constraint_column_names FROM duckdb_constraints() WHERE "+inSchema("database_name", "schema_name", db)+
		" AND lower(table_name) = lower(?) AND constraint_type = 'PRIMARY KEY'", table).Scan(&cols)
	if err != nil {
		return nil
	}
	var out []string
	for _, c := range cols {
		if name, ok := c.(string); ok {
			out = append(out, name)
		}
	}
	return out
}

// int64s is the first column of what sqlText (a MySQL client's statement) answers, each a whole
// number.
func (s *session) int64s(ctx context.Context, client *query.Request, sqlText string, args ...any) ([]int64, error) {
	rows, err := s.sub(ctx, client, sqlText, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for {
		b, err := rows.Next(ctx)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		for r := range int(b.NumRows()) {
			n, err := strconv.ParseInt(b.Column(0).ValueStr(r), 10, 64)
			if err != nil {
				return nil, err
			}
			out = append(out, n)
		}
	}
}
