package duckengine

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
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
	a := q.ClientAnalysis() // the core's tokens of the client's text, MySQL's dialect: not read again
	if len(a.Statements) != 1 {
		return nil
	}
	sel, ok := tableSelectOf(withoutSelectModifiers(a.Statements[0].Significant))
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
			out = append(out, engine.WithOrigin(engine.KeyNotNull+" "+engine.KeyCount, engine.ColumnOrigin{}))
		default:
			out = append(out, engine.WithOrigin("", engine.ColumnOrigin{}))
		}
	}
	return out
}

// tableColumn is one column of a table and its MetaColumnKey words.
type tableColumn struct{ db, table, name, key string }

// withoutSelectModifiers is a SELECT's tokens without MySQL's modifiers after SELECT
// (SQL_NO_CACHE, HIGH_PRIORITY, ... and a versioned comment's, which MySQL's dialect reads as
// code; not DISTINCT or ALL, which tableSelectOf reads).
func withoutSelectModifiers(toks []sqltok.Token) []sqltok.Token {
	n := 1
	for n < len(toks) && toks[n].Kind == sqltok.Word && !toks[n].IsWord("distinct", "all") && sqltok.MySQLSelectModifiers[strings.ToLower(toks[n].Text)] {
		n++
	}
	if len(toks) == 0 || n == 1 {
		return toks
	}
	return append([]sqltok.Token{toks[0]}, toks[n:]...)
}

// cachedColumnKeys is tableColumnKeys, kept for the statements of pooled connections
// (columnkeycache.go).
func cachedColumnKeys(ctx context.Context, conn *sql.Conn, db, table string) []tableColumn {
	c := columnKeysCacheOf(ctx)
	if c == nil {
		return tableColumnKeys(ctx, conn, db, table)
	}
	t := tableName{db: db, table: strings.ToLower(table)}
	return keptRead(c, &c.tables, t, func() ([]tableColumn, bool) {
		cols := tableColumnKeys(ctx, conn, db, table)
		return cols, cols != nil
	})
}

// tableColumnKeys reads the table's columns in order with their MetaColumnKey words; nil when
// the table is not found. The catalog is read by three plain queries (its columns,
// then their keys and indexes) and the words made here (keyWords): catalogColumnKeysSQL, which says
// the same in one statement of correlated subqueries, took DuckDB ~80-170 ms to plan and run
// for a table of three columns, these ~5 ms (BenchmarkTableColumnKeys).
func tableColumnKeys(ctx context.Context, conn *sql.Conn, db, table string) []tableColumn {
	cols, err := tableKeyColumns(ctx, conn, db, table)
	if err != nil || cols == nil {
		return nil
	}
	oids := make([]string, 0, 1)
	for _, c := range cols {
		if o := strconv.FormatInt(c.oid, 10); !slices.Contains(oids, o) {
			oids = append(oids, o)
		}
	}
	in := strings.Join(oids, ", ")
	cons, err := keyLists(ctx, conn, `SELECT table_oid, constraint_index, constraint_type = 'PRIMARY KEY', false, unnest(constraint_column_names), `+
		`unnest(range(len(constraint_column_names))) FROM duckdb_constraints() WHERE constraint_type IN ('PRIMARY KEY', 'UNIQUE') AND table_oid IN (`+in+`)`)
	if err != nil {
		return nil
	}
	idx, err := keyLists(ctx, conn, `SELECT table_oid, index_oid, is_unique, `+caselessIndex+`, unnest(e), unnest(range(len(e))) `+
		`FROM (SELECT *, qf_index_expressions(expressions) AS e FROM duckdb_indexes() WHERE table_oid IN (`+in+`))`)
	if err != nil {
		return nil
	}
	out := make([]tableColumn, len(cols))
	for i, c := range cols {
		out[i] = tableColumn{db: c.db, table: c.table, name: c.name, key: keyWords(c, cons, idx)}
	}
	return out
}

// keyColumn is a table column as keyWords reads it.
type keyColumn struct {
	oid      int64
	db       string
	table    string
	name     string
	nullable bool
	def      sql.NullString
}

// keyList is a key constraint (constraint: primary or unique) or an index (its expressions as
// qf_index_expressions writes them: unique, caseless) and its columns in order.
type keyList struct {
	oid, id         int64
	primary, unique bool
	caseless        bool
	columns         []string
}

