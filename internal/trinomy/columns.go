package trinomy

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
	"github.com/queryflux/queryflux/internal/trinopg"
)

// Trino's `a / b` of two integers is integer division (truncated toward zero), MariaDB's a
// decimal (7 / 2 is 3.5000). The text types literals, count(...) and the like (trinomy.go's
// integerDivisions); a column's type is the catalog's. A statement with a division one of whose
// operands is a column names its tables (Translate's Tables); the engine reads their columns'
// types from its catalog (CatalogQuery, ReadCatalog) and the statement is written again with
// them (WithColumns). A name is an integer column only when that reading is sure: every table
// of the statement that has a column of that name has it as an integer, no derived table, CTE
// or table function could be what it names, and no select item takes the name as its alias.
// Anything else keeps MariaDB's division.

// Table is a table a statement names: its schema ("" for the session's) and name, lower case.
type Table struct{ Schema, Name string }

// Columns is what the catalog says of a statement's tables. Integer: by table, by column name
// (lower case), whether the column is an integer as Trino reads it (TINYINT(1), Trino's
// boolean, and BIGINT UNSIGNED, Trino's decimal(20,0), are not); a table it does not hold is
// unknown. Order: by table, its columns' names as the catalog writes them, in order.
type Columns struct {
	Integer map[Table]map[string]bool
	Order   map[Table][]string
}

// Translation is a Trino client's statement as MariaDB runs it (SQL), and the tables whose
// columns' types would change it (Tables: the engine asks its catalog, then calls WithColumns).
type Translation struct {
	SQL    string
	Tables []Table
}

// fromRef is one table reference of a statement: a table, or (derived) a subquery, a table
// function or a CTE's name, by the name the statement's columns are qualified with.
type fromRef struct {
	table   Table
	visible string // its alias, else its name (lower case)
	derived bool
}

// statementTables reads the table references of toks: after FROM, JOIN, UPDATE and INTO, and
// each item of a FROM list. with reports a WITH clause (its CTEs' names may be any reference).
func statementTables(toks []sqltok.Token) (refs []fromRef, with bool) {
	ctes := map[string]bool{}
	for i := 0; i+2 < len(toks); i++ { // name AS ( or name (columns) AS (
		if toks[i].Kind != sqltok.Word && toks[i].Kind != sqltok.QuotedIdent {
			continue
		}
		j := i + 1
		if toks[j].Text == "(" {
			if j = closing(toks, j, "(", ")"); j < 0 || j+1 >= len(toks) {
				continue
			}
		}
		if j+1 < len(toks) && toks[j].IsWord("as") && toks[j+1].Text == "(" && (i == 1 && toks[0].IsWord("with") || i > 0 && toks[i-1].Text == ",") {
			ctes[strings.ToLower(bareName(toks[i]))] = true
		}
	}
	inFrom := map[int]bool{} // depth -> inside a FROM clause, where a comma starts a reference
	depth := 0
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.Text == "(":
			depth++
			continue
		case t.Text == ")":
			inFrom[depth] = false
			depth--
			continue
		case t.IsWord("from"):
			inFrom[depth] = true
		case t.IsWord("join", "update", "into"):
		case t.Text == "," && inFrom[depth]:
		case t.IsWord("where", "group", "having", "order", "limit", "union", "except", "intersect", "window", "offset", "fetch", "set", "select", "values"):
			inFrom[depth] = false
			continue
		default:
			continue
		}
		ref, next := tableAt(toks, i+1, ctes)
		if next > i+1 {
			refs = append(refs, ref)
		}
	}
	return refs, len(ctes) > 0
}

