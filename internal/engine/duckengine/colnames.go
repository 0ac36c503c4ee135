package duckengine

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/queryflux/queryflux/internal/boundedcache"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Result column names as the client's own database would give them. DuckDB names a column
// that is neither a column nor an alias by its expression's text (`count_star()`, `(40 + 2)`,
// `lower("name")`); clients look columns up by name, and each expects its database's rule:
// PostgreSQL's (FigureColname: `count`, `?column?`, `bool`), MySQL's (the item as written:
// `count(*)`, `40+2`) and Trino's (`_col0`). Flight SQL clients get DuckDB's own names.
//
// The rules read DuckDB's parse of the statement (json_serialize_sql: the same grammar as
// PostgreSQL's, so `true` is a cast of 't' to BOOLEAN as in PostgreSQL), once per statement
// text and protocol. A statement the rules cannot map item for item (a `*`, a parse error)
// keeps DuckDB's names, and so do the columns of a `*`.

// namesCacheMax bounds the statements whose names are kept (the whole cache is dropped when
// full: a workload of unrepeated statements pays one parse per statement either way), and
// namesCachedSQLMax the length of a statement kept, so the cache stays small.
const (
	namesCacheMax     = 512
	namesCachedSQLMax = 4096
)

type namesKey struct{ protocol, sql string }

// namesCache holds each statement's names; a nil value keeps DuckDB's names.
var namesCache = boundedcache.New[namesKey, []string](namesCacheMax)

// clientNames returns the names q's result columns should have for q's protocol, or nil to keep
// DuckDB's. It may parse q.SQL on conn, so call it before running anything else there.
func clientNames(ctx context.Context, conn *sql.Conn, q *query.Request) []string {
	if q.Protocol != query.ProtocolPostgres && q.Protocol != query.ProtocolMySQL && q.Protocol != query.ProtocolTrino {
		return nil
	}
	written := cmp.Or(q.ClientSQL, q.SQL) // the rewritten SQL follows from it
	key := namesKey{q.Protocol, written}
	if names, ok := namesCache.Get(key); ok {
		return names
	}
	if names, ok := plainNames(q.Protocol, q.SQL, reservedWords(ctx, conn)); ok {
		return names // not cached: reading them again costs less than the parse they spare
	}
	var parsed string
	if conn.QueryRowContext(ctx, "SELECT CAST(json_serialize_sql(CAST(? AS VARCHAR)) AS VARCHAR)", q.SQL).Scan(&parsed) != nil {
		return nil // not cached: the context may have ended
	}
	text := q.SQL // what was parsed: the nodes' locations are in it
	if q.Protocol == query.ProtocolMySQL {
		text = written
	}
	names := namesFor(q.Protocol, text, parsed)
	if len(q.SQL) <= namesCachedSQLMax {
		namesCache.Put(key, names)
	}
	return names
}

// plainNames is namesFor's answer read off the statement's text, where the text alone tells it:
// a SELECT (after any WITH) whose every item is a column (`x`, `t.x`, `"X y"`), has an alias
// (`... AS y`) or is a `*` (`*`, `t.*`). Those items have one name under every protocol's rule,
// the column's or the alias, so the statement needs no parse (a second DuckDB call of some 60
// allocations per unrepeated statement). ok is false for any other statement, and where reserved
// (DuckDB's keywords that may stand alone as an expression, as true and current_date do) is nil.
// TestPlainNamesAgreeWithTheParse holds it to namesFor.
func plainNames(protocol, sqlText string, reserved map[string]bool) (names []string, ok bool) {
	if reserved == nil {
		return nil, false
	}
	sc := sqltok.NewScanner(sqlText, sqltok.Generic)
	t, more := sc.NextSignificant()
	if more && isWord(t, "with") {
		for depth := 0; more && (depth > 0 || !isWord(t, "select")); t, more = sc.NextSignificant() {
			depth += sqltok.ParenStep(t)
		}
	}
	if !more || !isWord(t, "select") {
		return nil, false
	}
	var buf [16]sqltok.Token
	item := buf[:0] // the tokens of the item being read
	depth, stars, first := 0, 0, true
	for {
		t, more = sc.NextSignificant()
		if first && more && (isWord(t, "distinct") || isWord(t, "all")) {
			first = false
			continue
		}
		first = false
		if more && (depth > 0 || !endsItem(t)) {
			depth += sqltok.ParenStep(t)
			item = append(item, t)
			continue
		}
		name, ok := plainItemName(item, reserved)
		if !ok || protocol == query.ProtocolTrino && len(item) == 1 && item[0].Kind == sqltok.Word && trinoExpressionWords[strings.ToLower(name)] {
			return nil, false
		}
		if name == starItem {
			stars++
		}
		names = append(names, name)
		if !more || t.Text != "," {
			break
		}
		item = item[:0]
	}
	if stars > 1 {
		return nil, true // which columns each * expanded to is unknown: DuckDB's names
	}
	if stars == 1 && protocol == query.ProtocolTrino && containsFold(sqlText, "values") {
		return nil, false // a * of a VALUES list's columns, which Trino names _colN: the parse tells
	}
	if protocol == query.ProtocolMySQL && len(selectItemTexts(sqlText)) != len(names) {
		return nil, true // as namesFor: items it cannot match with their texts keep DuckDB's names
	}
	return names, true
}

