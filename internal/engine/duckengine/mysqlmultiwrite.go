package duckengine

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's multi-table UPDATE and DELETE, which DuckDB's parser refuses (UPDATE a JOIN
// b ... SET, UPDATE a, b SET, DELETE a FROM a JOIN b, DELETE a, b FROM ...) or reads otherwise
// (DELETE FROM a USING a JOIN b: DuckDB joins a with the USING list's own a and deletes every
// row of a that any row matches):
//
//	UPDATE refs SET [t.]col = expr, ... [WHERE cond]
//	DELETE t [, u ...] FROM refs [WHERE cond]
//	DELETE FROM t [, u ...] USING refs [WHERE cond]
//
// run as MySQL runs them: the join is read once, before anything changes, into a temporary
// table of each target's rowid (and an UPDATE's new values), then each target table is updated
// or deleted by rowid, all in one transaction. A target row that the join matches more than once
// is changed once (with the values of one of its matches, as MySQL's). An UPDATE counts as
// MySQL does: matched, the target rows the join found; changed, those a new value differs in
// (bytes, as MariaDB compares them); the ON UPDATE CURRENT_TIMESTAMP columns it does not set
// take the time in the changed rows.
//
// A prepared statement's ? parameters are bound where they were written: each part of the
// statement that the join's SELECT takes (an assignment's value, the table references, the
// WHERE) keeps the span of the client's arguments that its parameters are.

// multiWrite is a multi-table UPDATE or DELETE as readMultiWrite reads it (MySQL text).
type multiWrite struct {
	del                 bool
	refs                []multiRef // the table references' base tables and derived tables
	from                string     // the table references, as written
	where               string     // the WHERE condition, "" for none
	fromArgs, whereArgs argSpan
	params              int        // its ? parameters
	targets             []int      // DELETE: the refs it deletes from
	sets                []multiSet // UPDATE: its assignments
	order               string     // the temporary table's rowid columns of the base tables, in FROM's order
}

// multiRef is one table reference of the FROM list.
type multiRef struct {
	db, table string // unquoted; table "" for a derived table
	name      string // how the statement names it (its alias, else the table's name), unquoted
	written   string // that name as written
}

// multiSet is one [t.]col = expr of a multi-table UPDATE.
type multiSet struct {
	qualifier string // t, unquoted ("" unqualified)
	column    string // unquoted
	expr      string
	args      argSpan // expr's parameters
}

// argSpan is a part of a statement's parameters: the client's arguments [first, first+n).
type argSpan struct{ first, n int }

// of is the span's arguments of args (none when the client sent too few: DuckDB's count error).
func (s argSpan) of(args []any) []any {
	if s.first+s.n > len(args) {
		return nil
	}
	return args[s.first : s.first+s.n]
}

// mysqlMultiWrite is q (a MySQL client's) as a multi-table UPDATE or DELETE.
func mysqlMultiWrite(q *query.Request) (ownRun, bool) {
	if !sqltok.FirstKeywordIs(q.SQL, sqltok.MySQL, "update", "delete") {
		return nil, false
	}
	w, ok := readMultiWrite(q.SQL)
	if !ok {
		return nil, false
	}
	return func(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
		rows, err := w.run(ctx, conn, inTx, q.FoundRows, q.Args)
		return rows, parentRowInUse(q, err)
	}, true
}

// readMultiWrite reads sqlText as one of the forms above; ok is false for any other statement
// (a single table's UPDATE or DELETE included).
func readMultiWrite(sqlText string) (w multiWrite, ok bool) {
	toks := sqltok.SignificantTokens(sqlText, sqltok.MySQL)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	paramsBefore := make([]int, len(toks)+1) // the parameters before each token
	for i, t := range toks {
		paramsBefore[i+1] = paramsBefore[i]
		if t.Kind == sqltok.Param {
			paramsBefore[i+1]++
		}
	}
	span := func(from, to int) argSpan {
		if from >= to {
			return argSpan{}
		}
		return argSpan{first: paramsBefore[from], n: paramsBefore[to] - paramsBefore[from]}
	}
	depth := make([]int, len(toks)) // each token's parenthesis depth
	d := 0
	for i, t := range toks {
		if t.Text == ")" {
			d--
		}
		depth[i] = d
		if t.Text == "(" {
			d++
		}
	}
	// find is the first token from i on at depth 0 that is one of words, else len(toks).
	find := func(i int, words ...string) int {
		for ; i < len(toks); i++ {
			if depth[i] == 0 && toks[i].IsWord(words...) {
				return i
			}
		}
		return len(toks)
	}
	text := func(from, to int) string {
		if from >= to {
			return ""
		}
		return sqlText[toks[from].Pos : toks[to-1].Pos+len(toks[to-1].Text)]
	}
	i := 1
	for i < len(toks) && toks[i].IsWord("low_priority", "quick") {
		i++
	}
	if i >= len(toks) || toks[i].IsWord("ignore") {
		return w, false // IGNORE's row-by-row leniency is not DuckDB's
	}
	var refsFrom, refsTo int
	var targets []sqltok.Token // a DELETE's targets' names
	if toks[0].IsWord("update") {
		set := find(i, "set")
		if set == len(toks) {
			return w, false
		}
		refsFrom, refsTo = i, set
		end := find(set+1, "where", "order", "limit")
		if end < len(toks) && !toks[end].IsWord("where") {
			return w, false
		}
		for from := set + 1; from < end; {
			to := from
			for to < end && !(depth[to] == 0 && toks[to].Text == ",") {
				to++
			}
			eq := from
			for eq < to && !(depth[eq] == 0 && toks[eq].Text == "=") {
				eq++
			}
			s, ok := readSetTarget(toks[from:eq])
			if !ok || eq+1 >= to {
				return w, false
			}
			s.expr, s.args = text(eq+1, to), span(eq+1, to)
			w.sets = append(w.sets, s)
			from = to + 1
		}
		if end < len(toks) {
			w.where, w.whereArgs = text(end+1, len(toks)), span(end+1, len(toks))
		}
	} else {
		w.del = true
		var names []sqltok.Token // the targets' names
		var listFrom, listTo int
		if toks[i].IsWord("from") {
			listFrom = i + 1
			listTo = find(listFrom, "using", "where")
			if listTo == len(toks) || !toks[listTo].IsWord("using") {
				return w, false
			}
		} else {
			listFrom = i
			listTo = find(listFrom, "from")
			if listTo == len(toks) {
				return w, false
			}
		}
		for j := listFrom; j < listTo; j++ {
			switch t := toks[j]; {
			case t.Text == "," || t.Text == "." || t.Text == "*":
			case isNameToken(t) && (j+1 == listTo || toks[j+1].Text == "," || toks[j+1].Text == "."):
				if j+2 < listTo && toks[j+1].Text == "." && isNameToken(toks[j+2]) {
					continue // db.t: the table's name follows
				}
				names = append(names, t)
			default:
				return w, false
			}
		}
		refsFrom = listTo + 1
		refsTo = find(refsFrom, "where", "order", "limit")
		if refsTo < len(toks) && !toks[refsTo].IsWord("where") {
			return w, false
		}
		if refsTo < len(toks) {
			w.where, w.whereArgs = text(refsTo+1, len(toks)), span(refsTo+1, len(toks))
		}
		targets = names
	}
	refs, several, ok := readTableRefs(toks[refsFrom:refsTo], depth[refsFrom:refsTo])
	if !ok || !several && !w.del {
		return w, false // one table: an UPDATE DuckDB runs (mysqlupdate.go counts it)
	}
	w.refs, w.from, w.fromArgs = refs, text(refsFrom, refsTo), span(refsFrom, refsTo)
	w.params = paramsBefore[len(toks)]
	for _, n := range targets {
		k := w.ref(identText(n))
		if k < 0 || w.refs[k].table == "" {
			return w, false // DuckDB's error names it
		}
		w.targets = append(w.targets, k)
	}
	return w, true
}

// readSetTarget reads an assignment's column: col, t.col or db.t.col.
func readSetTarget(toks []sqltok.Token) (multiSet, bool) {
	switch {
	case len(toks) == 1 && isNameToken(toks[0]):
		return multiSet{column: identText(toks[0])}, true
	case len(toks) == 3 && isNameToken(toks[0]) && toks[1].Text == "." && isNameToken(toks[2]):
		return multiSet{qualifier: identText(toks[0]), column: identText(toks[2])}, true
	case len(toks) == 5 && isNameToken(toks[2]) && toks[3].Text == "." && isNameToken(toks[4]):
		return multiSet{qualifier: identText(toks[2]), column: identText(toks[4])}, true
	}
	return multiSet{}, false
}

func isNameToken(t sqltok.Token) bool {
	return t.Kind == sqltok.Word || t.Kind == sqltok.QuotedIdent && t.Text[0] == '`' && !t.Unterminated
}

// joinWords end a table factor's alias: what may follow a factor in a FROM list.
var joinWords = []string{"on", "using", "join", "inner", "left", "right", "cross", "natural", "straight_join",
	"outer", "use", "force", "ignore", "where", "set", "partition", "order", "limit", "group", "having", "window"}

// readTableRefs reads a FROM list's factors at its top level (depth: each token's parenthesis
// depth): base tables with their aliases and derived tables; several is true when it joins
// more than one. ok is false for what it does not read (a parenthesized join).
func readTableRefs(toks []sqltok.Token, depth []int) (refs []multiRef, several, ok bool) {
	expect := true // a factor comes next
	for i := 0; i < len(toks); i++ {
		if depth[i] != 0 {
			continue
		}
		t := toks[i]
		if !expect {
			switch {
			case t.Text == ",", t.IsWord("join", "straight_join"):
				expect, several = true, true
			}
			continue
		}
		var r multiRef
		switch {
		case t.Text == "(":
			if i+1 >= len(toks) || !toks[i+1].IsWord("select", "with") {
				return nil, false, false
			}
			for i+1 < len(toks) && depth[i+1] != 0 {
				i++
			}
			i++ // the ")"
		case isNameToken(t):
			r.table, r.name, r.written = identText(t), identText(t), t.Text
			if i+2 < len(toks) && toks[i+1].Text == "." && isNameToken(toks[i+2]) {
				r.db, r.table, r.name, r.written = r.table, identText(toks[i+2]), identText(toks[i+2]), toks[i+2].Text
				i += 2
			}
		default:
			return nil, false, false
		}
		if i+1 < len(toks) && toks[i+1].IsWord("as") {
			i++
		}
		if i+1 < len(toks) && (toks[i+1].Kind == sqltok.QuotedIdent && toks[i+1].Text[0] == '`' || toks[i+1].Kind == sqltok.Word && !toks[i+1].IsWord(joinWords...)) {
			i++
			r.name, r.written = identText(toks[i]), toks[i].Text
		}
		if r.name == "" {
			return nil, false, false // a derived table has an alias
		}
		refs = append(refs, r)
		expect = false
	}
	return refs, several, !expect && len(refs) > 0
}

// ref is the index of the reference the statement names name (its alias, or a table without
// one), -1 for none.
func (w *multiWrite) ref(name string) int {
	for k, r := range w.refs {
		if strings.EqualFold(r.name, name) {
			return k
		}
	}
	return -1
}

// multiWriteTemp holds the join's rowids and values while the targets change.
const multiWriteTemp = "qf_multi_write"

// run runs w on conn (in the client's transaction when inTx).
func (w *multiWrite) run(ctx context.Context, conn *sql.Conn, inTx, foundRows bool, clientArgs []any) (rows query.Rows, err error) {
	if !inTx {
		if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
			return nil, wrapErr(err)
		}
		defer func() {
			if err != nil {
				_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
				return
			}
			if _, cerr := conn.ExecContext(ctx, "COMMIT"); cerr != nil {
				rows, err = nil, wrapErr(cerr)
			}
		}()
	}
	types := map[int]map[string]string{} // a target's columns' types
	var onUpdate map[int][]string
	bySet := map[int][]int{} // a target's assignments
	targets := w.targets
	if !w.del {
		onUpdate = map[int][]string{}
		for j, s := range w.sets {
			k, err := w.setTarget(ctx, conn, s, types, onUpdate)
			if err != nil {
				return nil, err
			}
			if _, ok := bySet[k]; !ok {
				targets = append(targets, k)
			}
			bySet[k] = append(bySet[k], j)
		}
	}
	if w.del {
		targets = referencingFirst(ctx, conn, w.refs, targets)
	}
	list := make([]string, 0, len(targets)+len(w.sets))
	var args []any // the client's arguments in the order the SELECT below takes them
	for n, k := range targets {
		list = append(list, w.refs[k].written+".rowid AS qf_r"+strconv.Itoa(n))
		for _, j := range bySet[k] {
			list = append(list, "("+w.sets[j].expr+") AS qf_v"+strconv.Itoa(j))
			args = append(args, w.sets[j].args.of(clientArgs)...)
		}
	}
	args = append(args, w.fromArgs.of(clientArgs)...)
	args = append(args, w.whereArgs.of(clientArgs)...)
	// the first match in the order of the tables' rows, as MariaDB's nested loops meet them
	// in the common case of a join read in the order written
	var order []string
	for k, r := range w.refs {
		if r.table != "" {
			list = append(list, r.written+".rowid AS qf_o"+strconv.Itoa(k))
			order = append(order, "qf_o"+strconv.Itoa(k))
		}
	}
	w.order = strings.Join(order, ", ")
	sel := "SELECT " + strings.Join(list, ", ") + " FROM " + w.from
	if w.where != "" {
		sel += " WHERE " + w.where
	}
	duck, err := compatRequest(&query.Request{SQL: sel, Protocol: query.ProtocolMySQL}, "")
	if err != nil {
		return nil, err
	}
	if len(clientArgs) != w.params {
		return nil, &query.Error{Code: sqlstate.SyntaxError, Message: fmt.Sprintf(
			"wrong number of parameters: the statement has %d, %d given", w.params, len(clientArgs))}
	}
	if err := readJoin(ctx, conn, "CREATE OR REPLACE TEMP TABLE "+multiWriteTemp+" AS "+pinnedNow(ctx, duck.SQL), args); err != nil {
		return nil, err
	}
	var matched, changed int64
	for n, k := range targets {
		r, rn := w.refs[k], "qf_r"+strconv.Itoa(n)
		var stmt string
		if w.del {
			stmt = "DELETE FROM " + tableRef(r.db, r.table) + " WHERE rowid IN (SELECT " + rn + " FROM " + multiWriteTemp + ")"
		} else {
			var m int64
			if err := conn.QueryRowContext(ctx, "SELECT count(DISTINCT "+rn+") FROM "+multiWriteTemp).Scan(&m); err != nil {
				return nil, wrapErr(err)
			}
			matched += m
			stmt = pinnedNow(ctx, w.updateOf(k, n, types[k], onUpdate[k], bySet[k]))
		}
		var c int64
		exec := func() (query.Rows, error) {
			res, err := conn.ExecContext(ctx, stmt)
			if err != nil {
				return nil, withoutStatement(wrapErr(err))
			}
			c, _ = res.RowsAffected()
			return engine.TagRows("OK"), nil
		}
		if w.setAside(ctx, conn, k, bySet[k], targets[:n]) {
			_, err = withReferencingRebuilt(ctx, conn, true, "", r.table, nil, nil, noActions, exec)
			if err == errOrphans {
				err = errParentRowInUse
			}
		} else {
			_, err = exec()
		}
		if err != nil {
			return nil, err
		}
		changed += c
	}
	if _, err := conn.ExecContext(ctx, "DROP TABLE temp.main."+multiWriteTemp); err != nil {
		return nil, wrapErr(err)
	}
	if w.del {
		return engine.TagRows("DELETE " + strconv.FormatInt(changed, 10)), nil
	}
	u := updateCount{foundRows: foundRows}
	return u.tag(matched, changed), nil
}

