package duckengine

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// DuckDB runs ON CONFLICT DO UPDATE as a delete and an insert of the row, and the delete checks
// the foreign keys that reference the table: an upsert that updates a row another table
// references fails ("still referenced", 1452), even when the key does not change (Sequelize's
// upsert sets id = VALUES(id); TypeORM's and Knex's upserts set the other columns). And DuckDB
// takes one conflict target, where MariaDB updates the row whichever key the new one collides
// with (TypeORM's upsert(..., ['email']) writes id DEFAULT and collides on email: 1062).
//
// So a MySQL client's INSERT ... VALUES ... ON DUPLICATE KEY UPDATE of a table a foreign key
// references runs a row at a time, as MariaDB runs it: the row a key of the new one finds (the
// primary key first, then the unique keys) is updated in place by an UPDATE (its assignments with
// VALUES(c) the new row's value; one of the finding key's own columns to its own value left out,
// so the referenced key is not written), else the row is inserted. The statement counts MySQL's
// affected rows (1 inserted, 2 changed, 0 left as it was: 1 under CLIENT_FOUND_ROWS) and moves
// the AUTO_INCREMENT counter as InnoDB does: the statement reserves a value for each of its rows
// at its first generated id, and a row that updates gives its value back to the next row.
// Its cost is a lookup and a statement a row, for upserts of referenced tables only.

// rowUpsert is such a statement as read from the client's text.
type rowUpsert struct {
	db, table string
	tableText string      // the table as the client wrote it
	columns   []string    // the columns given (all the table's without a column list)
	rows      [][]sqlPart // each row's values, as written (a SELECT's: as it answered them, read by readSource)
	sets      []upsertSet
	// selected is the statement's SELECT (INSERT ... SELECT), its text "" for VALUES.
	selected sqlPart
}

// sqlPart is a piece of a statement's text and the arguments of its parameters, in order.
type sqlPart struct {
	text string
	args []any
}

// stmtText builds a statement of parts, its arguments in their order.
type stmtText struct {
	b    strings.Builder
	args []any
}

func (t *stmtText) add(texts ...string) *stmtText {
	for _, s := range texts {
		t.b.WriteString(s)
	}
	return t
}

func (t *stmtText) part(p sqlPart) *stmtText {
	t.b.WriteString(p.text)
	t.args = append(t.args, p.args...)
	return t
}

// upsertSet is one assignment of ON DUPLICATE KEY UPDATE.
type upsertSet struct {
	column string
	expr   []sqltok.Token // its value's tokens (Pos in the client's text)
	args   []any          // the arguments of its parameters
	same   string         // the column whose VALUES() the value is alone, else ""
}

// readRowUpsert reads sqlText as INSERT [INTO] t [(columns)] VALUES (row), ... ON DUPLICATE KEY
// UPDATE c = expr, ...; ok is false for any other form (IGNORE, a SELECT, SET). args are its
// parameters' (? only).
func readRowUpsert(sqlText string, args []any) (u rowUpsert, ok bool) {
	toks, argsOf, i, ok := readRowInsert(sqlText, args, "into")
	if !ok || len(toks) < 8 {
		return u, false
	}
	u, i, ok = readInsertRows(sqlText, toks, i, argsOf)
	if !ok {
		return u, false
	}
	if i+4 >= len(toks) || !toks[i].IsWord("on") || !toks[i+1].IsWord("duplicate") || !toks[i+2].IsWord("key") || !toks[i+3].IsWord("update") {
		return u, false
	}
	for _, part := range sqltok.SplitAtCommas(toks[i+4:]) {
		eq := 1
		if len(part) > 3 && part[1].Text == "." {
			eq = 3
		}
		if len(part) < eq+2 || part[eq].Text != "=" || part[eq-1].Kind != sqltok.Word && part[eq-1].Kind != sqltok.QuotedIdent {
			return u, false
		}
		s := upsertSet{column: identText(part[eq-1]), expr: part[eq+1:], args: argsOf(part[eq+1:])}
		if e := s.expr; len(e) == 4 && e[0].IsWord("values", "value") && e[1].Text == "(" && e[3].Text == ")" {
			s.same = identText(e[2])
		}
		u.sets = append(u.sets, s)
	}
	return u, (len(u.rows) > 0 || u.selected.text != "") && len(u.sets) > 0
}