// endsItem reports whether t, outside parentheses, ends a select item.
func endsItem(t sqltok.Token) bool {
	switch t.Kind {
	case sqltok.Punct:
		return t.Text == "," || t.Text == ";" || t.Text == ")"
	case sqltok.Word:
		for _, w := range plainListEnds {
			if strings.EqualFold(t.Text, w) {
				return true
			}
		}
	}
	return false
}

// plainListEnds are the words that end a select list outside parentheses (a column so named
// is quoted, or its statement is parsed).
var plainListEnds = []string{"from", "where", "group", "having", "order", "limit", "offset", "union", "except",
	"intersect", "into", "window", "qualify", "fetch", "using"}

// plainItemName is the name of a select item that is a column, a * or has an alias (starItem for
// a *); ok is false for any other item.
func plainItemName(item []sqltok.Token, reserved map[string]bool) (name string, ok bool) {
	n := len(item)
	if n >= 3 && isWord(item[n-2], "as") {
		return identName(item[n-1], reserved)
	}
	if n%2 == 0 { // a column or star is names and dots in turn: x, t.x, t.*, *
		return "", false
	}
	for i := 1; i < n; i += 2 {
		if item[i].Kind != sqltok.Punct || item[i].Text != "." {
			return "", false
		}
	}
	for i := 0; i < n-1; i += 2 {
		if _, ok := identName(item[i], reserved); !ok {
			return "", false
		}
	}
	if last := item[n-1]; last.Kind == sqltok.Operator && last.Text == "*" {
		return starItem, true
	}
	return identName(item[n-1], reserved)
}

// identName is the identifier t names: an unquoted word as written, not one of reserved, or a
// double-quoted name (but "*", which would read as a star among the names).
func identName(t sqltok.Token, reserved map[string]bool) (string, bool) {
	switch {
	case t.Kind == sqltok.Word:
		return t.Text, !reserved[strings.ToLower(t.Text)]
	case t.Kind == sqltok.QuotedIdent && t.Text[0] == '"' && !t.Unterminated && len(t.Text) > 2:
		name := strings.ReplaceAll(t.Text[1:len(t.Text)-1], `""`, `"`)
		return name, name != starItem
	}
	return "", false
}

func isWord(t sqltok.Token, w string) bool {
	return t.Kind == sqltok.Word && strings.EqualFold(t.Text, w)
}

// reserved holds DuckDB's keywords other than its unreserved ones (duckdb_keywords()), lower
// case: a select item that is one of them alone may be an expression (true, null,
// current_date), not a column. Read once, from the first connection that names columns.
var reserved struct {
	sync.Mutex
	words map[string]bool
}

