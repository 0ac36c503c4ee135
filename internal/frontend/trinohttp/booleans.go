package trinohttp

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/queryflux/queryflux/internal/sqltok"
	"github.com/queryflux/queryflux/internal/trinodecl"
)

// Booleans on MariaDB, which has no boolean type: a comparison or predicate (1 = 1, a IS NULL)
// is an integer 1 or 0, and a BOOLEAN column is a TINYINT(1). Trino's answer is a boolean: an
// integer select item whose form is boolean (trinodecl.BooleanItems), a TINYINT(1) column and a
// BIT(1) column (Trino's MariaDB and MySQL connectors read both as boolean) go to the client as
// booleans, any value but 0 true.

// metaMySQLColumn is mysqlengine.MetaMySQLColumn: a MySQL column's type code and display
// length ("1 1": a TINYINT(1)).
const metaMySQLColumn = "queryflux.mysql_column"

// mysqlInteger reports whether f is an integer a MySQL engine described.
func mysqlInteger(f arrow.Field) bool {
	return arrow.IsInteger(f.Type.ID()) && f.Metadata.Len() > 0 && f.Metadata.FindKey(metaMySQLColumn) >= 0
}

// booleanColumns are the columns of fields that are Trino booleans given as MariaDB's integers.
func booleanColumns(fields []arrow.Field, sqlText string) []int {
	var items []bool
	if mayHoldBooleans(sqlText) {
		items = trinodecl.BooleanItems(sqlText)
	}
	var out []int
	for i, f := range fields {
		if !mysqlInteger(f) {
			continue
		}
		column := metaValue(f, metaMySQLColumn)
		switch {
		case len(items) == len(fields) && items[i],
			f.Type.ID() == arrow.INT8 && column == "1 1",                                                           // TINYINT(1), MariaDB's BOOLEAN
			f.Type.ID() == arrow.UINT64 && metaValue(f, metaMySQLType) == "bit" && strings.HasSuffix(column, " 1"): // BIT(1)
			out = append(out, i)
		}
	}
	return out
}

// mayHoldBooleans reports cheaply whether sqlText may hold a boolean select item.
func mayHoldBooleans(sqlText string) bool {
	if strings.ContainsAny(sqlText, "=<>") {
		return true
	}
	for _, w := range []string{"true", "false", "not", "is", "in", "like", "between", "exists", "and", "or"} {
		if sqltok.ContainsFold(sqlText, w) {
			return true
		}
	}
	return false
}

// booleansOf is an integer array's values as booleans, 0 false, null kept.
func booleansOf(a arrow.Array) arrow.Array {
	b := array.NewBooleanBuilder(memory.DefaultAllocator)
	defer b.Release()
	b.Reserve(a.Len())
	for i := range a.Len() {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		b.UnsafeAppend(nonZero(a, i))
	}
	return b.NewArray()
}

func nonZero(a arrow.Array, i int) bool {
	switch a := a.(type) {
	case *array.Int8:
		return a.Value(i) != 0
	case *array.Int16:
		return a.Value(i) != 0
	case *array.Int32:
		return a.Value(i) != 0
	case *array.Int64:
		return a.Value(i) != 0
	case *array.Uint8:
		return a.Value(i) != 0
	case *array.Uint16:
		return a.Value(i) != 0
	case *array.Uint32:
		return a.Value(i) != 0
	case *array.Uint64:
		return a.Value(i) != 0
	}
	return false
}