// readRowInsert reads the tokens of sqlText, a MySQL client's INSERT whose modifiers are among
// allowed, to its table's name (at toks[i]); argsOf gives a value's parameters' arguments
// (args, bound to ? only).
func readRowInsert(sqlText string, args []any, allowed ...string) (toks []sqltok.Token, argsOf func([]sqltok.Token) []any, i int, ok bool) {
	toks = sqltok.SignificantTokens(sqlText, sqltok.MySQL)
	if len(toks) > 0 && toks[len(toks)-1].Text == ";" {
		toks = toks[:len(toks)-1]
	}
	if len(toks) < 5 || !toks[0].IsWord("insert", "replace") {
		return nil, nil, 0, false
	}
	argAt := map[int]any{} // a parameter's argument by its token's Pos
	for _, t := range toks {
		if t.Kind == sqltok.Param {
			if t.Text != "?" || len(argAt) >= len(args) {
				return nil, nil, 0, false
			}
			argAt[t.Pos] = args[len(argAt)]
		}
	}
	if len(argAt) != len(args) {
		return nil, nil, 0, false
	}
	argsOf = func(d []sqltok.Token) []any {
		var a []any
		for _, t := range d {
			if t.Kind == sqltok.Param {
				a = append(a, argAt[t.Pos])
			}
		}
		return a
	}
	i = afterInsertModifiers(toks)
	for _, t := range toks[1:i] {
		if !t.IsWord(allowed...) {
			return nil, nil, 0, false // a priority: the plain statement's path
		}
	}
	return toks, argsOf, i, i+1 < len(toks)
}

// readInsertRows reads toks from the table's name (toks[i]) through the VALUES rows, or the
// SELECT (u.selected, to ON DUPLICATE KEY UPDATE or the end): the index after them.
func readInsertRows(sqlText string, toks []sqltok.Token, i int, argsOf func([]sqltok.Token) []any) (u rowUpsert, end int, ok bool) {
	start := toks[i]
	u.table = identText(toks[i])
	if toks[i+1].Text == "." {
		if i+3 >= len(toks) {
			return u, 0, false
		}
		u.db, u.table = u.table, identText(toks[i+2])
		i += 2
	}
	u.tableText = sqlText[start.Pos : toks[i].Pos+len(toks[i].Text)]
	i++
	if toks[i].Text == "(" {
		defs, end := definitions(toks, i)
		if end < 0 {
			return u, 0, false
		}
		for _, d := range defs {
			if len(d) != 1 || d[0].Kind != sqltok.Word && d[0].Kind != sqltok.QuotedIdent {
				return u, 0, false
			}
			u.columns = append(u.columns, identText(d[0]))
		}
		i = end + 1
	}
	if i < len(toks) && (toks[i].IsWord("select", "with") || toks[i].Text == "(" && i+1 < len(toks) && toks[i+1].IsWord("select", "with")) {
		end := len(toks)
		for k, depth := i, 0; k < len(toks); k++ {
			switch {
			case toks[k].Text == "(":
				depth++
			case toks[k].Text == ")":
				depth--
			case depth == 0 && k+3 < len(toks) && toks[k].IsWord("on") && toks[k+1].IsWord("duplicate") && toks[k+2].IsWord("key") && toks[k+3].IsWord("update"):
				end, k = k, len(toks)
			}
		}
		last := toks[end-1]
		u.selected = sqlPart{sqlText[toks[i].Pos : last.Pos+len(last.Text)], argsOf(toks[i:end])}
		return u, end, true
	}
	if i >= len(toks) || !toks[i].IsWord("values", "value") {
		return u, 0, false
	}
	for i++; i < len(toks) && toks[i].Text == "("; {
		defs, end := definitions(toks, i)
		if end < 0 || len(defs) == 0 || u.columns != nil && len(defs) != len(u.columns) {
			return u, 0, false
		}
		row := make([]sqlPart, len(defs))
		for j, d := range defs {
			row[j] = sqlPart{sqlText[d[0].Pos : d[len(d)-1].Pos+len(d[len(d)-1].Text)], argsOf(d)}
		}
		u.rows = append(u.rows, row)
		i = end + 1
		if i < len(toks) && toks[i].Text == "," {
			i++
		}
	}
	return u, i, len(u.rows) > 0
}