// reservedWords returns reserved's words, reading them on conn the first time; nil when they
// could not be read (the context may have ended: the next call tries again).
func reservedWords(ctx context.Context, conn *sql.Conn) map[string]bool {
	reserved.Lock()
	defer reserved.Unlock()
	if reserved.words != nil {
		return reserved.words
	}
	rows, err := conn.QueryContext(ctx, "SELECT keyword_name FROM duckdb_keywords() WHERE keyword_category <> 'unreserved'")
	if err != nil {
		return nil
	}
	defer rows.Close()
	words := map[string]bool{}
	for rows.Next() {
		var w string
		if rows.Scan(&w) != nil {
			return nil
		}
		words[strings.ToLower(w)] = true
	}
	if rows.Err() != nil || len(words) == 0 {
		return nil
	}
	reserved.words = words
	return words
}

// starItem stands, among clientNames' names, for the columns a * expanded to, which keep
// DuckDB's names.
const starItem = "*"

// Trino names a column that has no name by its position among the result's columns: _col0,
// _col1, ... (LogicalPlanner's output names). Among Trino's names, unnamed stands for such an
// item, and anonymousStar for a * of a VALUES list's columns (VALUES 1, 2; SELECT * FROM
// (VALUES ...) without column aliases), which DuckDB names col0, col1, ...; perColumn numbers
// them once the * is spread.
const (
	unnamed       = "\x00_col"
	anonymousStar = "*_col"
)

// trinoExpressionWords are Trino's reserved words that are an expression alone (CURRENT_DATE):
// an item so written, unquoted, is no column, and Trino names it _colN (DuckDB's parse reads a
// column reference, as DuckDB's binder then finds the function).
var trinoExpressionWords = map[string]bool{"current_catalog": true, "current_date": true, "current_path": true,
	"current_schema": true, "current_time": true, "current_timestamp": true, "current_user": true,
	"localtime": true, "localtimestamp": true}

// perColumn spreads names (one per select item) over n columns: the one * item, if any, over
// as many columns as the others leave; nil when they do not fit. "" keeps DuckDB's name; an
// unnamed column, and each of an anonymousStar's, is named _colN by its position.
func perColumn(names []string, n int) []string {
	star := slices.Index(names, starItem)
	spread := ""
	if star < 0 {
		if star = slices.Index(names, anonymousStar); star >= 0 {
			spread = unnamed
		}
	}
	out := names
	switch {
	case star < 0 && len(names) != n, star >= 0 && len(names)-1 > n:
		return nil
	case star >= 0:
		out = make([]string, 0, n)
		out = append(out, names[:star]...)
		for range n - (len(names) - 1) {
			out = append(out, spread)
		}
		out = append(out, names[star+1:]...)
	}
	for i, name := range out {
		if name == unnamed {
			if &out[0] == &names[0] { // names may be cached: number a copy
				out = slices.Clone(out)
			}
			out[i] = "_col" + strconv.Itoa(i)
		}
	}
	return out
}

// rename gives cols the names from clientNames.
func rename(cols []column, names []string) {
	names = perColumn(names, len(cols))
	for i := range names {
		if names[i] != "" {
			cols[i].name = names[i]
		}
	}
}

// astNode is the part of json_serialize_sql's expression nodes the rules read.
type astNode struct {
	Class        string     `json:"class"`
	Type         string     `json:"type"`
	Alias        string     `json:"alias"`
	FunctionName string     `json:"function_name"`
	IsOperator   bool       `json:"is_operator"`
	ColumnNames  []string   `json:"column_names"`
	Children     []*astNode `json:"children"`
	Child        *astNode   `json:"child"`
	ElseExpr     *astNode   `json:"else_expr"`
	CastType     *struct {
		ID string `json:"id"`
	} `json:"cast_type"`
	// Location is the node's byte offset in the statement; some nodes DuckDB makes up (the
	// cast that stands for TRUE and FALSE, an INTERVAL literal's) have none (2^64-1).
	Location     float64 `json:"query_location"`
	SubqueryType string  `json:"subquery_type"`
	RelationName string  `json:"relation_name"` // a STAR's: t of t.*
	Subquery     *struct {
		Node *queryNode `json:"node"`
	} `json:"subquery"`
}