// tableAt reads the table reference starting at toks[i] and where it ends.
func tableAt(toks []sqltok.Token, i int, ctes map[string]bool) (fromRef, int) {
	var ref fromRef
	name := func(k int) bool {
		return k < len(toks) && (toks[k].Kind == sqltok.QuotedIdent || toks[k].Kind == sqltok.Word && !notValue[strings.ToLower(toks[k].Text)])
	}
	j := i
	switch {
	case j < len(toks) && toks[j].Text == "(":
		if j = closing(toks, j, "(", ")"); j < 0 {
			return ref, i
		}
		ref.derived = true
	case name(j):
		var parts []string
		parts = append(parts, strings.ToLower(bareName(toks[j])))
		for j+2 < len(toks) && toks[j+1].Text == "." && name(j+2) {
			j += 2
			parts = append(parts, strings.ToLower(bareName(toks[j])))
		}
		j++
		if j < len(toks) && toks[j].Text == "(" && !toks[i-1].IsWord("into") { // a table function
			if j = closing(toks, j, "(", ")"); j < 0 {
				return ref, i
			}
			ref.derived = true
		}
		ref.table.Name = parts[len(parts)-1]
		if len(parts) > 1 {
			ref.table.Schema = parts[len(parts)-2]
		}
		ref.visible = ref.table.Name
		ref.derived = ref.derived || len(parts) == 1 && ctes[ref.table.Name]
	default:
		return ref, i
	}
	if j < len(toks) && toks[j].IsWord("as") {
		j++
	}
	if name(j) && !toks[j].IsWord("left", "right", "inner", "outer", "cross", "full", "natural", "join", "limit", "window", "lateral",
		"straight_join", "tablesample", "set", "partition", "use", "force", "ignore") {
		ref.visible = strings.ToLower(bareName(toks[j]))
		j++
	}
	return ref, j
}

// integerResolver tells whether a column name of toks is an integer column: columns is the
// catalog's answer for the statement's tables (nil: none known). An optimistic resolver takes
// every name for one, and records that one was asked (named): the statement's tables are then
// worth asking the catalog of.
type integerResolver struct {
	toks       []sqltok.Token
	columns    *Columns
	optimistic bool
	named      bool
	read       bool
	refs       []fromRef
	with       bool
}

// integerName reports whether the name toks[lo:hi] (parts joined by dots) is an integer column.
func (r *integerResolver) integerName(lo, hi int) bool {
	if r == nil {
		return false
	}
	if r.optimistic {
		r.named = true
		return true
	}
	if r.columns == nil {
		return false
	}
	if !r.read {
		r.refs, r.with = statementTables(r.toks)
		r.read = true
	}
	col := strings.ToLower(bareName(r.toks[hi-1]))
	var qualifier string
	switch hi - lo {
	case 1:
		if r.with || aliasedAnywhere(r.toks, col) {
			return false
		}
	case 3:
		qualifier = strings.ToLower(bareName(r.toks[lo]))
	default:
		return false
	}
	found := false
	for _, ref := range r.refs {
		if qualifier != "" && ref.visible != qualifier {
			continue
		}
		cols, known := r.columns.Integer[ref.table]
		if ref.derived || !known {
			return false // it may be the name of this reference's column
		}
		integer, has := cols[col]
		switch {
		case has && !integer:
			return false
		case has:
			found = true
		}
	}
	return found
}

// aliasedAnywhere reports whether some token of toks names col as an alias: after AS, or right
// after a value (select a * 1.5 col).
func aliasedAnywhere(toks []sqltok.Token, col string) bool {
	for i := 1; i < len(toks); i++ {
		t := toks[i]
		if (t.Kind != sqltok.Word && t.Kind != sqltok.QuotedIdent) || !strings.EqualFold(bareName(t), col) {
			continue
		}
		if prev := toks[i-1]; prev.IsWord("as") || prev.Text != "." && valueEnd(prev) {
			return true
		}
	}
	return false
}

// tablesToAsk are the tables of toks the catalog is asked of when one of its divisions has a
// column operand; nil when none has.
func tablesToAsk(toks []sqltok.Token) []Table {
	r := &integerResolver{toks: toks, optimistic: true}
	if integerDivisions(toks, r); !r.named && !starPositions(toks) {
		return nil
	}
	refs, _ := statementTables(toks)
	var out []Table
	seen := map[Table]bool{}
	for _, ref := range refs {
		if !ref.derived && !seen[ref.table] {
			seen[ref.table] = true
			out = append(out, ref.table)
		}
	}
	return out
}