// readJoin runs create, the join's rows into the temporary table, with args (the client's
// arguments, in create's order), typed as DuckDB infers its parameters.
func readJoin(ctx context.Context, conn *sql.Conn, create string, args []any) error {
	if len(args) > 0 {
		p, err := prepare(conn, create)
		if err != nil {
			return withoutStatement(wrapErr(err))
		}
		if args, err = coerceArgs(p.params, args, false); err != nil {
			return err
		}
	}
	if _, err := conn.ExecContext(ctx, create, args...); err != nil {
		return withoutStatement(wrapErr(err))
	}
	return nil
}

// setTarget is the reference an assignment s sets a column of, its table's columns read into
// types (and its ON UPDATE CURRENT_TIMESTAMP columns into onUpdate): the one s names, or the
// one table that has the column; MySQL's errors otherwise.
func (w *multiWrite) setTarget(ctx context.Context, conn *sql.Conn, s multiSet, types map[int]map[string]string, onUpdate map[int][]string) (int, error) {
	columns := func(k int) map[string]string {
		if _, ok := types[k]; !ok && w.refs[k].table != "" {
			types[k], onUpdate[k] = columnTypes(ctx, conn, w.refs[k].db, w.refs[k].table)
		}
		return types[k]
	}
	found := -1
	for k, r := range w.refs {
		if s.qualifier != "" && !strings.EqualFold(r.name, s.qualifier) {
			continue
		}
		if s.qualifier != "" && r.table == "" {
			return 0, &query.Error{Code: "HY000", Message: "The target table " + r.name + " of the UPDATE is not updatable (MySQL error 1288)"}
		}
		if _, ok := columns(k)[strings.ToLower(s.column)]; !ok {
			continue
		}
		if found >= 0 {
			return 0, &query.Error{Code: "23000", Message: "Column '" + s.column + "' in SET is ambiguous (MySQL error 1052)"}
		}
		found = k
	}
	if found < 0 {
		name := s.column
		if s.qualifier != "" {
			name = s.qualifier + "." + s.column
		}
		return 0, &query.Error{Code: "42S22", Message: "Unknown column '" + name + "' in 'SET' (MySQL error 1054)"}
	}
	return found, nil
}

