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
// PostgreSQL's undefined-table error. Key is MariaDB's PRI, UNI or MUL (columnKey).
func (pgCatalog) Columns(db, table string) string {
	return `SELECT c.relname::text AS tbl, a.attname::text AS name, ` + pgMySQLType + ` AS type, NOT a.attnotnull AS nullable, ` +
		columnKey(tableKeyRows(regclass(db, table))) + ` AS key, ` +
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
// partial). A key PostgreSQL named itself (UNIQUE (c): t_c_key) is named by its first column,
// as MySQL names a key it was not given a name for; a named one (CONSTRAINT k UNIQUE, CREATE
// UNIQUE INDEX k) by its name, as MariaDB keeps it.
func (pgCatalog) Keys(db, table string) string {
	return `SELECT CASE WHEN i.indisprimary THEN 'PRIMARY KEY' ELSE 'UNIQUE' END AS kind, ` + keyName("_key") + ` AS name, ` +
		indexColumns + ` AS cols, i.indexrelid::bigint AS pos FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid ` +
		`WHERE i.indrelid = ` + regclass(db, table) + ` AND (i.indisprimary OR i.indisunique) AND i.indpred IS NULL AND i.indexprs IS NULL`
}

// OtherKeys are the table's plain indexes on columns (KEY), its foreign keys, and for a foreign
// key no index begins with the columns of, the KEY InnoDB creates for it (PostgreSQL creates
// none, and ORMs' reflection reads MariaDB's): named by the constraint's name, or by its first
// column when PostgreSQL named the constraint itself (t_c_fkey), which is then MariaDB's
// t_ibfk_<n>. Foreign keys are in their names' order, as MariaDB lists them. An action is
// MariaDB's words for it, but NO ACTION (PostgreSQL's default) and RESTRICT (MariaDB's), which
// MariaDB leaves out.
func (pgCatalog) OtherKeys(db, table string) string {
	reg := regclass(db, table)
	action := fkAction
	pgNamed := pgDefaultName("c.conname", "c.conrelid", "_fkey")
	return `SELECT 'KEY' AS kind, ` + keyName("_idx") + ` AS name, ` + indexColumns + ` AS cols, NULL AS refs, ` +
		`1000000000000 + i.indexrelid::bigint AS pos FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid ` +
		`WHERE i.indrelid = ` + reg + ` AND NOT i.indisunique AND NOT i.indisprimary AND i.indpred IS NULL AND i.indexprs IS NULL ` +
		`UNION ALL SELECT 'KEY', CASE WHEN ` + pgNamed + ` THEN ` + attName("c.conrelid", "c.conkey[1]") + ` ELSE c.conname::text END, ` +
		columnList("c.conkey", "c.conrelid", ",") + `, NULL, c.oid::bigint ` +
		`FROM pg_constraint c WHERE c.conrelid = ` + reg + ` AND c.contype = 'f' AND NOT EXISTS (SELECT 1 FROM pg_index i ` +
		`WHERE i.indrelid = c.conrelid AND i.indpred IS NULL AND i.indexprs IS NULL ` +
		`AND (i.indkey::int2[])[0:cardinality(c.conkey) - 1] = c.conkey) ` +
		`UNION ALL SELECT 'FOREIGN KEY', name, cols, refs, row_number() OVER (ORDER BY name) FROM (SELECT ` +
		`CASE WHEN ` + pgNamed + ` THEN t.relname::text || '_ibfk_' || row_number() OVER (PARTITION BY ` + pgNamed + ` ORDER BY c.oid) ` +
		`ELSE c.conname::text END AS name, ` + columnList("c.conkey", "c.conrelid", ", ") + ` AS cols, ` +
		`CASE WHEN r.relnamespace <> t.relnamespace THEN ` + mysqlshow.Tick("rn.nspname::text") + ` || '.' ELSE '' END || ` +
		mysqlshow.Tick("r.relname::text") + ` || ' (' || ` + columnList("c.confkey", "c.confrelid", ", ") + ` || ')' || ` +
		action("c.confdeltype", "DELETE") + ` || ` + action("c.confupdtype", "UPDATE") + ` AS refs ` +
		`FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_class r ON r.oid = c.confrelid ` +
		`JOIN pg_namespace rn ON rn.oid = r.relnamespace WHERE c.conrelid = ` + reg + ` AND c.contype = 'f') AS f`
}

// TableOptions are MariaDB's for a table: InnoDB, the next AUTO_INCREMENT value when past 1
// (the next of the sequence of the table's serial or identity column), utf8mb4.
func (pgCatalog) TableOptions(db, table string) string {
	next := `(SELECT max(coalesce(s.last_value + s.increment_by, s.start_value)) FROM pg_depend d ` +
		`JOIN pg_class sc ON sc.oid = d.objid AND sc.relkind = 'S' JOIN pg_namespace sn ON sn.oid = sc.relnamespace ` +
		`JOIN pg_sequences s ON s.schemaname = sn.nspname AND s.sequencename = sc.relname ` +
		`WHERE d.classid = 'pg_class'::regclass AND d.refobjid = ` + regclass(db, table) + ` AND d.deptype IN ('a', 'i'))`
	return `SELECT ' ENGINE=InnoDB' || coalesce(' AUTO_INCREMENT=' || CASE WHEN next > 1 THEN next END, '') || ` +
		`' DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci' AS options FROM (SELECT ` + next + ` AS next) AS n`
}

// fkAction is MariaDB's words for a foreign key's action (pg_constraint's column col) on verb
// (DELETE, UPDATE): none for NO ACTION and RESTRICT, which MariaDB leaves out.
func fkAction(col, verb string) string {
	return `CASE ` + col + ` WHEN 'c' THEN ' ON ` + verb + ` CASCADE' WHEN 'n' THEN ' ON ` + verb + ` SET NULL' ` +
		`WHEN 'd' THEN ' ON ` + verb + ` SET DEFAULT' ELSE '' END`
}

// indexColumns are the key columns of the index i, `quoted` and joined by commas.
var indexColumns = `(SELECT string_agg(` + mysqlshow.Tick("a.attname::text") + `, ',' ORDER BY k.n) ` +
	`FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n) ` +
	`JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum WHERE k.n <= i.indnkeyatts)`

// columnList is the columns numbered by the array attnums of the relation rel, `quoted` and
// joined by sep.
func columnList(attnums, rel, sep string) string {
	return `(SELECT string_agg(` + mysqlshow.Tick("a.attname::text") + `, '` + sep + `' ORDER BY k.n) FROM unnest(` + attnums +
		`) WITH ORDINALITY AS k(attnum, n) JOIN pg_attribute a ON a.attrelid = ` + rel + ` AND a.attnum = k.attnum)`
}

// attName is the name of the column attnum of the relation rel.
func attName(rel, attnum string) string {
	return `(SELECT a.attname::text FROM pg_attribute a WHERE a.attrelid = ` + rel + ` AND a.attnum = ` + attnum + `)`
}

// keyName is the MySQL name of the index i (its pg_class row ic): its first column's when
// PostgreSQL named it itself (<table>_<columns><suffix>[n]), else its own.
func keyName(suffix string) string {
	return `CASE WHEN ` + pgDefaultName("ic.relname", "i.indrelid", suffix) + ` THEN ` + attName("i.indrelid", "i.indkey[0]") +
		` ELSE ic.relname::text END`
}

// pgDefaultName is the condition that name is one PostgreSQL chose for a key of the relation
// rel: <table>_<columns><suffix>, a number after it when that name was taken.
func pgDefaultName(name, rel, suffix string) string {
	return `(starts_with(` + name + `::text, (SELECT relname::text FROM pg_class WHERE oid = ` + rel + `) || '_') AND ` +
		name + `::text ~ '` + suffix + `\d*$')`
}

var _ mysqlshow.CreateCatalog = pgCatalog{}

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