// queryNode is a SELECT (SELECT_NODE) or a set operation of two (SET_OPERATION_NODE).
type queryNode struct {
	Type       string     `json:"type"`
	SelectList []*astNode `json:"select_list"`
	Left       *queryNode `json:"left"`
	From       *fromItem  `json:"from_table"`
}

// fromItem is the part of a FROM item the rules read: a VALUES list (EXPRESSION_LIST) or a
// subquery (SUBQUERY), and the column aliases given it.
type fromItem struct {
	Type            string   `json:"type"`
	ColumnNameAlias []string `json:"column_name_alias"`
	Subquery        *struct {
		Node *queryNode `json:"node"`
	} `json:"subquery"`
}

// selectsFromValues reports whether n, a SELECT, reads only a VALUES list's columns, unnamed:
// n is VALUES ... (SELECT * FROM the list, to DuckDB's parse), or selects from a subquery
// without column aliases whose columns are those.
func (n *queryNode) selectsFromValues() bool {
	if n == nil || n.Type != "SELECT_NODE" || n.From == nil {
		return false
	}
	switch from := n.From; from.Type {
	case "EXPRESSION_LIST":
		return true
	case "SUBQUERY":
		inner := from.Subquery
		return len(from.ColumnNameAlias) == 0 && inner != nil && inner.Node.selectsFromValues() &&
			len(inner.Node.SelectList) == 1 && inner.Node.SelectList[0].Class == "STAR"
	}
	return false
}

// selectList is the items naming a query's columns: a set operation's come from its left side.
func (n *queryNode) selectList() []*astNode {
	for n != nil && n.Type == "SET_OPERATION_NODE" {
		n = n.Left
	}
	if n == nil || n.Type != "SELECT_NODE" {
		return nil
	}
	return n.SelectList
}

// namesFor applies protocol's rule to the items of parsed (json_serialize_sql of the SQL that
// runs): MySQL's items are named by their text in written, the client's SQL (for the others
// written is the SQL parsed, where Trino's rule reads whether a word is quoted); nil when it
// cannot name every column.
func namesFor(protocol, written, parsed string) []string {
	var doc struct {
		Error      bool `json:"error"`
		Statements []struct {
			Node *queryNode `json:"node"`
		} `json:"statements"`
	}
	if json.Unmarshal([]byte(parsed), &doc) != nil || doc.Error || len(doc.Statements) != 1 {
		return nil
	}
	items := doc.Statements[0].Node.selectList()
	if len(items) == 0 {
		return nil
	}
	stars := 0
	for _, it := range items {
		if it.Class == "STAR" {
			stars++
		}
	}
	if stars > 1 {
		return nil // which columns each one expanded to is unknown
	}
	names := make([]string, len(items))
	defer func() { // a * keeps DuckDB's names, the table's columns' own
		for i, it := range items {
			if it.Class == "STAR" && names[i] != anonymousStar {
				names[i] = starItem
			}
		}
	}()
	switch protocol {
	case query.ProtocolPostgres:
		for i, it := range items {
			names[i] = pgColumnName(it)
		}
	case query.ProtocolTrino:
		anonymous := doc.Statements[0].Node.selectsFromValues()
		for i, it := range items {
			switch {
			case it.Class == "STAR":
				if anonymous && it.RelationName == "" {
					names[i] = anonymousStar
				}
			case plainName(it) == "" || trinoExpressionWord(it, written):
				names[i] = unnamed
			default:
				names[i] = plainName(it)
			}
		}
	case query.ProtocolMySQL:
		texts := selectItemTexts(written)
		if len(texts) != len(items) {
			return nil
		}
		for i, it := range items {
			if names[i] = plainName(it); names[i] == "" {
				names[i] = sqltok.MySQLItemName(texts[i])
			}
		}
	}
	return names
}

// trinoExpressionWord reports whether n, an item of sqlText, is one of trinoExpressionWords
// unquoted: an expression to Trino, where DuckDB's parse reads a column.
func trinoExpressionWord(n *astNode, sqlText string) bool {
	if n.Alias != "" || n.Class != "COLUMN_REF" || len(n.ColumnNames) != 1 || !trinoExpressionWords[strings.ToLower(n.ColumnNames[0])] {
		return false
	}
	at := int(n.Location)
	return at >= 0 && at < len(sqlText) && sqlText[at] != '"'
}

