package duckengine

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's UPDATE reports MySQL's counts: its affected rows are the rows it changed
// (the rows it matched under the client's CLIENT_FOUND_ROWS, which mysql2, Connector/J and
// go-sql-driver's clientFoundRows ask for), and its OK packet's info says both ("Rows matched:
// 3  Changed: 1  Warnings: 0", mysql2's changedRows). DuckDB counts every row the WHERE
// matched, one set to the value it had included. So before the UPDATE runs, in the same
// transaction, one SELECT counts the rows its WHERE matches and, of them, those it changes: a
// row where a column set IS DISTINCT FROM its new value cast to the column's type, as the
// UPDATE casts it. The command tag carries both counts to the MySQL frontend:
// "UPDATE matched:3 changed:1 1" (the last number the affected rows).
//
// An UPDATE that is not UPDATE table [[AS] alias] SET col = expr, ... [WHERE ...] (DuckDB's
// forms with FROM or RETURNING, a SET of DEFAULT or of nextval) keeps DuckDB's count.

// updateCount is how a MySQL client's UPDATE is counted as MySQL counts it.
type updateCount struct {
	countSQL  string // SELECT count(*) (matched), count(*) FILTER (WHERE changes) (changed), then leavable's counts
	foundRows bool
	leavable  unchangedSets // assignments left out when they change no row (mysqlupdatekeys.go)
	variables []string      // SET VARIABLE of the user variables it assigns, run first (mysqlupdatevars.go)
	db, table string        // the table it updates (retryAside)
	sets      []assignment  // its assignments (changesReferencedKeys)
}

// mysqlUpdate is the count of q (a MySQL client's, as compatRequest wrote it) when it is an
// UPDATE of that form (nil otherwise), and q as it runs: with the table's ON UPDATE
// CURRENT_TIMESTAMP columns that q does not set set to the current time in the rows it changes
// (onUpdateSets).
func mysqlUpdate(ctx context.Context, conn *sql.Conn, client, q *query.Request) (*query.Request, *updateCount) {
	if !isMySQL(client) || !sqltok.FirstKeywordIs(client.SQL, sqltok.MySQL, "update") {
		return q, nil
	}
	u, ok := readUpdate(q.SQL)
	if !ok {
		return q, nil
	}
	types, onUpdate := columnTypes(ctx, conn, u.db, u.table)
	conds := make([]string, len(u.sets))
	for i, s := range u.sets {
		typ, ok := types[strings.ToLower(s.column)]
		if !ok {
			return q, nil // no such column (or table): the UPDATE says so itself
		}
		conds[i] = s.ref + " IS DISTINCT FROM CAST((" + s.expr + ") AS " + typ + ")"
		if typ == "VARCHAR" {
			// bytes, as MariaDB compares a row's old and new values: 'a' set to 'A' is changed,
			// where the column's NOCASE (a MySQL client's text column) finds it equal
			conds[i] = s.ref + " COLLATE C IS DISTINCT FROM CAST((" + s.expr + ") AS VARCHAR) COLLATE C"
		}
	}
	changes := strings.Join(conds, " OR ")
	leavable := leavableSets(ctx, conn, u, conds)
	countSQL := "SELECT count(*), count(*) FILTER (WHERE " + changes + ")" + leavable.counts() + " FROM " + u.target
	if u.where != "" {
		countSQL += " WHERE " + u.where
	}
	if sets := onUpdateSets(u, onUpdate, types, changes); sets != "" {
		c := *q
		c.SQL = q.SQL[:u.setsEnd] + pinnedNow(ctx, sets) + q.SQL[u.setsEnd:] // mysqlnowpin.go
		q = &c
	}
	leavable.sqlText = q.SQL // the assignments' places stand: the ON UPDATE ones follow them
	return q, &updateCount{countSQL: countSQL, foundRows: client.FoundRows, leavable: leavable, variables: variableSets(client, u), db: u.db, table: u.table, sets: u.sets}
}

// onUpdateSets are the assignments an UPDATE u gets for the table's ON UPDATE
// CURRENT_TIMESTAMP columns (onUpdate) that it does not set itself: the current
// time, at the column's precision, in a row where another column changes (changes), as
// MariaDB sets them: a row whose values stay as they were keeps its time too.
func onUpdateSets(u update, onUpdate []string, types map[string]string, changes string) string {
	var b strings.Builder
	for _, col := range onUpdate {
		if slices.ContainsFunc(u.sets, func(a assignment) bool { return strings.EqualFold(a.column, col) }) {
			continue
		}
		now := currentTimeAs(types[strings.ToLower(col)])
		b.WriteString(", " + quoteIdent(col) + " = CASE WHEN " + changes + " THEN " + now + " ELSE " + quoteIdent(col) + " END")
	}
	return b.String()
}