// updateOf is the UPDATE of target k (the n-th, its assignments sets) from the temporary table:
// the rows a new value changes, each once.
func (w *multiWrite) updateOf(k, n int, types map[string]string, onUpdate []string, sets []int) string {
	r, rn := w.refs[k], "qf_r"+strconv.Itoa(n)
	cols := append([]string{rn}, strings.Split(w.order, ", ")...)
	var assigns, conds []string
	set := map[string]bool{}
	for _, j := range sets {
		s, v := w.sets[j], "qf_q.qf_v"+strconv.Itoa(j)
		col, typ := quoteIdent(s.column), types[strings.ToLower(s.column)]
		set[strings.ToLower(s.column)] = true
		cols = append(cols, "qf_v"+strconv.Itoa(j))
		assigns = append(assigns, col+" = "+v)
		if typ == "VARCHAR" {
			conds = append(conds, "qf_t."+col+" COLLATE C IS DISTINCT FROM CAST("+v+" AS VARCHAR) COLLATE C")
		} else {
			conds = append(conds, "qf_t."+col+" IS DISTINCT FROM CAST("+v+" AS "+typ+")")
		}
	}
	for _, col := range onUpdate {
		if !set[strings.ToLower(col)] {
			assigns = append(assigns, quoteIdent(col)+" = "+currentTimeAs(types[strings.ToLower(col)]))
		}
	}
	return "UPDATE " + tableRef(r.db, r.table) + " AS qf_t SET " + strings.Join(assigns, ", ") +
		" FROM (SELECT DISTINCT ON (" + rn + ") " + strings.Join(cols, ", ") + " FROM " + multiWriteTemp + " WHERE " + rn + " IS NOT NULL ORDER BY " + rn + ", " + w.order + ") qf_q" +
		" WHERE qf_t.rowid = qf_q." + rn + " AND (" + strings.Join(conds, " OR ") + ")"
}

