package pgengine

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// A PostgreSQL table's keys as MariaDB lists them, for SHOW INDEX, information_schema.STATISTICS
// and SHOW COLUMNS' Key, which ORMs' reflection and migration tools read (Laravel's and Knex's
// hasIndex, Django's get_constraints, SQLAlchemy's get_indexes): the primary key, then the
// unique keys whose columns are all NOT NULL, the other unique keys, the KEY InnoDB creates for
// a foreign key no index begins with the columns of (PostgreSQL creates none), and the plain
// indexes, as InnoDB orders them; keys on expressions and partial indexes are not MariaDB's
// and are left out. A table without a primary key has its first unique key of NOT NULL
// columns as InnoDB's: SHOW COLUMNS says PRI for its columns, SHOW INDEX keeps its name.

// keyRowsSQL is the relation of the keys of the tables whose oid rel (an SQL expression of the
// key's relation column, written with %s) selects: relid, key_name, non_unique, cols (the
// columns' attnums, from 1), pri (the columns are PRI in SHOW COLUMNS), pos (the key's order).
func keyRowsSQL(where func(rel string) string) string {
	const notNullKey = `NOT EXISTS (SELECT 1 FROM unnest(i.indkey::int2[]) AS k(attnum) JOIN pg_attribute a ` +
		`ON a.attrelid = i.indrelid AND a.attnum = k.attnum WHERE NOT a.attnotnull)`
	pgNamed := pgDefaultName("c.conname", "c.conrelid", "_fkey")
	return `SELECT relid, key_name, non_unique, cols, pos, primary_key OR NOT bool_or(primary_key) OVER w ` +
		`AND pos = min(CASE WHEN not_null_unique THEN pos END) OVER w AS pri FROM (` +
		`SELECT i.indrelid AS relid, CASE WHEN i.indisprimary THEN 'PRIMARY' WHEN i.indisunique THEN ` + keyName("_key") +
		` ELSE ` + keyName("_idx") + ` END AS key_name, NOT i.indisunique AS non_unique, ` +
		`(SELECT array_agg(k.attnum ORDER BY k.n) FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n) WHERE k.n <= i.indnkeyatts) AS cols, ` +
		`i.indisprimary AS primary_key, i.indisunique AND ` + notNullKey + ` AS not_null_unique, ` +
		`CASE WHEN i.indisprimary THEN 0 WHEN i.indisunique AND ` + notNullKey + ` THEN 1000000000000 ` +
		`WHEN i.indisunique THEN 2000000000000 ELSE 4000000000000 END + i.indexrelid::bigint AS pos ` +
		`FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid ` +
		`WHERE ` + where("i.indrelid") + ` AND i.indpred IS NULL AND i.indexprs IS NULL ` +
		`UNION ALL SELECT c.conrelid, CASE WHEN ` + pgNamed + ` THEN ` + attName("c.conrelid", "c.conkey[1]") + ` ELSE c.conname::text END, ` +
		`true, c.conkey, false, false, 3000000000000 + c.oid::bigint FROM pg_constraint c ` +
		`WHERE ` + where("c.conrelid") + ` AND c.contype = 'f' AND NOT EXISTS (SELECT 1 FROM pg_index i ` +
		`WHERE i.indrelid = c.conrelid AND i.indpred IS NULL AND i.indexprs IS NULL ` +
		`AND (i.indkey::int2[])[0:cardinality(c.conkey) - 1] = c.conkey)` +
		`) AS x WINDOW w AS (PARTITION BY relid)`
}

// tableKeyRows are keyRowsSQL's of the table reg (a regclass expression).
func tableKeyRows(reg string) string {
	return keyRowsSQL(func(rel string) string { return rel + ` = ` + reg })
}

// columnKey is SHOW COLUMNS' Key of the column a (pg_attribute) from the key rows keys: PRI
// for a column of the primary key, UNI for the column of a one-column unique key, MUL for the
// first column of any other key, in that precedence, as MariaDB says.
func columnKey(keys string) string {
	return `coalesce((SELECT CASE WHEN bool_or(k.pri AND a.attnum = ANY(k.cols)) THEN 'PRI' ` +
		`WHEN bool_or(NOT k.non_unique AND cardinality(k.cols) = 1 AND k.cols[1] = a.attnum) THEN 'UNI' ` +
		`WHEN bool_or(k.cols[1] = a.attnum) THEN 'MUL' END FROM (` + keys + `) AS k), '')`
}

