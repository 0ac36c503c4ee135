package duckengine

import (
	"context"
	"database/sql"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's SELECT that assigns user variables (mysqlvars.go keeps them), as MariaDB
// assigns them:
//   - SELECT a, b INTO @x, @y FROM t ... (or INTO at the end): the one row's values go into the
//     variables and the client gets OK, 1 row affected; no row leaves them as they were (MariaDB
//     also warns 1329); more than one row is MariaDB's 1172, nothing assigned.
//   - SELECT ..., @v := expr [AS name], ...: the column is expr's value, named as written (or
//     by its alias), and @v the last row's value once the rows are read; an item after it in the
//     same list that reads @v reads that row's new value (expr), as MariaDB evaluates the list
//     left to right. `@v := @v + n` numbers the rows (@v + n times the row's number, in ORDER
//     BY's order), the running count MySQL 5 clients write for what window functions do now.
//
// DuckDB has no assignment inside an expression, so the statement is written without them and
// the variables set after it (SET VARIABLE). An assignment anywhere else (WHERE, a subquery,
// UPDATE ... SET c = (@v := ...)) is left to DuckDB's error, as before.

// selectVars is a SELECT that assigns user variables.
type selectVars struct {
	text     string     // the SELECT as MySQL text, without INTO, each assignment as its expression
	into     []string   // INTO's variables, in order
	assigned []assigned // the select list's assignments
}

// assigned is one `@name := expr` item of a select list.
type assigned struct {
	name  string
	col   int // its column, counted from the first; -1 when a * comes before it
	after int // the items after it (its column counted from the last)
}

// mysqlSelectVars reads a MySQL client's SELECT that assigns user variables.
func mysqlSelectVars(q *query.Request) (ownRun, bool) {
	if !mayNameVariable(q.SQL) || !sqltok.FirstKeywordIs(q.SQL, sqltok.MySQL, "select") {
		return nil, false
	}
	sv, ok := readSelectVars(q.SQL)
	if !ok {
		return nil, false
	}
	if len(sv.into) > 0 {
		return sv.runInto, true
	}
	return sv.runAssigning, true
}

// selectListEnds are the words that end a select list (at its own depth).
var selectListEnds = []string{"from", "into", "where", "group", "having", "order", "limit", "window", "union",
	"except", "intersect", "for", "lock"}

// readSelectVars reads sqlText (a SELECT) for INTO @... and select-list assignments; ok is
// false when it has neither.
func readSelectVars(sqlText string) (sv selectVars, ok bool) {
	toks := sqltok.SignificantTokens(sqlText, sqltok.MySQL)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	start := 1
	for start < len(toks) && toks[start].Kind == sqltok.Word && sqltok.MySQLSelectModifiers[strings.ToLower(toks[start].Text)] {
		start++
	}
	end, order, orderEnd, depth := len(toks), -1, len(toks), 0
	var edits []sqltok.Edit
	for i := start; i < len(toks); i++ {
		switch toks[i].Text {
		case "(":
			depth++
		case ")":
			depth--
		}
		if depth != 0 || toks[i].Kind != sqltok.Word {
			continue
		}
		if end == len(toks) && toks[i].IsWord(selectListEnds...) {
			end = i
		}
		switch {
		case toks[i].IsWord("order") && order < 0:
			order = i
		case order >= 0 && orderEnd == len(toks) && toks[i].IsWord("limit", "for", "lock", "into"):
			orderEnd = i
		}
		if toks[i].IsWord("into") && len(sv.into) == 0 {
			names, last := intoVariables(toks, i+1)
			if last < 0 {
				return sv, false // INTO OUTFILE, DUMPFILE, a procedure's variable: not here
			}
			sv.into = names
			edits = append(edits, sqltok.Edit{From: toks[i].Pos, To: toks[last].Pos + len(toks[last].Text)})
		}
	}
	var orderBy string
	if order >= 0 {
		to := len(sqlText)
		if orderEnd < len(toks) {
			to = toks[orderEnd].Pos
		}
		orderBy = strings.TrimSpace(sqlText[toks[order].Pos:to])
	}
	edits = append(edits, assignmentEdits(sqlText, toks[start:end], orderBy, &sv)...)
	if len(sv.into) == 0 && len(sv.assigned) == 0 {
		return sv, false
	}
	slices.SortFunc(edits, func(a, b sqltok.Edit) int { return a.From - b.From })
	sv.text = sqltok.Splice(sqlText, edits)
	return sv, true
}

// intoVariables reads `@a [, @b ...]` from toks[i]: the names and the index of the last
// one's token (-1 when INTO is not followed by user variables).
func intoVariables(toks []sqltok.Token, i int) (names []string, last int) {
	for {
		if i+1 >= len(toks) || toks[i].Text != "@" {
			return nil, -1
		}
		name, ok := userVarName(toks[i+1])
		if !ok {
			return nil, -1
		}
		names, last = append(names, name), i+1
		if i+2 >= len(toks) || toks[i+2].Text != "," {
			return names, last
		}
		i += 3
	}
}

// assignmentEdits writes each `@v := expr [AS name]` item of the select list (list) as
// `(expr) AS "name"` and, in the items after it, @v as (expr); it notes the items in sv.
func assignmentEdits(sqlText string, list []sqltok.Token, orderBy string, sv *selectVars) []sqltok.Edit {
	items := sqltok.SplitAtCommas(list)
	var edits []sqltok.Edit
	substitute := map[string]string{} // a variable assigned earlier in the list: its expression
	star := false
	for n, item := range items {
		if len(item) == 0 {
			continue
		}
		itemEnd := item[len(item)-1].Pos + len(item[len(item)-1].Text)
		name, op, ok := assignmentAt(item)
		if !ok {
			star = star || item[len(item)-1].Text == "*"
			edits = append(edits, variableEdits(sqlText, item, substitute)...)
			continue
		}
		exprEnd, column := itemEnd, strings.TrimSpace(sqlText[item[0].Pos:itemEnd])
		if k := len(item); k >= 5 && item[k-2].IsWord("as") {
			exprEnd, column = item[k-2].Pos, aliasText(item[k-1])
		}
		exprText := sqlText[op.Pos+2 : exprEnd]
		expr := "(" + expressionWith(exprText, substitute) + ")"
		if step, ok := runningCount(exprText, name); ok {
			expr = "(" + userVarRef(name) + " + " + step + " * row_number() OVER (" + orderBy + "))"
		}
		edits = append(edits, sqltok.Edit{From: item[0].Pos, To: itemEnd, Text: expr + " AS " + quoteIdent(column)})
		col := n
		if star {
			col = -1
		}
		sv.assigned = append(sv.assigned, assigned{name: strings.ToLower(name), col: col, after: len(items) - 1 - n})
		substitute[strings.ToLower(name)] = expr
	}
	return edits
}

// assignmentAt reads an item `@name := ...`: the name and the := operator's token.
func assignmentAt(item []sqltok.Token) (name string, op sqltok.Token, ok bool) {
	if len(item) < 4 || item[0].Text != "@" || item[2].Kind != sqltok.Operator || !strings.HasPrefix(item[2].Text, ":=") {
		return "", op, false
	}
	name, ok = userVarName(item[1])
	return name, item[2], ok
}

// aliasText is the name an alias token spells.
func aliasText(t sqltok.Token) string {
	if t.Kind == sqltok.String {
		return sqltok.MySQLStringValue(t.Text)
	}
	return identText(t)
}

// variableEdits writes, in an item, each read of a variable assigned earlier in the list as
// its expression.
func variableEdits(sqlText string, item []sqltok.Token, substitute map[string]string) []sqltok.Edit {
	if len(substitute) == 0 {
		return nil
	}
	var edits []sqltok.Edit
	for i := 0; i+1 < len(item); i++ {
		t := item[i]
		if t.Kind != sqltok.Operator || !strings.HasSuffix(t.Text, "@") || strings.HasSuffix(t.Text, "@@") || item[i+1].Pos != t.Pos+len(t.Text) {
			continue
		}
		name, ok := userVarName(item[i+1])
		if expr, assigned := substitute[strings.ToLower(name)]; ok && assigned {
			edits = append(edits, sqltok.Edit{From: t.Pos + len(t.Text) - 1, To: item[i+1].Pos + len(item[i+1].Text), Text: expr})
		}
	}
	return edits
}

// expressionWith is the MySQL text expr with each read of a variable of substitute written as
// its expression.
func expressionWith(expr string, substitute map[string]string) string {
	edits := variableEdits(expr, sqltok.SignificantTokens(expr, sqltok.MySQL), substitute)
	for i := len(edits) - 1; i >= 0; i-- {
		expr = expr[:edits[i].From] + edits[i].Text + expr[edits[i].To:]
	}
	return expr
}

// runningCount reads expr as `@name + n` or `@name - n` (n a number): its step per row ("-n"
// for a minus).
func runningCount(expr, name string) (step string, ok bool) {
	toks := sqltok.SignificantTokens(expr, sqltok.MySQL)
	if len(toks) != 4 || toks[0].Text != "@" || toks[3].Kind != sqltok.Number || toks[2].Text != "+" && toks[2].Text != "-" {
		return "", false
	}
	if v, ok := userVarName(toks[1]); !ok || !strings.EqualFold(v, name) {
		return "", false
	}
	if toks[2].Text == "-" {
		return "-" + toks[3].Text, true
	}
	return toks[3].Text, true
}

// selectIntoTable holds an INTO's rows until they are assigned.
const selectIntoTable = "qf_select_into"

// runInto runs SELECT ... INTO @a, @b: the rows into a temporary table,
// then each variable from the one row.
func (sv selectVars) runInto(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
	duck := mysqlCompat(sv.text)
	if _, err := conn.ExecContext(ctx, "CREATE OR REPLACE TEMP TABLE "+selectIntoTable+" AS "+duck); err != nil {
		return nil, wrapErr(err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS temp."+selectIntoTable) //nolint:errcheck // gone with the connection at worst
	var cols, rows int
	if err := conn.QueryRowContext(ctx, "SELECT (SELECT count(*) FROM duckdb_columns() WHERE database_name = 'temp' AND table_name = '"+selectIntoTable+
		"'), (SELECT count(*) FROM temp."+selectIntoTable+")").Scan(&cols, &rows); err != nil {
		return nil, wrapErr(err)
	}
	if cols != len(sv.into) {
		return nil, &query.Error{Code: "21000", Message: "The used SELECT statements have a different number of columns (MySQL error " + strconv.Itoa(1222) + ")"}
	}
	if rows == 0 {
		return engine.TagRows("SELECT 0"), nil // MariaDB: warning 1329, the variables as they were
	}
	// The first row's values: MariaDB assigns them before it finds a second row (1172).
	first := func(col int) string {
		return "(SELECT #" + strconv.Itoa(col+1) + " FROM temp." + selectIntoTable + " LIMIT 1)"
	}
	var set []string
	for i, name := range sv.into {
		set = append(set, "SET VARIABLE "+quoteIdent("qf_uv_"+strings.ToLower(name))+" = "+first(i))
	}
	for _, a := range sv.assigned {
		if a.col >= 0 {
			set = append(set, "SET VARIABLE "+quoteIdent("qf_uv_"+a.name)+" = "+first(a.col))
		}
	}
	for _, s := range set {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return nil, wrapErr(err)
		}
	}
	if rows > 1 {
		return nil, &query.Error{Code: "42000", Message: "Result consisted of more than one row (MySQL error " + strconv.Itoa(1172) + ")"}
	}
	return engine.TagRows("SELECT 1"), nil
}

// runAssigning runs a SELECT whose list assigns variables: its rows are read into memory, then
// each variable set to its column's value in the last row, and the rows handed out.
func (sv selectVars) runAssigning(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
	duck := mysqlCompat(sv.text)
	req := &query.Request{Protocol: query.ProtocolMySQL, SQL: duck, ClientSQL: sv.text}
	rows, err := run(ctx, conn, req, &prepared{sqlText: duck, kind: duckdb.STATEMENT_TYPE_SELECT}, func() {})
	if err != nil {
		return nil, err
	}
	last := &lastBatch{Rows: rows}
	held := engine.NewHoldable(last)
	if err := held.Hold(ctx, 0); err != nil {
		last.release()
		return nil, err
	}
	defer last.release()
	if last.batch == nil {
		return held, nil // no rows: the variables keep their values
	}
	row, fields := int(last.batch.NumRows())-1, last.batch.Schema().Fields()
	for _, a := range sv.assigned {
		col := a.col
		if col < 0 {
			col = len(fields) - 1 - a.after
		}
		if col < 0 || col >= len(fields) {
			continue
		}
		if err := setFromColumn(ctx, conn, a.name, last.batch.Column(col), fields[col], row); err != nil {
			_ = held.Close()
			return nil, err
		}
	}
	return held, nil
}

// setFromColumn sets the user variable name to col's value at row, of the DuckDB type the
// field says (as text if DuckDB cannot read it back so).
func setFromColumn(ctx context.Context, conn *sql.Conn, name string, col arrow.Array, f arrow.Field, row int) error {
	target := quoteIdent("qf_uv_" + name)
	if col.IsNull(row) {
		_, err := conn.ExecContext(ctx, "SET VARIABLE "+target+" = NULL")
		return wrapErr(err)
	}
	text := col.ValueStr(row)
	if dbType, ok := f.Metadata.GetValue(engine.MetaDuckDBType); ok && dbType != "" {
		if _, err := conn.ExecContext(ctx, "SET VARIABLE "+target+" = CAST(? AS "+dbType+")", text); err == nil {
			return nil
		}
	}
	_, err := conn.ExecContext(ctx, "SET VARIABLE "+target+" = ?", text)
	return wrapErr(err)
}

// lastBatch passes rows through, keeping the last batch that had rows.
type lastBatch struct {
	query.Rows
	batch arrow.RecordBatch
}

func (l *lastBatch) Next(ctx context.Context) (arrow.RecordBatch, error) {
	b, err := l.Rows.Next(ctx)
	if err == nil && b.NumRows() > 0 {
		l.release()
		b.Retain()
		l.batch = b
	}
	if err != nil && err != io.EOF {
		l.release()
	}
	return b, err
}

func (l *lastBatch) release() {
	if l.batch != nil {
		l.batch.Release()
		l.batch = nil
	}
}