// currentTimeAs is the current time at the precision of an ON UPDATE CURRENT_TIMESTAMP column
// of type typ (DuckDB's).
func currentTimeAs(typ string) string {
	now := mysqlNow
	switch typ {
	case "TIMESTAMP_S":
		return "CAST(date_trunc('second', " + now + ") AS TIMESTAMP_S)"
	case "TIMESTAMP_MS":
		return "CAST(date_trunc('millisecond', " + now + ") AS TIMESTAMP_MS)"
	}
	return "CAST(" + now + " AS " + typ + ")"
}

// update is an UPDATE as readUpdate reads it.
type update struct {
	db, table string // the table's name, unquoted
	target    string // the table with its alias, as written
	sets      []assignment
	setsEnd   int    // where the SET list ends in the text
	where     string // the WHERE condition, as written; "" for none
}

// assignment is one col = expr of an UPDATE's SET.
type assignment struct {
	column   string // the column's name, unquoted
	ref      string // the column as written (t.col, "col")
	expr     string
	from, to int // where it is in the text, the column's start to the expression's end
}

// readUpdate reads sqlText (DuckDB's) as UPDATE table [[AS] alias] SET col = expr, ...
// [WHERE cond]; ok is false for any other form.
func readUpdate(sqlText string) (u update, ok bool) {
	toks := sqltok.SignificantTokens(sqlText, sqltok.Generic)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	isName := func(i int) bool {
		return i < len(toks) && (toks[i].Kind == sqltok.Word || toks[i].Kind == sqltok.QuotedIdent && toks[i].Text[0] == '"' && !toks[i].Unterminated)
	}
	text := func(from, to int) string { // the text of toks[from:to]
		return sqlText[toks[from].Pos : toks[to-1].Pos+len(toks[to-1].Text)]
	}
	if len(toks) < 6 || !toks[0].IsWord("update") || !isName(1) {
		return u, false
	}
	i := 2
	u.table = unquoteIdent(toks[1])
	if i+1 < len(toks) && toks[i].Text == "." && isName(i+1) {
		u.db, u.table = u.table, unquoteIdent(toks[i+1])
		i += 2
	}
	if toks[i].IsWord("as") {
		i++
	}
	if !toks[i].IsWord("set") && isName(i) {
		i++ // an alias
	}
	if i >= len(toks) || !toks[i].IsWord("set") {
		return u, false
	}
	u.target = text(1, i)
	for i++; i < len(toks); {
		// col = expr, up to a comma or WHERE at depth 0.
		start := i
		for i < len(toks) && (isName(i) || toks[i].Text == ".") {
			i++
		}
		if i == start || i >= len(toks) || toks[i].Text != "=" || !isName(i-1) {
			return u, false
		}
		a := assignment{column: unquoteIdent(toks[i-1]), ref: text(start, i)}
		i++
		exprStart, depth := i, 0
		for ; i < len(toks); i++ {
			t := toks[i]
			switch {
			case t.Text == "(" || t.Text == "[":
				depth++
			case t.Text == ")" || t.Text == "]":
				depth--
			case t.Kind == sqltok.Word && (strings.EqualFold(t.Text, "nextval") || strings.EqualFold(t.Text, "setval")):
				return u, false // the count would take sequence values too
			}
			if depth == 0 && (t.Text == "," || t.IsWord("where", "from", "returning", "order", "limit") || t.Text == ";") {
				break
			}
		}
		if i == exprStart || i-exprStart == 1 && toks[exprStart].IsWord("default") {
			return u, false
		}
		a.expr, a.from, a.to = text(exprStart, i), toks[start].Pos, toks[i-1].Pos+len(toks[i-1].Text)
		u.sets, u.setsEnd = append(u.sets, a), toks[i-1].Pos+len(toks[i-1].Text)
		if i == len(toks) {
			return u, true
		}
		switch t := toks[i]; {
		case t.Text == ",":
			i++
		case t.IsWord("where"):
			if i+1 == len(toks) {
				return u, false
			}
			depth := 0
			for j := i + 1; j < len(toks); j++ {
				switch t := toks[j]; {
				case t.Text == "(":
					depth++
				case t.Text == ")":
					depth--
				case t.Text == ";" || depth == 0 && t.IsWord("returning", "order", "limit"):
					return u, false
				}
			}
			u.where = text(i+1, len(toks))
			return u, true
		default:
			return u, false
		}
	}
	return u, false
}

