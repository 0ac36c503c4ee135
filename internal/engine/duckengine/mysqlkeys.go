package duckengine

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

// A MySQL client's SELECT of one table's columns (by name, aliased or not, or *) gives each
// column what the table says of it (engine.MetaColumnKey: NOT NULL, its keys, AUTO_INCREMENT),
// which the MySQL frontend sends as the column's flags, as MariaDB does. It costs one catalog
// read per such statement, on the statement's connection before it runs. Any other
// statement's columns, and an expression's, carry none, as MariaDB's expressions carry none.

// mysqlColumnKeys is each result column's MetaColumnKey value for a MySQL client's SELECT of
// one table's columns, with the column's origin (engine.ColumnOrigin: the table's database, the
// table as the statement names it, its own name, the column's) as MariaDB's column definition
// names it; an item that is not a column has an empty origin, and a COUNT(...) is NOT NULL, as
// MariaDB says. nil for any other statement, or when the table is not found.
func mysqlColumnKeys(ctx context.Context, conn *sql.Conn, q *query.Request) []string {
	if q.Protocol != query.ProtocolMySQL {
		return nil
	}
	sel, ok := readSingleTableSelect(q.SQL)
	if !ok || len(sel.table) > 2 {
		return nil
	}
	db := ""
	if len(sel.table) == 2 {
		db = sel.table[0]
	}
	cols := cachedColumnKeys(ctx, conn, db, sel.table[len(sel.table)-1])
	if cols == nil {
		return nil
	}
	named := cmp.Or(sel.alias, sel.table[len(sel.table)-1])
	keyOf := func(c tableColumn) string {
		return engine.WithOrigin(c.key, engine.ColumnOrigin{DB: c.db, Table: named, OrgTable: c.table, Column: c.name})
	}
	var out []string
	for i, item := range sel.items {
		if item == "*" {
			for _, c := range cols {
				out = append(out, keyOf(c))
			}
			continue
		}
		at := slices.IndexFunc(cols, func(c tableColumn) bool { return strings.EqualFold(c.name, item) })
		switch {
		case at >= 0:
			out = append(out, keyOf(cols[at]))
		case sel.counts[i]:
			out = append(out, engine.WithOrigin(engine.KeyNotNull, engine.ColumnOrigin{}))
		default:
			out = append(out, engine.WithOrigin("", engine.ColumnOrigin{}))
		}
	}
	return out
}

// tableColumn is one column of a table and its MetaColumnKey words.
type tableColumn struct{ db, table, name, key string }

// cachedColumnKeys is tableColumnKeys, kept for the statements of pooled connections
// (columnkeycache.go).
func cachedColumnKeys(ctx context.Context, conn *sql.Conn, db, table string) []tableColumn {
	c := columnKeysCacheOf(ctx)
	if c == nil {
		return tableColumnKeys(ctx, conn, db, table)
	}
	t := tableName{db: db, table: strings.ToLower(table)}
	if k, ok := c.get(t); ok {
		return k.cols
	}
	gen := c.gen.Load()
	cols := tableColumnKeys(ctx, conn, db, table)
	if cols != nil {
		c.put(t, tableKeys{gen: gen, cols: cols})
	}
	return cols
}

// tableColumnKeys reads the table's columns in order with their MetaColumnKey words; nil when
// the table is not found.
func tableColumnKeys(ctx context.Context, conn *sql.Conn, db, table string) []tableColumn {
	rows, err := conn.QueryContext(ctx, columnKeysSQL(db, table))
	if err != nil {
		return nil
	}
	defer rows.Close()
	var cols []tableColumn
	for rows.Next() {
		var c tableColumn
		if rows.Scan(&c.db, &c.table, &c.name, &c.key) != nil {
			return nil
		}
		cols = append(cols, c)
	}
	if rows.Err() != nil {
		return nil
	}
	return cols
}

// columnKeysSQL reads each column of db.table (the current database's table for db "") and
// its MetaColumnKey words: a primary key's columns are NOT NULL, a unique key is the column's
// own when it has one column, MariaDB's MUL (multipleKey) the first column's of an index or of
// a unique key of more.
func columnKeysSQL(db, table string) string {
	inKey := func(kind string) string {
		return `EXISTS (SELECT 1 FROM duckdb_constraints() k WHERE k.table_oid = c.table_oid AND k.constraint_type ` + kind +
			` AND list_contains(k.constraint_column_names, c.column_name))`
	}
	inIndex := `EXISTS (SELECT 1 FROM duckdb_indexes() i WHERE i.table_oid = c.table_oid AND NOT ` + caselessIndex +
		` AND list_contains(list_transform(qf_index_expressions(i.expressions), x -> trim(x, '"')), c.column_name))`
	primary := inKey("= 'PRIMARY KEY'")
	notNull := `(NOT c.is_nullable OR ` + primary + `)`
	word := func(cond, w string) string { return `CASE WHEN ` + cond + ` THEN '` + w + `' END` }
	key := `coalesce(` + multipleKey + `, CASE WHEN EXISTS (SELECT 1 FROM duckdb_constraints() k WHERE k.table_oid = c.table_oid ` +
		`AND k.constraint_type = 'UNIQUE' AND k.constraint_column_names = [c.column_name]) THEN 'UNI' END)`
	return `SELECT c.database_name, c.table_name, c.column_name, concat_ws(' ', ` +
		word(notNull, engine.KeyNotNull) + `, ` +
		word(primary, engine.KeyPrimary) + `, ` +
		word(`NOT `+primary+` AND `+key+` = 'UNI'`, engine.KeyUnique) + `, ` +
		word(`NOT `+primary+` AND `+key+` = 'MUL'`, engine.KeyMultiple) + `, ` +
		word(inKey("IN ('PRIMARY KEY', 'UNIQUE')")+` OR `+inIndex, engine.KeyPart) + `, ` +
		word(autoIncrement, engine.KeyAutoIncrement) + `, ` +
		word(notNull+` AND c.column_default IS NULL AND NOT `+autoIncrement, engine.KeyNoDefault) +
		`) FROM duckdb_columns() c WHERE ` + inSchema("c.database_name", "c.schema_name", db) +
		` AND lower(c.table_name) = lower(` + quoteString(table) + `) ORDER BY c.column_index`
}

// keyed gives each column its key words, when keys are the columns one for one.
func keyed(cols []column, keys []string) {
	if len(keys) != len(cols) {
		return
	}
	for i := range cols {
		cols[i].key = keys[i]
	}
}

// withColumnKey is md with key under engine.MetaColumnKey.
func withColumnKey(md arrow.Metadata, key string) arrow.Metadata {
	return arrow.NewMetadata(slices.Concat(md.Keys(), []string{engine.MetaColumnKey}), slices.Concat(md.Values(), []string{key}))
}