// plainName is an item's alias, or the column a column reference names; "" for others.
func plainName(n *astNode) string {
	if n.Alias != "" {
		return n.Alias
	}
	if n.Class == "COLUMN_REF" && len(n.ColumnNames) > 0 {
		return n.ColumnNames[len(n.ColumnNames)-1]
	}
	return ""
}

// pgColumnName is PostgreSQL's name for an output column (parser/parse_target.c,
// FigureColname): "?column?" when the expression suggests none.
func pgColumnName(n *astNode) string {
	if n.Alias != "" {
		return n.Alias
	}
	if name, strength := pgFigure(n); strength > 0 {
		return name
	}
	return "?column?"
}

// pgFigure is FigureColnameInternal: a name and its strength (0 none, 1 a fallback such as a
// cast's type name or "case", 2 a name the expression gives).
func pgFigure(n *astNode) (string, int) {
	if n == nil {
		return "", 0
	}
	switch n.Class {
	case "COLUMN_REF":
		return plainName(n), 2
	case "FUNCTION", "WINDOW":
		if n.IsOperator || n.FunctionName == "regexp_full_match" { // ~, as DuckDB parses it
			return "", 0
		}
		return pgFunctionName(n.FunctionName), 2
	case "CAST":
		if n.Location >= 1<<63 && n.CastType != nil && n.CastType.ID == "BOOLEAN" {
			return "", 0 // TRUE or FALSE: a constant to PostgreSQL too
		}
		if name, strength := pgFigure(n.Child); strength > 1 {
			return name, strength
		}
		if n.CastType != nil {
			if name, ok := pgTypeNames[n.CastType.ID]; ok {
				return name, 1
			}
		}
		return "", 0
	case "CASE":
		if name, strength := pgFigure(n.ElseExpr); strength > 1 {
			return name, strength
		}
		return "case", 1
	case "COLLATE":
		return pgFigure(n.Child)
	case "OPERATOR":
		switch n.Type {
		case "OPERATOR_COALESCE":
			return "coalesce", 2
		case "ARRAY_CONSTRUCTOR":
			return "array", 2
		case "ARRAY_EXTRACT", "ARRAY_SLICE": // x[1], x[1:2]: named as x
			if len(n.Children) > 0 {
				return pgFigure(n.Children[0])
			}
		}
		return "", 0
	case "SUBQUERY":
		switch n.SubqueryType {
		case "EXISTS":
			return "exists", 2
		case "SCALAR":
			if n.Subquery != nil {
				if items := n.Subquery.Node.selectList(); len(items) > 0 && items[0].Class != "STAR" {
					return pgColumnName(items[0]), 2
				}
			}
		}
		return "", 0
	}
	return "", 0
}

// pgTypeNames are PostgreSQL's names of the types DuckDB's casts carry: what PostgreSQL names
// a column that is only a cast of a constant (`true` is 't'::bool, `date '2020-01-01'`).
// DuckDB keeps VARCHAR for both varchar and text; text is the common spelling.
var pgTypeNames = map[string]string{
	"BOOLEAN": "bool", "TINYINT": "int2", "SMALLINT": "int2", "INTEGER": "int4", "BIGINT": "int8",
	"HUGEINT": "numeric", "FLOAT": "float4", "DOUBLE": "float8", "DECIMAL": "numeric",
	"VARCHAR": "text", "BLOB": "bytea", "DATE": "date", "TIME": "time", "TIMESTAMP": "timestamp",
	"TIMESTAMP WITH TIME ZONE": "timestamptz", "INTERVAL": "interval", "UUID": "uuid", "JSON": "json", "BIT": "bit",
}

// selectItemTexts splits the select list of sqlText's outermost SELECT at its top-level commas
// and returns each item as written; nil when there is no such list.
func selectItemTexts(sqlText string) []string {
	return sqltok.MySQLSelectItems(sqlText, sqltok.SignificantTokens(sqlText, sqltok.MySQL))
}
