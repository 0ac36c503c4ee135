package pgengine

import (
	"cmp"
	"errors"
	"regexp"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/internal/mysqlshow"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// MySQL's catalog statements from a MySQL client (package mysqlshow: SHOW TABLES, SHOW
// COLUMNS, DESCRIBE, SHOW CREATE TABLE, ...), which PostgreSQL would refuse as syntax errors,
// are answered from PostgreSQL's catalog. A MySQL database is a PostgreSQL schema, as db.t
// names schema.t in a MySQL client's statements: the current schema when the client names
// none. Types are MySQL 8.0.11's nearest (pgMySQLType); a serial or identity column is
// auto_increment; a table that does not exist is MySQL's 1146 (showError).

// showSQL is the SELECT answering q when it is a MySQL client's catalog statement (ok), or the
// error refusing a SHOW this engine does not answer; db is the engine's database, what
// Tables_in_<db> names when the client chose none.
func showSQL(q *query.Request, db string) (string, bool, error) {
	if q.Protocol != query.ProtocolMySQL || !mysqlshow.IsCatalogStatement(q.SQL) {
		return "", false, nil
	}
	return mysqlshow.SQL(q.SQL, cmp.Or(q.Database, db), pgCatalog{})
}

// pgCatalog writes mysqlshow's relations on PostgreSQL's catalog.
type pgCatalog struct{}

func (pgCatalog) Engine() string { return "PostgreSQL" }

func (pgCatalog) Tables(db string) string {
	return "SELECT c.relname::text AS table_name, CASE WHEN c.relkind IN ('v', 'm') THEN 'VIEW' ELSE 'BASE TABLE' END AS table_type " +
		"FROM pg_class c WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND c.relnamespace = " + namespace(db)
}

// Databases are the schemas but PostgreSQL's own (pg_catalog, pg_toast, ...).
func (pgCatalog) Databases() string {
	return `SELECT nspname::text AS name FROM pg_namespace WHERE nspname NOT LIKE 'pg\_%'`
}

// Columns names the table as a regclass literal, so that one that does not exist is
// PostgreSQL's undefined-table error. Key is PRI for a primary key's columns and UNI for a
// one-column unique index's, as MySQL marks them.
func (pgCatalog) Columns(db, table string) string {
	return `SELECT c.relname::text AS tbl, a.attname::text AS name, ` + pgMySQLType + ` AS type, NOT a.attnotnull AS nullable, ` +
		`coalesce((SELECT CASE WHEN bool_or(i.indisprimary) THEN 'PRI' WHEN count(*) > 0 THEN 'UNI' END FROM pg_index i WHERE i.indrelid = a.attrelid ` +
		`AND (i.indisprimary AND a.attnum = ANY(i.indkey) OR i.indisunique AND i.indnkeyatts = 1 AND i.indkey[0] = a.attnum ` +
		`AND i.indpred IS NULL)), '') AS key, ` +
		`CASE WHEN NOT d.serial THEN regexp_replace(d.expr, '^(''.*'')::[a-z ]+$', '\1') END AS dflt, ` +
		`CASE WHEN d.serial THEN 'auto_increment' ELSE '' END AS extra, ` +
		`coalesce(col_description(a.attrelid, a.attnum), '') AS comment, a.attnum AS pos ` +
		`FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid ` +
		`LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum ` +
		`CROSS JOIN LATERAL (SELECT format_type(a.atttypid, a.atttypmod) AS t, pg_get_expr(ad.adbin, ad.adrelid) AS expr, ` +
		`a.attidentity <> '' OR coalesce(pg_get_expr(ad.adbin, ad.adrelid) LIKE 'nextval(%', false) AS serial) d ` +
		`WHERE a.attrelid = ` + regclass(db, table) + ` AND a.attnum > 0 AND NOT a.attisdropped`
}

// Keys are the table's primary key and unique indexes on columns (not on expressions, not
// partial), each named by its first column, as MySQL names a key it was not given a name for.
func (pgCatalog) Keys(db, table string) string {
	return `SELECT CASE WHEN i.indisprimary THEN 'PRIMARY KEY' ELSE 'UNIQUE' END AS kind, ` +
		`(SELECT a.attname::text FROM pg_attribute a WHERE a.attrelid = i.indrelid AND a.attnum = i.indkey[0]) AS name, ` +
		`(SELECT string_agg(` + mysqlshow.Tick("a.attname::text") + `, ',' ORDER BY k.n) FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n) ` +
		`JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum WHERE k.n <= i.indnkeyatts) AS cols, ` +
		`i.indexrelid::bigint AS pos FROM pg_index i WHERE i.indrelid = ` + regclass(db, table) +
		` AND (i.indisprimary OR i.indisunique) AND i.indpred IS NULL AND i.indexprs IS NULL`
}

func (pgCatalog) Literal(v string) string { return sqltok.StandardString(v) }

// Condition is a MySQL WHERE as PostgreSQL reads it: its literals and `names` rewritten as
// every MySQL client's statement is (numberedParams), and a name of one of columns, in any
// case, as the column's (PostgreSQL would read Table_type as table_type).
func (pgCatalog) Condition(where string, columns []string) string {
	var b strings.Builder
	toks := sqltok.Tokenize(where, sqltok.MySQL)
	for i, t := range toks {
		name := t.Text
		if t.Kind == sqltok.QuotedIdent && t.Text[0] == '`' && !t.Unterminated {
			name = strings.ReplaceAll(t.Text[1:len(t.Text)-1], "``", "`")
		} else if t.Kind != sqltok.Word || i+1 < len(toks) && toks[i+1].Text == "(" {
			name = ""
		}
		if k := slices.IndexFunc(columns, func(c string) bool { return strings.EqualFold(c, name) }); name != "" && k >= 0 {
			b.WriteString("`" + strings.ReplaceAll(columns[k], "`", "``") + "`")
			continue
		}
		b.WriteString(t.Text)
	}
	return numberedParams(&query.Request{SQL: b.String(), Protocol: query.ProtocolMySQL})
}

// pgMySQLType is the MySQL type (as MySQL 8.0.11's SHOW COLUMNS writes it) nearest to d.t,
// a PostgreSQL type as format_type writes it.
const pgMySQLType = `CASE WHEN d.t = 'boolean' THEN 'tinyint(1)' WHEN d.t = 'smallint' THEN 'smallint(6)' ` +
	`WHEN d.t = 'integer' THEN 'int(11)' WHEN d.t = 'bigint' THEN 'bigint(20)' WHEN d.t = 'real' THEN 'float' ` +
	`WHEN d.t = 'double precision' THEN 'double' WHEN d.t = 'numeric' THEN 'decimal(65,30)' ` +
	`WHEN d.t LIKE 'numeric(%' THEN 'decimal' || substr(d.t, 8) WHEN d.t LIKE 'character varying(%' THEN 'varchar' || substr(d.t, 18) ` +
	`WHEN d.t LIKE 'character(%' THEN 'char' || substr(d.t, 10) WHEN d.t IN ('text', 'character varying') THEN 'text' ` +
	`WHEN d.t = 'bytea' THEN 'blob' WHEN d.t = 'uuid' THEN 'char(36)' WHEN d.t IN ('json', 'jsonb') THEN 'json' WHEN d.t = 'date' THEN 'date' ` +
	`WHEN d.t LIKE 'timestamp%with time zone' THEN 'timestamp' || ` + precision + ` ` +
	`WHEN d.t LIKE 'timestamp%' THEN 'datetime' || ` + precision + ` ` +
	`WHEN d.t LIKE 'time%' THEN 'time' || ` + precision + ` ELSE d.t END`

// precision is d.t's fractional seconds as MySQL writes them: (6) when PostgreSQL's default,
// nothing for (0).
const precision = `replace(coalesce(substring(d.t from '\(\d\)'), '(6)'), '(0)', '')`

// namespace is the oid of the schema db names, or of the current schema.
func namespace(db string) string {
	if db == "" {
		return "(SELECT oid FROM pg_namespace WHERE nspname = current_schema())"
	}
	return "(SELECT oid FROM pg_namespace WHERE nspname = " + sqltok.StandardString(db) + ")"
}

// regclass is db.table (or table, found on the search path) as a regclass.
func regclass(db, table string) string {
	name := pgIdent(table)
	if db != "" {
		name = pgIdent(db) + "." + name
	}
	return sqltok.StandardString(name) + "::regclass"
}

func pgIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// missingRelation finds the relation PostgreSQL's undefined-table error names.
var missingRelation = regexp.MustCompile(`relation "(.+?)" does not exist`)

// showError is err as a MySQL client's catalog statement gets it: a table that does not exist
// is MySQL's message (1146 to the client), not PostgreSQL's naming the rewritten statement's
// regclass.
func showError(err error) error {
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != sqlstate.UndefinedTable {
		return err
	}
	m := missingRelation.FindStringSubmatch(qe.Message)
	if m == nil {
		return err
	}
	return &query.Error{Code: qe.Code, Message: mysqlshow.MissingTable("", m[1])}
}