// CatalogQuery is MariaDB's query of tables' columns, as ReadCatalog reads its rows: whether the
// table is in the session's database, its schema, name, column name, DATA_TYPE and COLUMN_TYPE.
func CatalogQuery(tables []Table) string {
	var b strings.Builder
	b.WriteString("SELECT TABLE_SCHEMA = DATABASE(), TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, DATA_TYPE, COLUMN_TYPE FROM information_schema.COLUMNS WHERE ")
	for i, t := range tables {
		if i > 0 {
			b.WriteString(" OR ")
		}
		schema := "DATABASE()"
		if t.Schema != "" {
			schema = mariaString(t.Schema)
		}
		b.WriteString("(TABLE_SCHEMA = " + schema + " AND TABLE_NAME = " + mariaString(t.Name) + ")")
	}
	b.WriteString(" ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION")
	return b.String()
}

// mariaString is s as a MariaDB string literal (a backslash escapes in MariaDB's default mode).
func mariaString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`, "\x00", `\0`).Replace(s) + "'"
}

// ReadCatalog reads CatalogQuery's rows (each: in the session's database, schema, table,
// column, DATA_TYPE, COLUMN_TYPE) as Columns; every table asked is known, its columns those
// the rows name (none: a table the catalog has not, whose names resolve nowhere).
func ReadCatalog(tables []Table, rows [][]string) Columns {
	out := Columns{Integer: map[Table]map[string]bool{}, Order: map[Table][]string{}}
	for _, t := range tables {
		out.Integer[t] = map[string]bool{}
	}
	for _, r := range rows {
		if len(r) < 6 {
			continue
		}
		dataType, columnType := strings.ToLower(r[4]), strings.ToLower(r[5])
		integer := integerColumnTypes[dataType] && !strings.HasPrefix(columnType, "tinyint(1)") &&
			!(dataType == "bigint" && strings.Contains(columnType, "unsigned"))
		col := strings.ToLower(r[3])
		for _, t := range []Table{{Schema: strings.ToLower(r[1]), Name: strings.ToLower(r[2])}, {Name: strings.ToLower(r[2])}} {
			if t.Schema == "" && r[0] != "1" {
				continue
			}
			cols, ok := out.Integer[t]
			if !ok {
				continue
			}
			out.Order[t] = append(out.Order[t], r[3])
			if was, has := cols[col]; has && was != integer {
				integer = false // two tables of one name (by case): sure only when both agree
			}
			cols[col] = integer
		}
	}
	return out
}

// integerColumnTypes are MariaDB's integer DATA_TYPEs.
var integerColumnTypes = map[string]bool{"tinyint": true, "smallint": true, "mediumint": true, "int": true, "bigint": true}

// starPositions reports whether toks is a query whose select list is * alone (or t.*) and
// whose ORDER BY names a column by its position: the catalog's order of the table's columns
// names it (sortNulls).
func starPositions(toks []sqltok.Token) bool {
	los, his := trinopg.ItemBounds(toks)
	if len(los) != 1 || toks[his[0]-1].Text != "*" {
		return false
	}
	for _, k := range trinopg.SortKeys(toks) {
		if k.Hi-k.Lo == 1 && toks[k.Lo].Kind == sqltok.Number {
			return true
		}
	}
	return false
}

// starColumn is the name of the column at place n (from 0) of a SELECT * of the statement's one
// table, as the catalog orders them; "" when the statement reads more than one table, a derived
// one, or one the catalog does not hold.
func (r *integerResolver) starColumn(n int) string {
	if r == nil || r.optimistic || r.columns == nil {
		return ""
	}
	if !r.read {
		r.refs, r.with = statementTables(r.toks)
		r.read = true
	}
	if r.with || len(r.refs) != 1 || r.refs[0].derived {
		return ""
	}
	order := r.columns.Order[r.refs[0].table]
	if n < 0 || n >= len(order) {
		return ""
	}
	return order[n]
}