// tableKeyColumns is db.table's columns in order (the current database's table for db ""); nil when
// there is no such table.
func tableKeyColumns(ctx context.Context, conn *sql.Conn, db, table string) ([]keyColumn, error) {
	rows, err := conn.QueryContext(ctx, `SELECT c.table_oid, c.database_name, c.table_name, c.column_name, c.is_nullable, c.column_default FROM duckdb_columns() c WHERE `+
		inSchema("c.database_name", "c.schema_name", db)+` AND lower(c.table_name) = lower(`+quoteString(table)+`) ORDER BY c.table_oid, c.column_index`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []keyColumn
	for rows.Next() {
		var c keyColumn
		if err := rows.Scan(&c.oid, &c.db, &c.table, &c.name, &c.nullable, &c.def); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}

// keyLists reads the rows of query (table oid, list id, primary or unique, caseless, one of
// its columns, the column's position) as lists.
func keyLists(ctx context.Context, conn *sql.Conn, query string) ([]keyList, error) {
	rows, err := conn.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var lists []keyList
	for rows.Next() {
		var l keyList
		var flag bool
		var column string
		var at int64
		if err := rows.Scan(&l.oid, &l.id, &flag, &l.caseless, &column, &at); err != nil {
			return nil, err
		}
		l.primary, l.unique = flag, flag
		i := slices.IndexFunc(lists, func(o keyList) bool { return o.oid == l.oid && o.id == l.id })
		if i < 0 {
			lists, i = append(lists, l), len(lists)
		}
		for int64(len(lists[i].columns)) <= at {
			lists[i].columns = append(lists[i].columns, "")
		}
		lists[i].columns[at] = column
	}
	return lists, rows.Err()
}

// keyWords is c's MetaColumnKey words, as MariaDB flags a column: a primary key's columns are
// NOT NULL, a unique key is the column's own when it has one column, MariaDB's MUL the first
// column's of an index or of a unique key of more (catalogColumnKeysSQL says the same in SQL).
func keyWords(c keyColumn, cons, idx []keyList) string {
	primary, inKey := false, false
	multiple, unique := "", false
	for _, k := range cons {
		if k.oid != c.oid || !slices.Contains(k.columns, c.name) {
			continue
		}
		inKey = true
		primary = primary || k.primary
		if !k.primary && len(k.columns) == 1 {
			unique = true
		}
		if !k.primary && len(k.columns) > 1 && k.columns[0] == c.name {
			multiple = "MUL"
		}
	}
	inIndex, indexed, indexMul := false, false, false
	for _, i := range idx {
		if i.oid != c.oid || i.caseless {
			continue
		}
		if slices.ContainsFunc(i.columns, func(e string) bool { return strings.Trim(e, `"`) == c.name }) {
			inIndex = true
		}
		if strings.Trim(i.columns[0], `"`) == c.name {
			indexed = true
			indexMul = indexMul || !i.unique || len(i.columns) > 1
		}
	}
	key := ""
	switch {
	case indexed && indexMul:
		key = "MUL"
	case indexed:
		key = "UNI"
	case multiple != "":
		key = multiple
	case unique:
		key = "UNI"
	}
	notNull := !c.nullable || primary
	ai := c.def.Valid && autoIncrementDefault(c.def.String)
	var words []string
	add := func(cond bool, w string) {
		if cond {
			words = append(words, w)
		}
	}
	add(notNull, engine.KeyNotNull)
	add(primary, engine.KeyPrimary)
	add(!primary && key == "UNI", engine.KeyUnique)
	add(!primary && key == "MUL", engine.KeyMultiple)
	add(inKey || inIndex, engine.KeyPart)
	add(ai, engine.KeyAutoIncrement)
	add(notNull && !c.def.Valid && !ai, engine.KeyNoDefault)
	return strings.Join(words, " ")
}

// autoIncrementDefault reports whether a column default is AUTO_INCREMENT's (mysqlddl.go): it
// is what autoIncrement's LIKE 'nextval(”%qf_ai_%' matches, '_' any one byte.
func autoIncrementDefault(def string) bool {
	rest, ok := strings.CutPrefix(def, "nextval('")
	if !ok {
		return false
	}
	for i := 0; i+len(aiPrefix) <= len(rest); i++ {
		match := true
		for j := range len(aiPrefix) {
			if aiPrefix[j] != '_' && rest[i+j] != aiPrefix[j] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// catalogColumnKeysSQL reads each column of db.table (the current database's table for db "")
// with its database and table names and its MetaColumnKey words: a primary key's columns are
// NOT NULL, a unique key is the column's own when it has one column, MariaDB's MUL
// (multipleKey) the first column's of an index or of a unique key of more. tableColumnKeys
// says the same quicker (keyWords); this is its tests' oracle.
func catalogColumnKeysSQL(db, table string) string {
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