// columnTypes are the types of table db.table's columns (db "": the current database's), by
// their names in lower case, and its ON UPDATE CURRENT_TIMESTAMP columns (onUpdateComment).
func columnTypes(ctx context.Context, conn *sql.Conn, db, table string) (types map[string]string, onUpdate []string) {
	rows, err := conn.QueryContext(ctx, "SELECT column_name, data_type, coalesce(starts_with(comment, '"+onUpdateComment+"'), false) FROM duckdb_columns() WHERE "+
		inSchema("database_name", "schema_name", db)+" AND lower(table_name) = lower(?)", table)
	if err != nil {
		return nil, nil
	}
	defer rows.Close()
	types = map[string]string{}
	for rows.Next() {
		var name, typ string
		var updated bool
		if rows.Scan(&name, &typ, &updated) != nil {
			return nil, nil
		}
		types[strings.ToLower(name)] = typ
		if updated {
			onUpdate = append(onUpdate, name)
		}
	}
	return types, onUpdate
}

// run runs the UPDATE q, prepared as p, on conn, counted.
func (u *updateCount) run(ctx context.Context, conn *sql.Conn, inTx bool, q *query.Request, p *prepared) (query.Rows, error) {
	args, err := coerceArgs(p.params, q.Args, false)
	if err != nil {
		return nil, err
	}
	return u.count(ctx, conn, inTx, args, func(sqlText string) (query.Rows, error) {
		if sqlText == q.SQL || p.sqlText != q.SQL { // p.sqlText: its parameters typed, kept whole
			return run(ctx, conn, q, p, func() {})
		}
		lean, err := prepare(conn, sqlText)
		if err != nil {
			return nil, wrapErr(err)
		}
		c := *q
		c.SQL = sqlText
		return run(ctx, conn, &c, lean, func() {})
	})
}

// count counts the rows the UPDATE matches and changes, then runs it (exec of its text, whose
// rows are a command tag by the end), in a transaction of its own unless inTx, and answers with
// MySQL's counts. args are the UPDATE's, as DuckDB binds them.
func (u *updateCount) count(ctx context.Context, conn *sql.Conn, inTx bool, args []any, exec func(sqlText string) (query.Rows, error)) (query.Rows, error) {
	return ownTransaction(ctx, conn, inTx, func() (query.Rows, error) { return u.counted(ctx, conn, inTx, args, exec) })
}

// counted counts, then runs exec.
func (u *updateCount) counted(ctx context.Context, conn *sql.Conn, inTx bool, args []any, exec func(sqlText string) (query.Rows, error)) (query.Rows, error) {
	for _, v := range u.variables {
		if len(args) > 0 {
			return nil, &query.Error{Code: "42000", Message: "This version of QueryFlux on DuckDB doesn't yet support 'assigning a user variable " +
				"in an UPDATE's SET with parameters' (MySQL error 1235)"}
		}
		if _, err := conn.ExecContext(ctx, v); err != nil {
			return nil, withoutStatement(wrapErr(err))
		}
	}
	var matched, changed int64
	setChanges := make([]int64, len(u.leavable.sets))
	dest := []any{&matched, &changed}
	for i := range setChanges {
		dest = append(dest, &setChanges[i])
	}
	if err := conn.QueryRowContext(ctx, u.countSQL, args...).Scan(dest...); err != nil {
		return nil, withoutStatement(wrapErr(err)) // the UPDATE's own error (a value its column refuses), but for the text
	}
	sqlText, runs := u.leavable.without(setChanges)
	if !runs {
		return u.tag(matched, 0), nil
	}
	var rows query.Rows
	var err error
	if inTx && u.changesReferencedKeys(ctx, conn, setChanges) { // mysqlupdatekeys.go
		rows, err = withReferencingRebuilt(ctx, conn, true, "", u.table, nil, nil, noActions, func() (query.Rows, error) { return exec(sqlText) })
		if err == errOrphans {
			err = errParentRowInUse
		}
	} else {
		rows, err = exec(sqlText)
	}
	if err != nil {
		return nil, err
	}
	tag, ok := rows.(engine.TagRows)
	if !ok {
		_ = rows.Close()
		return nil, errors.New("duckengine: an UPDATE returned rows")
	}
	cut := strings.LastIndexByte(string(tag), ' ')
	counted, perr := strconv.ParseInt(string(tag)[cut+1:], 10, 64)
	if perr != nil {
		return tag, nil
	}
	return u.tag(counted, min(changed, counted)), nil // DuckDB's count of the rows matched stands
}

// tag is the UPDATE's command tag of MySQL's counts.
func (u *updateCount) tag(matched, changed int64) engine.TagRows {
	n := changed
	if u.foundRows {
		n = matched
	}
	return engine.TagRows("UPDATE matched:" + strconv.FormatInt(matched, 10) + " changed:" + strconv.FormatInt(changed, 10) +
		" " + strconv.FormatInt(n, 10))
}