// valueOf is row's value of column (written); its text "" when the statement does not give it.
func (u *rowUpsert) valueOf(row []sqlPart, column string) sqlPart {
	for j, c := range u.columns {
		if strings.EqualFold(c, column) {
			return row[j]
		}
	}
	return sqlPart{}
}

// aiValue is what row gives the AUTO_INCREMENT column name (rowValue's answer).
func (u *rowUpsert) aiValue(row []sqlPart, name string) (explicit int64, generate, ok bool) {
	v := u.valueOf(row, name)
	if v.text == "" {
		return 0, true, true
	}
	return rowValue(sqltok.SignificantTokens(v.text, sqltok.MySQL), v.args, 0)
}

// setsFor is the UPDATE's SET list for row found by key: VALUES(c) as the row's value of c; an
// assignment of a key column to its own new value left out. ok is false when a VALUES() names
// a column the row does not give, or gives as DEFAULT (the column's default: not known here).
func (u *rowUpsert) setsFor(sqlText string, row []sqlPart, key []string) (sets []sqlPart, ok bool) {
	for _, s := range u.sets {
		if s.same != "" && strings.EqualFold(s.same, s.column) && containsFoldName(key, s.column) {
			continue
		}
		var b stmtText
		b.add(mysqlIdent(s.column), " = ")
		e := s.expr
		at, own := e[0].Pos, s.args // own: the expression's own parameters' arguments, in order
		for k := 0; k < len(e); k++ {
			if e[k].Kind == sqltok.Param {
				b.part(sqlPart{sqlText[at : e[k].Pos+1], own[:1]})
				own, at = own[1:], e[k].Pos+1
			}
			if k+3 < len(e) && e[k].IsWord("values", "value") && e[k+1].Text == "(" && e[k+3].Text == ")" {
				v := u.valueOf(row, identText(e[k+2]))
				if v.text == "" || strings.EqualFold(v.text, "default") {
					return nil, false
				}
				b.add(sqlText[at:e[k].Pos], "(").part(v).add(")")
				at = e[k+3].Pos + 1
				k += 3
			}
		}
		last := e[len(e)-1]
		b.add(sqlText[at : last.Pos+len(last.Text)])
		sets = append(sets, sqlPart{b.b.String(), b.args})
	}
	return sets, true
}