// indexRows are the rows of the key rows keys, one per column of each key, with mysqlshow's
// IndexCatalog columns and the table's schema (db) and oid (relid). Cardinality is PostgreSQL's
// estimate of the table's rows (MariaDB's is InnoDB's), never a count.
func indexRows(keys string) string {
	return `SELECT n.nspname::text AS db, t.relname::text AS tbl, k.relid, k.key_name, k.non_unique, col.n AS seq, ` +
		`a.attname::text AS column_name, NOT a.attnotnull AS nullable, ` +
		`greatest(t.reltuples::bigint, coalesce(pg_stat_get_live_tuples(t.oid), 0)) AS cardinality, k.pos ` +
		`FROM (` + keys + `) AS k CROSS JOIN LATERAL unnest(k.cols) WITH ORDINALITY AS col(attnum, n) ` +
		`JOIN pg_attribute a ON a.attrelid = k.relid AND a.attnum = col.attnum ` +
		`JOIN pg_class t ON t.oid = k.relid JOIN pg_namespace n ON n.oid = t.relnamespace`
}

// Indexes are the table's keys as SHOW INDEX lists them; a table that does not exist is
// PostgreSQL's undefined-table error (the regclass).
func (pgCatalog) Indexes(db, table string) string {
	return indexRows(tableKeyRows(regclass(db, table)))
}

// statisticsSQL is MySQL's information_schema.STATISTICS on PostgreSQL's catalog: the keys of
// every table of the schemas a MySQL client sees as databases, MariaDB's columns named in
// lower case as PostgreSQL's information_schema names its own (a client's unquoted
// INDEX_NAME reads index_name).
var statisticsSQL = `SELECT 'def'::text AS table_catalog, s.db AS table_schema, s.tbl AS table_name, ` +
	`CASE WHEN s.non_unique THEN 1 ELSE 0 END::bigint AS non_unique, s.db AS index_schema, s.key_name AS index_name, ` +
	`s.seq::bigint AS seq_in_index, s.column_name, 'A'::text AS collation, s.cardinality, NULL::bigint AS sub_part, ` +
	`NULL::text AS packed, CASE WHEN s.nullable THEN 'YES' ELSE '' END AS nullable, 'BTREE'::text AS index_type, ` +
	`''::text AS comment, ''::text AS index_comment, 'NO'::text AS ignored FROM (` +
	indexRows(keyRowsSQL(func(rel string) string {
		return rel + ` IN (SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p') ` +
			`AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_%')`
	})) + `) AS s`

// mysqlInformationSchema is sqlText with each information_schema.statistics it reads (any
// case, `quoted` or not) as a subquery answering it as MariaDB's does; PostgreSQL's
// information_schema has no such view (the statement was 42P01). The subquery keeps the
// view's name as its alias when the statement gives none, so statistics.index_name still
// reads it.
func mysqlInformationSchema(sqlText string) string {
	if !sqltok.ContainsFold(sqlText, "statistics") || !sqltok.ContainsFold(sqlText, "information_schema") {
		return sqlText
	}
	toks := sqltok.Tokenize(sqlText, sqltok.Postgres)
	var b strings.Builder
	changed := false
	for i := 0; i < len(toks); i++ {
		if end := statisticsRef(toks, i); end > 0 {
			b.WriteString("(" + statisticsSQL + ")")
			if !aliased(toks, end) {
				b.WriteString(" AS statistics")
			}
			i, changed = end, true
			continue
		}
		b.WriteString(toks[i].Text)
	}
	if !changed {
		return sqlText
	}
	return b.String()
}

// statisticsRef is the index of the last token of information_schema.statistics when toks[i:]
// begin with it, else 0.
func statisticsRef(toks []sqltok.Token, i int) int {
	if !isName(toks[i], "information_schema") || i > 0 && toks[i-1].Text == "." {
		return 0
	}
	dot := nextSignificant(toks, i)
	if dot < 0 || toks[dot].Text != "." {
		return 0
	}
	name := nextSignificant(toks, dot)
	if name < 0 || !isName(toks[name], "statistics") {
		return 0
	}
	if after := nextSignificant(toks, name); after >= 0 && toks[after].Text == "." {
		return 0 // information_schema.statistics.column: a column, not the table
	}
	return name
}

// isName reports whether t names name, in any case, unquoted or "quoted" (a MySQL `name` is
// PostgreSQL's "name" here).
func isName(t sqltok.Token, name string) bool {
	switch t.Kind {
	case sqltok.Word:
		return strings.EqualFold(t.Text, name)
	case sqltok.QuotedIdent:
		return len(t.Text) == len(name)+2 && strings.EqualFold(t.Text[1:len(t.Text)-1], name)
	}
	return false
}

// aliased reports whether the table reference ending at toks[i] is given an alias: AS, or a
// name that is not a word which may follow a table reference.
func aliased(toks []sqltok.Token, i int) bool {
	j := nextSignificant(toks, i)
	if j < 0 {
		return false
	}
	t := toks[j]
	if t.Kind == sqltok.QuotedIdent {
		return true
	}
	if t.Kind != sqltok.Word {
		return false
	}
	switch strings.ToLower(t.Text) {
	case "where", "join", "inner", "left", "right", "full", "cross", "natural", "on", "using", "group", "order",
		"limit", "offset", "having", "window", "union", "except", "intersect", "for", "fetch", "straight_join", "lateral":
		return false
	}
	return true
}