// limitedWrite is a MySQL client's UPDATE or DELETE with ORDER BY and/or LIMIT (sqlText as
// mysqlCompat wrote it), which DuckDB's parser refuses, as one on the rows a subquery picks:
// UPDATE t SET ... WHERE c ORDER BY o LIMIT n is UPDATE t SET ... WHERE rowid IN (SELECT
// rowid FROM t WHERE c ORDER BY o LIMIT n), DELETE FROM t ... the same (a batch job's DELETE
// ... LIMIT 1000, a queue's UPDATE ... ORDER BY id LIMIT 1). Other statements are sqlText.
func limitedWrite(sqlText string) string {
	if !containsFold(sqlText, "limit") && !containsFold(sqlText, "order") || !sqltok.FirstKeywordIs(sqlText, sqltok.Generic, "update", "delete") {
		return sqlText
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.Generic)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	if len(toks) < 4 {
		return sqlText
	}
	// The table: UPDATE t [[AS] a] SET, or DELETE FROM t; where WHERE, ORDER and LIMIT start.
	var tableFrom, tableTo, head int
	if toks[0].IsWord("delete") {
		if !toks[1].IsWord("from") {
			return sqlText
		}
		tableFrom, tableTo = 2, 3
		if tableTo+1 < len(toks) && toks[tableTo].Text == "." {
			tableTo += 2
		}
		head = tableTo
	} else {
		tableFrom = 1
		for head = 1; head < len(toks) && !toks[head].IsWord("set"); head++ {
		}
		tableTo = head
	}
	where, order, depth := -1, -1, 0
	for i := head; i < len(toks); i++ {
		switch t := toks[i]; {
		case t.Text == "(":
			depth++
		case t.Text == ")":
			depth--
		case depth > 0:
		case t.IsWord("where") && where < 0 && order < 0:
			where = i
		case t.IsWord("order") && i+1 < len(toks) && toks[i+1].IsWord("by"), t.IsWord("limit"):
			if order < 0 {
				order = i
			}
		case t.IsWord("returning", "from", "using"):
			return sqlText
		}
	}
	if order < 0 || tableTo <= tableFrom || tableTo > len(toks) {
		return sqlText
	}
	text := func(from, to int) string { return sqlText[toks[from].Pos : toks[to-1].Pos+len(toks[to-1].Text)] }
	end := where
	if end < 0 {
		end = order
	}
	table := text(tableFrom, tableTo)
	if toks[0].IsWord("update") && tableTo-tableFrom > 1 {
		table = text(tableFrom, tableFrom+1) // UPDATE t AS a: the subquery reads t itself
		if tableFrom+2 < tableTo && toks[tableFrom+1].Text == "." {
			table = text(tableFrom, tableFrom+3)
		}
	}
	sub := "SELECT rowid FROM " + table
	if where >= 0 {
		sub += " WHERE " + text(where+1, order)
	}
	sub += " " + text(order, len(toks))
	return text(0, end) + " WHERE rowid IN (" + sub + ")"
}

// unqualifiedSets is a MySQL client's UPDATE t [AS] a SET a.col = ... (sqlText as mysqlCompat
// wrote it) with its SET's columns unqualified, which DuckDB requires ("Qualified column names
// in UPDATE .. SET not supported"); other statements are sqlText.
func unqualifiedSets(sqlText string) string {
	if !strings.Contains(sqlText, ".") || !sqltok.FirstKeywordIs(sqlText, sqltok.Generic, "update") {
		return sqlText
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.Generic)
	set := -1
	for i, t := range toks {
		if t.IsWord("set") {
			set = i
			break
		}
	}
	if set < 0 {
		return sqlText
	}
	isName := func(i int) bool {
		return i < len(toks) && (toks[i].Kind == sqltok.Word || toks[i].Kind == sqltok.QuotedIdent)
	}
	var b strings.Builder
	at, depth, start := 0, 0, set+1 // start: where an assignment may begin
	for i := set + 1; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.Text == "(":
			depth++
		case t.Text == ")":
			depth--
		case depth == 0 && t.Text == ",":
			start = i + 1
			continue
		case depth == 0 && t.IsWord("where", "order", "limit", "returning", "from"):
			i = len(toks)
			continue
		}
		if i != start || depth != 0 {
			continue
		}
		// [db.]table.col = : keep col only.
		last := i
		for last+2 < len(toks) && toks[last+1].Text == "." && isName(last+2) && isName(last) {
			last += 2
		}
		if last > i && last+1 < len(toks) && toks[last+1].Text == "=" {
			b.WriteString(sqlText[at:t.Pos])
			at = toks[last].Pos
		}
	}
	if at == 0 {
		return sqlText
	}
	b.WriteString(sqlText[at:])
	return b.String()
}

// withoutStatement is err without the statement DuckDB quotes after its message ("LINE 1:
// ..."): the count's SELECT, which is not the client's.
func withoutStatement(err error) error {
	var qe *query.Error
	if !errors.As(err, &qe) {
		return err
	}
	i := strings.Index(qe.Message, "\n\nLINE ")
	if i < 0 {
		return err
	}
	c := *qe
	c.Message = qe.Message[:i]
	return &c
}