func containsFoldName(names []string, name string) bool {
	for _, n := range names {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// mysqlIdent is name quoted as MySQL quotes it.
func mysqlIdent(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// isReferenced reports whether a foreign key references table db.table.
func isReferenced(ctx context.Context, s *session, db, table string) bool {
	var n int
	err := s.conn.QueryRowContext(ctx, "SELECT count(*) FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY' AND "+
		inSchema("database_name", "schema_name", db)+" AND lower(referenced_table) = lower(?)", table).Scan(&n)
	return err == nil && n > 0
}

// upsertByRows runs client, a MySQL client's upsert of a referenced table, a row at a time
// (handled); any other statement is not handled.
func (s *session) upsertByRows(ctx context.Context, client *query.Request) (query.Rows, bool, error) {
	if !maybeRowUpsert(client) || s.status == 'E' {
		return nil, false, nil
	}
	if sqltok.FirstKeywordIs(client.SQL, sqltok.MySQL, "update") {
		return s.updateIgnoreByRows(ctx, client) // mysqlupdateignore.go
	}
	if isInsertIgnore(client.SQL) {
		return s.ignoreByRows(ctx, client) // mysqlignorerows.go
	}
	if sqltok.FirstKeywordIs(client.SQL, sqltok.MySQL, "replace") {
		return s.replaceByRows(ctx, client) // mysqlreplacerows.go
	}
	if !containsFold(client.SQL, "duplicate") {
		return s.insertSelectByRows(ctx, client) // mysqlinsertselect.go
	}
	u, ok := readRowUpsert(client.SQL, client.Args)
	if !ok || !isReferenced(ctx, s, u.db, u.table) && !nullableUnique(ctx, s.conn, u.db, u.table) {
		return nil, false, nil
	}
	if !u.fillColumns(ctx, s) {
		return nil, false, nil // the INSERT says what is wrong itself
	}
	for _, s := range u.sets {
		for k := 0; k+3 < len(s.expr); k++ {
			if e := s.expr; e[k].IsWord("values", "value") && e[k+1].Text == "(" && e[k+3].Text == ")" && !containsFoldName(u.columns, identText(e[k+2])) {
				return nil, false, nil // VALUES() of a column not given: its default, which the plain path knows
			}
		}
	}
	if _, _, ok := u.ids(lookupAI(ctx, s.conn, u.db, u.table)); !ok {
		return nil, false, nil // an id not known before it runs: the plain path's
	}
	return s.byRows(ctx, client, func() (engine.TagRows, error) { return s.upsertRows(ctx, client, &u) })
}

// byRows runs rows, the statement client run a row at a time, in its own transaction outside
// one (handled).
func (s *session) byRows(ctx context.Context, client *query.Request, rows func() (engine.TagRows, error)) (out query.Rows, handled bool, err error) {
	if s.status != 'T' {
		if _, err := s.sub(ctx, client, "START TRANSACTION"); err != nil {
			return nil, true, err
		}
		defer func() {
			end := "COMMIT"
			if err != nil {
				end = "ROLLBACK"
			}
			if _, cerr := s.sub(context.WithoutCancel(ctx), client, end); cerr != nil && err == nil {
				out, err = nil, cerr
			}
		}()
	}
	tag, err := rows()
	if err != nil {
		s.fail()
		return nil, true, err
	}
	return tag, true, nil
}

// fillColumns gives u the table's columns when the statement names none; false when a row
// has another number of values.
func (u *rowUpsert) fillColumns(ctx context.Context, s *session) bool {
	if u.columns != nil {
		return true
	}
	u.columns = tableColumns(ctx, s.conn, u.db, u.table)
	for _, r := range u.rows {
		if len(r) != len(u.columns) {
			return false
		}
	}
	return true
}

// maybeRowUpsert reports whether q may be such an upsert, an INSERT IGNORE run a row at a time
// (mysqlignorerows.go) or an INSERT ... SELECT that gives the AUTO_INCREMENT column
// (mysqlinsertselect.go), or an UPDATE IGNORE (mysqlupdateignore.go), from its text only.
func maybeRowUpsert(q *query.Request) bool {
	return isMySQL(q) && ((containsFold(q.SQL, "duplicate") || containsFold(q.SQL, "ignore") || containsFold(q.SQL, "select")) &&
		sqltok.FirstKeywordIs(q.SQL, sqltok.MySQL, "insert") ||
		containsFold(q.SQL, "ignore") && sqltok.FirstKeywordIs(q.SQL, sqltok.MySQL, "update") ||
		sqltok.FirstKeywordIs(q.SQL, sqltok.MySQL, "replace"))
}

// sub runs sqlText (a MySQL client's statement, its parameters' args) in the session as
// client's.
func (s *session) sub(ctx context.Context, client *query.Request, sqlText string, args ...any) (query.Rows, error) {
	q := *client
	q.SQL, q.Args = sqlText, args
	return s.Execute(ctx, &q)
}

// upsertRows runs u's rows in order and answers with the statement's MySQL tag.
func (s *session) upsertRows(ctx context.Context, client *query.Request, u *rowUpsert) (engine.TagRows, error) {
	keys := keyedColumns(ctx, s.conn, u.db, u.table)
	ai, hasAI := lookupAI(ctx, s.conn, u.db, u.table)
	selected := u.selected.text != ""
	ids, explicit, generate, err := s.readRowIDs(ctx, client, u, ai, hasAI, selected)
	if err != nil {
		return "", err
	}
	// The OK packet's id, when no generated id was inserted, is the AUTO_INCREMENT field as
	// the last row leaves it: its id inserted, the id of the row it found. MariaDB sends it
	// only when a row was inserted or changed, and never after a SELECT.
	var affected, lastID, firstGenerated int64
	copied := false
	for r, row := range u.rows {
		key, foundID, err := s.upsertTarget(ctx, client, u, row, keys, ai.name)
		if err != nil {
			return "", err
		}
		id, err := ids.take(ctx, generate[r], explicit[r])
		if err != nil {
			return "", err
		}
		if key == nil {
			if err := s.upsertInsert(ctx, client, u, row, hasAI, ai.name, generate[r], id); err != nil {
				return "", err
			}
			ids.done(true)
			affected++
			copied = true
			if generate[r] && firstGenerated == 0 {
				firstGenerated = id
			}
			lastID = id
			continue
		}
		ids.done(false) // a row that updates gives its value back (InnoDB's restore_auto_increment)
		changed, err := s.upsertUpdate(ctx, client, u, row, key)
		if err != nil {
			return "", err
		}
		switch {
		case changed:
			affected += 2
			copied = true
		case client.FoundRows:
			affected++
		}
		lastID = foundID
	}
	if err := ids.finish(ctx); err != nil {
		return "", err
	}
	n := strconv.FormatInt(affected, 10)
	if firstGenerated != 0 {
		return engine.TagRows("INSERT " + strconv.FormatInt(firstGenerated, 10) + " " + n), nil
	}
	if !copied || !hasAI || selected {
		lastID = 0
	}
	return engine.TagRows("INSERT explicit:" + strconv.FormatInt(lastID, 10) + " " + n), nil
}

// upsertTarget finds the row a key of row collides with: the key (nil for none) and the row's
// AUTO_INCREMENT value (0 without one).
func (s *session) upsertTarget(ctx context.Context, client *query.Request, u *rowUpsert, row []sqlPart, keys [][]string, aiName string) ([]string, int64, error) {
	conds, condKeys := u.keyConds(row, keys, aiName)
	if len(conds) == 0 {
		return nil, 0, nil
	}
	cond := func(t *stmtText, i int) { u.keyMatch(t, row, conds[i]) }
	var t stmtText
	t.add("SELECT CASE")
	for i := range conds {
		t.add(" WHEN ")
		cond(&t, i)
		t.add(" THEN ", strconv.Itoa(i))
	}
	idCol := "0"
	if aiName != "" {
		idCol = mysqlIdent(aiName)
	}
	t.add(" END AS k, ", idCol, " FROM ", u.tableText, " WHERE ")
	for i := range conds {
		if i > 0 {
			t.add(" OR ")
		}
		cond(&t, i)
	}
	rows, err := s.sub(ctx, client, t.add(" ORDER BY k LIMIT 1").b.String(), t.args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	b, err := rows.Next(ctx)
	if err == io.EOF || err == nil && b.NumRows() == 0 {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	k, err := strconv.Atoi(b.Column(0).ValueStr(0))
	if err != nil || k < 0 || k >= len(condKeys) {
		return nil, 0, errors.New("duckengine: an upsert's key lookup answered " + b.Column(0).ValueStr(0))
	}
	id, _ := strconv.ParseInt(b.Column(1).ValueStr(0), 10, 64)
	return condKeys[k], id, nil
}

// keyConds are the keys (of keys) row may find a row by, their columns (conds) and each key
// (condKeys): a key the row does not give, or gives NULL in, finds nothing.
func (u *rowUpsert) keyConds(row []sqlPart, keys [][]string, aiName string) (conds, condKeys [][]string) {
	for _, k := range keys {
		var parts []string
		for _, col := range k {
			v := u.valueOf(row, col).text
			if v == "" || strings.EqualFold(v, "null") || strings.EqualFold(v, "default") || strings.EqualFold(col, aiName) && v == "0" {
				parts = nil
				break
			}
			parts = append(parts, col)
		}
		if parts != nil {
			conds, condKeys = append(conds, parts), append(condKeys, k)
		}
	}
	return conds, condKeys
}

// keyMatch writes to t the condition that a row has row's values in columns.
func (u *rowUpsert) keyMatch(t *stmtText, row []sqlPart, columns []string) {
	t.add("(")
	for j, col := range columns {
		if j > 0 {
			t.add(" AND ")
		}
		t.add(mysqlIdent(col), " = (").part(u.valueOf(row, col)).add(")")
	}
	t.add(")")
}

// upsertInsert inserts row, its AUTO_INCREMENT value id when generate.
func (s *session) upsertInsert(ctx context.Context, client *query.Request, u *rowUpsert, row []sqlPart, hasAI bool, aiName string, generate bool, id int64) error {
	var cols []string
	var vals stmtText
	given := false
	for j, col := range u.columns {
		v := row[j]
		if hasAI && strings.EqualFold(col, aiName) {
			given = true
			if generate {
				v = sqlPart{text: strconv.FormatInt(id, 10)}
			}
		}
		if j > 0 {
			vals.add(", ")
		}
		cols = append(cols, mysqlIdent(col))
		vals.part(v)
	}
	if hasAI && !given {
		cols = append(cols, mysqlIdent(aiName))
		vals.add(", ", strconv.FormatInt(id, 10))
	}
	rows, err := s.sub(context.WithValue(ctx, givenIDs{}, true), client, "INSERT INTO "+u.tableText+" ("+strings.Join(cols, ", ")+") VALUES ("+vals.b.String()+")", vals.args...)
	if err != nil {
		return err
	}
	return rows.Close()
}

// upsertUpdate updates the row key finds with row's assignments; changed reports whether a
// value changed.
func (s *session) upsertUpdate(ctx context.Context, client *query.Request, u *rowUpsert, row []sqlPart, key []string) (changed bool, err error) {
	sets, ok := u.setsFor(client.SQL, row, key)
	if !ok {
		return false, errors.New("duckengine: an upsert's VALUES() names a column its row gives as DEFAULT")
	}
	if len(sets) == 0 {
		return false, nil
	}
	var t stmtText
	t.add("UPDATE ", u.tableText, " SET ")
	for i, set := range sets {
		if i > 0 {
			t.add(", ")
		}
		t.part(set)
	}
	t.add(" WHERE ")
	for i, col := range key {
		if i > 0 {
			t.add(" AND ")
		}
		t.add(mysqlIdent(col), " = (").part(u.valueOf(row, col)).add(")")
	}
	q := *client
	q.FoundRows = false // the count of rows changed
	rows, err := s.sub(ctx, &q, t.b.String(), t.args...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	tag, ok := rows.(interface{ Tag() string })
	return ok && affectedCount(tag.Tag()) > 0, nil
}

// affectedCount is the count at the end of a command tag.
func affectedCount(tag string) int64 {
	n, _ := strconv.ParseInt(tag[strings.LastIndexByte(tag, ' ')+1:], 10, 64)
	return n
}
