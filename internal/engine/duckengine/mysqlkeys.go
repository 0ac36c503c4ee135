package duckengine

import (
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
// one table's columns ("" for an item that is not a column); nil for any other statement, or
// when the table is not found.
func mysqlColumnKeys(ctx context.Context, conn *sql.Conn, q *query.Request) []string {
	if q.Protocol != query.ProtocolMySQL {
		return nil
	}
	table, items, ok := singleTableSelect(q.SQL)
	if !ok || len(table) > 2 {
		return nil
	}
	db := ""
	if len(table) == 2 {
		db = table[0]
	}
	names, keys, byName := cachedColumnKeys(ctx, conn, db, table[len(table)-1])
	if names == nil {
		return nil
	}
	var out []string
	for _, item := range items {
		if item == "*" {
			out = append(out, keys...)
			continue
		}
		out = append(out, byName[strings.ToLower(item)])
	}
	return out
}

// cachedColumnKeys is tableColumnKeys, kept for the statements of pooled connections
// (columnkeycache.go).
func cachedColumnKeys(ctx context.Context, conn *sql.Conn, db, table string) (names, keys []string, byName map[string]string) {
	c := columnKeysCacheOf(ctx)
	if c == nil {
		return tableColumnKeys(ctx, conn, db, table)
	}
	t := tableName{db: db, table: strings.ToLower(table)}
	if k, ok := c.get(t); ok {
		return k.names, k.keys, k.byName
	}
	gen := c.gen.Load()
	names, keys, byName = tableColumnKeys(ctx, conn, db, table)
	if names != nil {
		c.put(t, tableKeys{gen: gen, names: names, keys: keys, byName: byName})
	}
	return names, keys, byName
}

// tableColumnKeys reads the table's columns in order with their MetaColumnKey values; nil
// names when the table is not found.
func tableColumnKeys(ctx context.Context, conn *sql.Conn, db, table string) (names, keys []string, byName map[string]string) {
	rows, err := conn.QueryContext(ctx, columnKeysSQL(db, table))
	if err != nil {
		return nil, nil, nil
	}
	defer rows.Close()
	byName = map[string]string{}
	for rows.Next() {
		var name, key string
		if rows.Scan(&name, &key) != nil {
			return nil, nil, nil
		}
		names, keys = append(names, name), append(keys, key)
		byName[strings.ToLower(name)] = key
	}
	if rows.Err() != nil {
		return nil, nil, nil
	}
	return names, keys, byName
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
	return `SELECT c.column_name, concat_ws(' ', ` +
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
