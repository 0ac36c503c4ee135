package duckengine

import (
	"cmp"
	"errors"
	"regexp"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// MySQL's catalog statements, which DuckDB reads otherwise (SHOW TABLES lists every schema's
// tables, DESCRIBE t has DuckDB's columns) or not at all (SHOW COLUMNS, SHOW CREATE TABLE: a
// parser error), asked by the mariadb CLI, GUI tools and ORMs' reflection. Each is answered by a
// SELECT on DuckDB's catalog with MySQL's columns, of the client's database (DuckDB's catalog)
// and its main schema; the compatibility objects (catalog.go) are in another schema, and so
// never listed. A table that does not exist is DuckDB's catalog error (1146 to the client).
//
//   - SHOW [FULL] TABLES [{FROM|IN} db] [LIKE 'p' | WHERE ...]: Tables_in_<db> [, Table_type];
//   - SHOW {DATABASES|SCHEMAS} [LIKE 'p' | WHERE ...]: Database;
//   - SHOW [FULL] {COLUMNS|FIELDS} {FROM|IN} t [{FROM|IN} db] [LIKE 'p' | WHERE ...],
//     DESCRIBE t [col], DESC t, EXPLAIN t: Field, Type, Null, Key, Default, Extra (FULL adds
//     Collation, Privileges and Comment), types as MySQL 8.0.11 writes them (qf_mysql_type);
//   - SHOW CREATE TABLE t: Table, Create Table (MySQL's syntax, with its keys).
//
// Any other SHOW is refused with MySQL's 1235 naming it, never DuckDB's parser error: SHOW
// VARIABLES, COLLATION, CHARACTER SET, WARNINGS and ERRORS are the MySQL frontend's to answer,
// and reach no engine.

// mysqlShow is sqlText's SELECT when it is one of the statements above (ok), or the error
// refusing another SHOW; db names the client's database in Tables_in_<db>.
func mysqlShow(sqlText, db string) (out string, ok bool, err error) {
	all := sqltok.Tokenize(sqlText, sqltok.MySQL)
	var sig []int // the significant tokens' indexes in all, a trailing ; left out
	for i, t := range all {
		if t.Significant() {
			sig = append(sig, i)
		}
	}
	if n := len(sig); n > 0 && all[sig[n-1]].Text == ";" {
		sig = sig[:n-1]
	}
	if len(sig) == 0 || all[sig[0]].Kind != sqltok.Word {
		return "", false, nil
	}
	r := &showReader{all: all, sig: sig, at: 1}
	switch strings.ToLower(all[sig[0]].Text) {
	case "describe", "desc", "explain":
		return r.describe()
	case "show":
		out, err := r.show(db)
		return out, err == nil, err
	}
	return "", false, nil
}

// showReader reads a statement's significant tokens from at on.
type showReader struct {
	all []sqltok.Token
	sig []int
	at  int
}

func (r *showReader) done() bool { return r.at >= len(r.sig) }

func (r *showReader) tok(k int) sqltok.Token {
	if k >= len(r.sig) {
		return sqltok.Token{}
	}
	return r.all[r.sig[k]]
}

// word consumes the next token when it is one of words (ignoring case) and says which.
func (r *showReader) word(words ...string) string {
	t := r.tok(r.at)
	if t.Kind != sqltok.Word {
		return ""
	}
	for _, w := range words {
		if strings.EqualFold(t.Text, w) {
			r.at++
			return w
		}
	}
	return ""
}

// name consumes an identifier (a word or a `quoted` name) and returns it.
func (r *showReader) name() (string, bool) {
	t := r.tok(r.at)
	switch {
	case t.Kind == sqltok.Word:
		r.at++
		return t.Text, true
	case t.Kind == sqltok.QuotedIdent && t.Text[0] == '`' && !t.Unterminated:
		r.at++
		return strings.ReplaceAll(t.Text[1:len(t.Text)-1], "``", "`"), true
	}
	return "", false
}

// literal reads the string literal at the next token (as MySQL reads it), without consuming it.
func (r *showReader) literal() (string, bool) {
	t := r.tok(r.at)
	if t.Kind != sqltok.String || t.Unterminated || len(t.Text) < 2 || (t.Text[0] != '\'' && t.Text[0] != '"') {
		return "", false
	}
	return sqltok.MySQLStringValue(t.Text), true
}

// table consumes a table name, db.t or t.
func (r *showReader) table() (db, table string, ok bool) {
	if table, ok = r.name(); !ok {
		return "", "", false
	}
	if r.tok(r.at).Text == "." {
		r.at++
		db = table
		if table, ok = r.name(); !ok {
			return "", "", false
		}
	}
	return db, table, true
}

// filter consumes what may end a SHOW: LIKE 'pattern' (on column), or WHERE and the rest,
// wrapped around the SELECT base; ok is false for anything else.
func (r *showReader) filter(base, column string) (string, bool) {
	if r.done() {
		return base, true
	}
	switch r.word("like", "where") {
	case "like":
		v, ok := r.literal()
		if !ok || r.at+1 != len(r.sig) {
			return "", false
		}
		return "SELECT * FROM (" + base + ") AS s WHERE " + quoteIdent(column) + " LIKE " + duckString(v) + ` ESCAPE '\'`, true
	case "where":
		var rest strings.Builder
		for _, t := range r.all[r.sig[r.at-1]+1:] {
			rest.WriteString(t.Text)
		}
		return "SELECT * FROM (" + base + ") AS s WHERE " + mysqlCompat(strings.TrimRight(strings.TrimSpace(rest.String()), ";")), true
	}
	return "", false
}

func (r *showReader) show(db string) (string, error) {
	full := r.word("full") != ""
	switch r.word("tables", "databases", "schemas", "columns", "fields", "create") {
	case "tables":
		named := ""
		if r.word("from", "in") != "" {
			var ok bool
			if named, ok = r.name(); !ok {
				break
			}
		}
		col := "Tables_in_" + cmp.Or(named, db)
		base := "SELECT table_name AS " + quoteIdent(col)
		if full {
			base += `, table_type AS "Table_type"`
		}
		base += " FROM information_schema.tables WHERE table_type IN ('BASE TABLE', 'VIEW') AND " +
			inSchema("table_catalog", "table_schema", named) + " ORDER BY 1"
		if out, ok := r.filter(base, col); ok {
			return out, nil
		}
	case "databases", "schemas":
		if full {
			break
		}
		if out, ok := r.filter(`SELECT datname AS "Database" FROM qf_pg_database ORDER BY 1`, "Database"); ok {
			return out, nil
		}
	case "columns", "fields":
		if r.word("from", "in") == "" {
			break
		}
		tdb, table, ok := r.table()
		if !ok {
			break
		}
		if r.word("from", "in") != "" {
			if tdb, ok = r.name(); !ok {
				break
			}
		}
		if out, ok := r.filter(columnsSQL(tdb, table, full), "Field"); ok {
			return out, nil
		}
	case "create":
		if r.word("table") == "" {
			break
		}
		tdb, table, ok := r.table()
		if ok && r.done() {
			return createTableSQL(tdb, table), nil
		}
	}
	return "", unsupportedShow(r)
}

// describe reads DESCRIBE t [col] (EXPLAIN t): any other DESCRIBE or EXPLAIN (of a query) is
// DuckDB's.
func (r *showReader) describe() (string, bool, error) {
	if r.word(explained...) != "" {
		return "", false, nil
	}
	tdb, table, ok := r.table()
	if !ok {
		return "", false, nil
	}
	base := columnsSQL(tdb, table, false)
	switch {
	case r.done():
		return base, true, nil
	case r.at+1 == len(r.sig):
		if col, isName := r.name(); isName {
			return "SELECT * FROM (" + base + `) AS s WHERE "Field" = ` + sqltok.StandardString(col), true, nil
		}
		if v, ok := r.literal(); ok {
			return "SELECT * FROM (" + base + `) AS s WHERE "Field" LIKE ` + duckString(v) + ` ESCAPE '\'`, true, nil
		}
	}
	return "", false, nil
}

// explained are the words after DESCRIBE or EXPLAIN that start a query's plan, not a table.
var explained = []string{"select", "with", "insert", "update", "delete", "replace", "table", "values", "analyze",
	"format", "extended", "partitions", "for"}

// unsupportedShow is MySQL's 1235 for a SHOW this engine does not answer, naming it by its
// first words.
func unsupportedShow(r *showReader) error {
	var words []string
	for k := 0; k < len(r.sig) && k < 4; k++ {
		t := r.tok(k)
		if t.Kind != sqltok.Word {
			break
		}
		words = append(words, strings.ToUpper(t.Text))
	}
	return &query.Error{Code: sqlstate.FeatureNotSupported, Message: "This version of QueryFlux doesn't yet support '" +
		strings.Join(words, " ") + "' on DuckDB (it answers SHOW [FULL] TABLES, SHOW DATABASES, SHOW [FULL] COLUMNS, " +
		"DESCRIBE, SHOW CREATE TABLE, SHOW VARIABLES, SHOW COLLATION and SHOW CHARACTER SET)"}
}

// inSchema is the condition that the catalog and schema columns name db's main schema, or
// the current database's current schema when db is "".
func inSchema(catalogCol, schemaCol, db string) string {
	if db == "" {
		return catalogCol + " = current_database() AND " + schemaCol + " = current_schema()"
	}
	return catalogCol + " = " + sqltok.StandardString(db) + " AND " + schemaCol + " = 'main'"
}

// tableRef is db.t (or t) as DuckDB names it.
func tableRef(db, table string) string {
	if db == "" {
		return quoteIdent(table)
	}
	return quoteIdent(db) + "." + quoteIdent(table)
}

// ofTable is the condition on duckdb_columns() (as c) selecting table's columns; it names the
// table itself, so that one that does not exist is DuckDB's catalog error, as MySQL's 1146.
func ofTable(db, table string) string {
	return inSchema("c.database_name", "c.schema_name", db) + " AND lower(c.table_name) = lower(" + sqltok.StandardString(table) +
		") AND (SELECT count(*) FROM (SELECT 1 FROM " + tableRef(db, table) + " LIMIT 0)) = 0"
}

// columnsSQL is SHOW [FULL] COLUMNS FROM table as a SELECT. Key is PRI for a primary key's
// columns and UNI for a one-column unique constraint's, as MySQL marks them.
func columnsSQL(db, table string, full bool) string {
	var b strings.Builder
	b.WriteString(`SELECT c.column_name AS "Field", qf_mysql_type(c.data_type) AS "Type", `)
	if full {
		b.WriteString(`CASE WHEN c.data_type = 'VARCHAR' THEN 'utf8mb4_general_ci' END AS "Collation", `)
	}
	b.WriteString(`CASE WHEN c.is_nullable THEN 'YES' ELSE 'NO' END AS "Null", ` +
		`coalesce((SELECT CASE WHEN bool_or(k.constraint_type = 'PRIMARY KEY') THEN 'PRI' ELSE 'UNI' END ` +
		`FROM duckdb_constraints() k WHERE k.database_name = c.database_name AND k.schema_name = c.schema_name ` +
		`AND k.table_name = c.table_name AND (k.constraint_type = 'PRIMARY KEY' AND list_contains(k.constraint_column_names, c.column_name) ` +
		`OR k.constraint_type = 'UNIQUE' AND k.constraint_column_names = [c.column_name])), '') AS "Key", ` +
		`c.column_default AS "Default", '' AS "Extra"`)
	if full {
		b.WriteString(`, 'select,insert,update,references' AS "Privileges", coalesce(c.comment, '') AS "Comment"`)
	}
	b.WriteString(" FROM duckdb_columns() c WHERE " + ofTable(db, table) + " ORDER BY c.column_index")
	return b.String()
}

// createTableSQL is SHOW CREATE TABLE table as a SELECT: the table in MySQL's syntax, its
// columns (types as SHOW COLUMNS gives them, NOT NULL, DEFAULT), then its primary key and
// unique keys.
func createTableSQL(db, table string) string {
	const nl = "chr(10)"
	tick := func(expr string) string { return "'`' || replace(" + expr + ", '`', '``') || '`'" }
	keys := `(SELECT string_agg(',' || ` + nl + ` || CASE WHEN k.constraint_type = 'PRIMARY KEY' THEN '  PRIMARY KEY (' ` +
		`ELSE '  UNIQUE KEY ' || ` + tick("k.constraint_column_names[1]") + ` || ' (' END || ` +
		`array_to_string(list_transform(k.constraint_column_names, x -> ` + tick("x") + `), ',') || ')', '' ` +
		`ORDER BY k.constraint_type <> 'PRIMARY KEY', k.constraint_index) FROM duckdb_constraints() k ` +
		`WHERE k.database_name = any_value(c.database_name) AND k.schema_name = any_value(c.schema_name) ` +
		`AND k.table_name = any_value(c.table_name) AND k.constraint_type IN ('PRIMARY KEY', 'UNIQUE'))`
	return `SELECT any_value(c.table_name) AS "Table", 'CREATE TABLE ' || ` + tick("any_value(c.table_name)") + ` || ' (' || ` + nl +
		` || string_agg('  ' || ` + tick("c.column_name") + ` || ' ' || qf_mysql_type(c.data_type) || ` +
		`CASE WHEN c.is_nullable THEN '' ELSE ' NOT NULL' END || ` +
		`CASE WHEN c.column_default IS NOT NULL THEN ' DEFAULT ' || c.column_default WHEN c.is_nullable THEN ' DEFAULT NULL' ELSE '' END, ` +
		`',' || ` + nl + ` ORDER BY c.column_index) || coalesce(` + keys + `, '') || ` + nl + ` || ')' AS "Create Table" ` +
		`FROM duckdb_columns() c WHERE ` + ofTable(db, table)
}

// missingTable finds the table DuckDB's catalog error names.
var missingTable = regexp.MustCompile(`Table with name (.+?) does not exist`)

// showError is err as a MySQL client's SHOW or DESCRIBE (client, run as rewritten) gets it: a
// table that does not exist is MySQL's message, not DuckDB's with the rewritten statement's text.
func showError(client, rewritten *query.Request, err error) error {
	var qe *query.Error
	if !isMySQL(client) || rewritten == nil || rewritten.SQL == client.SQL || !errors.As(err, &qe) || qe.Code != sqlstate.UndefinedTable ||
		!sqltok.FirstKeywordIs(client.SQL, sqltok.MySQL, "show", "describe", "desc", "explain") {
		return err
	}
	m := missingTable.FindStringSubmatch(qe.Message)
	if m == nil {
		return err
	}
	return &query.Error{Code: qe.Code, Message: "Table '" + m[1] + "' doesn't exist"}
}