// setAside reports whether target k's step runs with the tables referencing its table set
// aside (withReferencingRebuilt): DuckDB refuses, for a row another table references, a change
// of an indexed column (an UPDATE's sets), and in one transaction a DELETE after the
// referencing rows were deleted (by the targets before it, done). Only for the current
// database's tables.
func (w *multiWrite) setAside(ctx context.Context, conn *sql.Conn, k int, sets []int, done []int) bool {
	r := w.refs[k]
	if r.db != "" || !referencedTable(ctx, conn, "", r.table) {
		return false
	}
	if w.del {
		for _, d := range done {
			if referencesTable(ctx, conn, w.refs[d].table, r.table) {
				return true
			}
		}
		return false
	}
	indexed := indexedColumns(ctx, conn, r.table)
	for _, j := range sets {
		if indexed[strings.ToLower(w.sets[j].column)] {
			return true
		}
	}
	return false
}

// referencesTable reports whether a foreign key of child (the current schema's) references
// parent.
func referencesTable(ctx context.Context, conn *sql.Conn, child, parent string) bool {
	var n int
	err := conn.QueryRowContext(ctx, `SELECT count(*) FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY'
		AND database_name = current_database() AND schema_name = current_schema() AND lower(table_name) = lower(?)
		AND lower(referenced_table) = lower(?)`, child, parent).Scan(&n)
	return err == nil && n > 0
}

// referencingFirst orders a DELETE's targets so that a table's rows go before those of the
// tables it references, as MariaDB's checks let a statement delete a child and its parent;
// otherwise in the order written.
func referencingFirst(ctx context.Context, conn *sql.Conn, refs []multiRef, targets []int) []int {
	if len(targets) < 2 {
		return targets
	}
	left := slices.Clone(targets)
	var out []int
	for len(left) > 0 {
		pick := 0 // the first one no other left target references (a cycle: the first)
		for i, k := range left {
			referenced := false
			for j, o := range left {
				if j != i && refs[k].db == "" && refs[o].db == "" && referencesTable(ctx, conn, refs[o].table, refs[k].table) {
					referenced = true
					break
				}
			}
			if !referenced {
				pick = i
				break
			}
		}
		out = append(out, left[pick])
		left = slices.Delete(left, pick, pick+1)
	}
	return out
}
