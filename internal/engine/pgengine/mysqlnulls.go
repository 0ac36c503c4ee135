package pgengine

import (
	"slices"

	"github.com/queryflux/queryflux/internal/sqltok"
	"github.com/queryflux/queryflux/internal/trinopg"
)

// MariaDB sorts NULLs first in an ascending order and last in a descending one (a query's
// ORDER BY, a window's, an aggregate's), and has no NULLS FIRST / LAST; PostgreSQL sorts them
// the other way. A MySQL client's sort key is written with the NULLS its order has on
// MariaDB. ORDER BY NULL (MariaDB: no order; Django's MySQL backend sends it after a GROUP BY)
// is PostgreSQL's error 42601 and is left out. A key that cannot be NULL keeps PostgreSQL's
// order, which is the same then, and its index (mysqlnotnull.go).

// notNullLookup is what mysqlNullsOrder may ask of the catalog: columns, the NOT NULL columns
// of a table (its qualified name; nil when it cannot tell), schema the client's database. The
// zero notNullLookup asks nothing: every key gets its NULLS.
type notNullLookup struct {
	schema  string
	columns func(table string) map[string]bool
	// booleans are a table's boolean columns (mysqlBoolAggregates).
	booleans func(table string) map[string]bool
	// boolNames are the names of every boolean column of the database's tables, which a
	// statement names when mysqlBoolLiterals has a literal to write (nil: not known).
	boolNames func() *columnNames
	// generated is a table's generated column (mysqlInsertReturning).
	generated func(table string) generatedColumn
	// order is a table's columns in order (an INSERT without its column list).
	order func(table string) []string
	// guarded: the statement runs outside a transaction, and a key columns says cannot be NULL
	// is checked to be so still as the statement runs (notNullGuard).
	guarded bool
}

// mysqlNullsOrder is sqlText (PostgreSQL's text of a MySQL client's statement) with each sort
// key's NULLS written as MariaDB sorts them, but a key lookup says cannot be NULL; sqlText
// itself when it has no ORDER BY.
func mysqlNullsOrder(sqlText string, lookup notNullLookup) string {
	if !sqltok.ContainsFold(sqlText, "order") {
		return sqlText
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.Postgres)
	keys := trinopg.SortKeys(toks)
	if len(keys) == 0 {
		return sqlText
	}
	var notNull map[string]bool
	var qualifiers []string
	var table string
	if lookup.columns != nil {
		if t, q, ok := oneTable(toks, lookup.schema, false); ok {
			table, notNull, qualifiers = t, lookup.columns(t), q
		}
	}
	var edits []sqltok.Edit
	var relied []string // the columns left without NULLS because the cache has them NOT NULL
	for i := 0; i < len(keys); i++ {
		k := keys[i]
		if by := k.Lo - 1; by >= 1 && toks[by].IsWord("by") && toks[by-1].IsWord("order") {
			n := 1 // the keys of this ORDER BY
			for i+n < len(keys) && keys[i+n].Lo > keys[i+n-1].Hi && toks[keys[i+n].Lo-1].Text == "," {
				n++
			}
			if allNull(toks, keys[i:i+n]) {
				last := keys[i+n-1]
				edits = append(edits, sqltok.Edit{From: toks[by-1].Pos, To: tokEnd(toks[max(last.Hi, last.Dir+1)-1])})
				i += n - 1
				continue
			}
		}
		if k.Nulls >= 0 || k.Hi == k.Lo+1 && toks[k.Lo].IsWord("null") {
			continue
		}
		if col := keyColumn(toks, k, qualifiers); col != "" && notNull[col] && !namedOtherwise(toks, col) {
			if !slices.Contains(relied, col) {
				relied = append(relied, col)
			}
			continue
		}
		after, nulls := tokEnd(toks[k.Hi-1]), " NULLS FIRST"
		if k.Dir >= 0 {
			after = tokEnd(toks[k.Dir])
		}
		if k.Descending(toks) {
			nulls = " NULLS LAST"
		}
		edits = append(edits, sqltok.Edit{From: after, To: after, Text: nulls})
	}
	if lookup.guarded && len(relied) > 0 {
		edits = notNullGuard(toks, table, relied, edits)
	}
	return sqltok.Splice(sqlText, edits)
}

// allNull reports whether every key of keys is the literal NULL.
func allNull(toks []sqltok.Token, keys []trinopg.SortKey) bool {
	for _, k := range keys {
		if k.Hi != k.Lo+1 || !toks[k.Lo].IsWord("null") {
			return false
		}
	}
	return true
}

func tokEnd(t sqltok.Token) int { return t.Pos + len(t.Text) }
