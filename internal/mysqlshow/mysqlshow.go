// Package mysqlshow answers MySQL's catalog statements on an engine that does not speak MySQL:
// it reads the statement and writes the SELECT that answers it with MySQL's columns, from
// relations each engine writes on its own catalog (Catalog). The mariadb CLI, GUI tools and
// ORMs' reflection ask them; the engine would read them otherwise or not at all.
//
//   - SHOW [FULL] TABLES [{FROM|IN} db] [LIKE 'p' | WHERE ...]: Tables_in_<db> [, Table_type];
//   - SHOW {DATABASES|SCHEMAS} [LIKE 'p' | WHERE ...]: Database;
//   - SHOW [FULL] {COLUMNS|FIELDS} {FROM|IN} t [{FROM|IN} db] [LIKE 'p' | WHERE ...],
//     DESCRIBE t [col], DESC t, EXPLAIN t: Field, Type, Null, Key, Default, Extra (FULL adds
//     Collation, Privileges and Comment), types as MySQL 8.0.11 writes them;
//   - SHOW CREATE TABLE t: Table, Create Table (MySQL's syntax, with its keys);
//   - SHOW {INDEX|INDEXES|KEYS} {FROM|IN} t [{FROM|IN} db] [WHERE ...], on a catalog that lists
//     indexes (IndexCatalog): MariaDB's columns, a row per column of each key and index;
//   - SHOW TABLE STATUS [{FROM|IN} db] [LIKE 'p' | WHERE ...], on a catalog that answers it
//     (StatusCatalog): MariaDB's columns.
//   - SHOW [STORAGE] ENGINES, SHOW CREATE {DATABASE|SCHEMA} [IF NOT EXISTS] db, and on a
//     catalog without triggers, routines or events (RoutinelessCatalog) SHOW TRIGGERS, SHOW
//     {PROCEDURE|FUNCTION} STATUS and SHOW EVENTS, empty (admin.go).
//
// Any other SHOW is refused with MySQL's 1235 naming it, never the engine's parser error: SHOW
// VARIABLES, COLLATION, CHARACTER SET, WARNINGS and ERRORS are the MySQL frontend's to answer,
// and reach no engine.
//
// It only reads and writes text: no I/O, no time, no tasks.
package mysqlshow

import (
	"cmp"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Catalog is what an engine writes on its own catalog for the statements above. db is a MySQL
// database as the client named it ("" for the current one); each relation is a SELECT with
// exactly the columns named.
type Catalog interface {
	// Engine names the engine in the refusal of a SHOW it does not answer.
	Engine() string
	// Tables: table_name, table_type ('BASE TABLE' or 'VIEW') of db's tables.
	Tables(db string) string
	// Databases: name, of every database the client may USE.
	Databases() string
	// Columns: tbl (the table's name as the catalog spells it), name, type (MySQL's), nullable
	// (boolean), key ('PRI', 'UNI' or ''), dflt (MySQL's text of the default, or NULL), extra
	// ('auto_increment' or ''), comment, pos (the column's order). A table that does not exist
	// is the engine's undefined-table error when the relation runs.
	Columns(db, table string) string
	// Keys: kind ('PRIMARY KEY' or 'UNIQUE'), name, cols (the key's columns, `quoted` and
	// joined by commas), pos (the key's order), of the table's primary key and unique keys.
	Keys(db, table string) string
	// Literal writes v as the engine's string literal.
	Literal(v string) string
	// Condition writes a MySQL WHERE condition (its text) on a result with columns as the
	// engine reads it (MySQL reads the columns' names in any case).
	Condition(where string, columns []string) string
}

// IndexCatalog is a Catalog that also lists a table's indexes, for SHOW {INDEX | INDEXES |
// KEYS} {FROM | IN} t [{FROM | IN} db] [WHERE ...]: Table, Non_unique, Key_name, Seq_in_index,
// Column_name, Collation, Cardinality, Sub_part, Packed, Null, Index_type, Comment,
// Index_comment, Ignored, as MariaDB answers it. An engine whose catalog is not one refuses the
// statement as any other SHOW.
type IndexCatalog interface {
	Catalog
	// Indexes: tbl (the table's name as the catalog spells it), key_name (PRIMARY for the
	// primary key), non_unique (boolean), seq (the column's place in the key, from 1),
	// column_name, nullable (boolean), cardinality (a count of rows, or NULL), pos (the key's
	// order: the primary key first), one row per column of each key and index. A table that
	// does not exist is the engine's undefined-table error when the relation runs.
	Indexes(db, table string) string
}

// StatusCatalog is a Catalog that also answers SHOW TABLE STATUS [{FROM | IN} db] [LIKE 'p' |
// WHERE ...] with MariaDB's columns (Name, Engine, Version, Row_format, Rows, ..., Auto_increment,
// ..., Comment, Max_index_length, Temporary): a table is an InnoDB one, a view has NULLs and
// the comment VIEW, as in MariaDB.
type StatusCatalog interface {
	Catalog
	// TableStatus: name, view (boolean), rows (a count or estimate), auto_increment (the
	// next AUTO_INCREMENT value, or NULL), comment, of db's tables and views.
	TableStatus(db string) string
}

// CreateCatalog is a Catalog whose SHOW CREATE TABLE writes all MariaDB writes of a table
// (the keys, indexes and foreign keys ORMs' reflection reads back, the options mariadb-dump
// restores): its unique keys and plain indexes made by CREATE INDEX, its foreign keys, and
// its options.
type CreateCatalog interface {
	Catalog
	// Indexes and foreign keys: kind ('UNIQUE KEY', 'KEY' or 'FOREIGN KEY'), name, cols (as
	// Keys'), refs (a foreign key's referenced table and columns as MySQL writes them after
	// REFERENCES: `t` (`id`); NULL for the others), pos (the order within a kind), of the
	// table's CREATE INDEX indexes and foreign keys.
	OtherKeys(db, table string) string
	// TableOptions: one row, one column options: what follows the table's closing
	// parenthesis (ENGINE=InnoDB AUTO_INCREMENT=11 DEFAULT CHARSET=...), with its space.
	TableOptions(db, table string) string
}

// SQL is sqlText's SELECT on cat when it is one of the statements above (ok), or the error
// refusing another SHOW; db names the client's database in Tables_in_<db>.
func SQL(sqlText, db string, cat Catalog) (out string, ok bool, err error) {
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
	r := &reader{all: all, sig: sig, at: 1, cat: cat}
	switch strings.ToLower(all[sig[0]].Text) {
	case "describe", "desc", "explain":
		return r.describe()
	case "show":
		out, err := r.show(db)
		return out, err == nil, err
	}
	return "", false, nil
}

// IsCatalogStatement reports cheaply whether sqlText may be one of the statements above.
func IsCatalogStatement(sqlText string) bool {
	return sqltok.FirstKeywordIs(sqlText, sqltok.MySQL, "show", "describe", "desc", "explain")
}

// reader reads a statement's significant tokens from at on.
type reader struct {
	all []sqltok.Token
	sig []int
	at  int
	cat Catalog
}

func (r *reader) done() bool { return r.at >= len(r.sig) }

func (r *reader) tok(k int) sqltok.Token {
	if k >= len(r.sig) {
		return sqltok.Token{}
	}
	return r.all[r.sig[k]]
}

// word consumes the next token when it is one of words (ignoring case) and says which.
func (r *reader) word(words ...string) string {
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
func (r *reader) name() (string, bool) {
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
func (r *reader) literal() (string, bool) {
	t := r.tok(r.at)
	if t.Kind != sqltok.String || t.Unterminated || len(t.Text) < 2 || (t.Text[0] != '\'' && t.Text[0] != '"') {
		return "", false
	}
	return sqltok.MySQLStringValue(t.Text), true
}

// table consumes a table name, db.t or t.
func (r *reader) table() (db, table string, ok bool) {
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

// filter consumes what may end a SHOW: LIKE 'pattern' (on columns[0]), or WHERE and the
// rest, wrapped around the SELECT base, whose columns are columns; ok is false for anything
// else.
func (r *reader) filter(base string, columns []string) (string, bool) {
	if r.done() {
		return base, true
	}
	switch r.word("like", "where") {
	case "like":
		v, ok := r.literal()
		if !ok || r.at+1 != len(r.sig) {
			return "", false
		}
		return r.like(base, columns[0], v), true
	case "where":
		var rest strings.Builder
		for _, t := range r.all[r.sig[r.at-1]+1:] {
			rest.WriteString(t.Text)
		}
		return "SELECT * FROM (" + base + ") AS s WHERE " + r.cat.Condition(strings.TrimRight(strings.TrimSpace(rest.String()), ";"), columns), true
	}
	return "", false
}

// like is base's rows whose column matches MySQL's LIKE pattern (\ escapes, as in MySQL).
func (r *reader) like(base, column, pattern string) string {
	return "SELECT * FROM (" + base + ") AS s WHERE " + quoteIdent(column) + " LIKE " + r.cat.Literal(pattern) + ` ESCAPE '\'`
}

func (r *reader) show(db string) (string, error) {
	full := r.word("full") != ""
	if !full {
		if out, ok := r.showAdmin(); ok {
			return out, nil
		}
	}
	switch r.word("tables", "databases", "schemas", "columns", "fields", "create", "index", "indexes", "keys", "table") {
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
		base += " FROM (" + r.cat.Tables(named) + ") AS t ORDER BY 1"
		if out, ok := r.filter(base, []string{col, "Table_type"}); ok {
			return out, nil
		}
	case "databases", "schemas":
		if full {
			break
		}
		if out, ok := r.filter(`SELECT name AS "Database" FROM (`+r.cat.Databases()+`) AS d ORDER BY 1`, []string{"Database"}); ok {
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
		if out, ok := r.filter(columnsSQL(r.cat.Columns(tdb, table), full), columnNames); ok {
			return out, nil
		}
	case "table":
		sc, ok := r.cat.(StatusCatalog)
		if !ok || full || r.word("status") == "" {
			break
		}
		named := ""
		if r.word("from", "in") != "" {
			if named, ok = r.name(); !ok {
				break
			}
		}
		if out, ok := r.filter(statusSQL(sc.TableStatus(named)), statusColumns); ok {
			return out, nil
		}
	case "index", "indexes", "keys":
		ic, ok := r.cat.(IndexCatalog)
		if !ok || full || r.word("from", "in") == "" {
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
		if r.done() || r.tok(r.at).IsWord("where") {
			if out, ok := r.filter(indexSQL(ic.Indexes(tdb, table)), indexColumns); ok {
				return out, nil
			}
		}
	case "create":
		if r.word("database", "schema") != "" {
			if out, ok := r.createDatabase(); ok {
				return out, nil
			}
			break
		}
		if r.word("table") == "" {
			break
		}
		tdb, table, ok := r.table()
		if ok && r.done() {
			other, options := "", ""
			if cc, ok := r.cat.(CreateCatalog); ok {
				other, options = cc.OtherKeys(tdb, table), cc.TableOptions(tdb, table)
			}
			return createTableSQL(r.cat.Columns(tdb, table), r.cat.Keys(tdb, table), other, options), nil
		}
	}
	return "", r.unsupported()
}

// describe reads DESCRIBE t [col] (EXPLAIN t): any other DESCRIBE or EXPLAIN (of a query) is
// the engine's.
func (r *reader) describe() (string, bool, error) {
	if r.word(explained...) != "" {
		return "", false, nil
	}
	tdb, table, ok := r.table()
	if !ok {
		return "", false, nil
	}
	base := columnsSQL(r.cat.Columns(tdb, table), false)
	switch {
	case r.done():
		return base, true, nil
	case r.at+1 == len(r.sig):
		if col, isName := r.name(); isName {
			return "SELECT * FROM (" + base + `) AS s WHERE "Field" = ` + r.cat.Literal(col), true, nil
		}
		if v, ok := r.literal(); ok {
			return r.like(base, "Field", v), true, nil
		}
	}
	return "", false, nil
}

// explained are the words after DESCRIBE or EXPLAIN that start a query's plan, not a table.
var explained = []string{"select", "with", "insert", "update", "delete", "replace", "table", "values", "analyze",
	"format", "extended", "partitions", "for"}

// unsupported is MySQL's 1235 for a SHOW this engine does not answer, naming it by its first
// words.
func (r *reader) unsupported() error {
	var words []string
	for k := 0; k < len(r.sig) && k < 4; k++ {
		t := r.tok(k)
		if t.Kind != sqltok.Word {
			break
		}
		words = append(words, strings.ToUpper(t.Text))
	}
	return &query.Error{Code: sqlstate.FeatureNotSupported, Message: "This version of QueryFlux doesn't yet support '" +
		strings.Join(words, " ") + "' on " + r.cat.Engine() + " (it answers SHOW [FULL] TABLES, SHOW DATABASES, SHOW [FULL] COLUMNS, " +
		"DESCRIBE, SHOW CREATE TABLE, SHOW CREATE DATABASE, SHOW INDEX, SHOW ENGINES, SHOW VARIABLES, SHOW STATUS, SHOW COLLATION and SHOW CHARACTER SET)"}
}

// statusColumns are SHOW TABLE STATUS's columns, as MariaDB's.
var statusColumns = []string{"Name", "Engine", "Version", "Row_format", "Rows", "Avg_row_length", "Data_length",
	"Max_data_length", "Index_length", "Data_free", "Auto_increment", "Create_time", "Update_time", "Check_time",
	"Collation", "Checksum", "Create_options", "Comment", "Max_index_length", "Temporary"}

// statusSQL is SHOW TABLE STATUS on the TableStatus relation st.
func statusSQL(st string) string {
	table := func(v string) string { return "CASE WHEN view THEN NULL ELSE " + v + " END" }
	return `SELECT name AS "Name", ` + table("'InnoDB'") + ` AS "Engine", ` + table("10") + ` AS "Version", ` +
		table("'Dynamic'") + ` AS "Row_format", ` + table("rows") + ` AS "Rows", ` + table("0") + ` AS "Avg_row_length", ` +
		table("16384") + ` AS "Data_length", ` + table("0") + ` AS "Max_data_length", ` + table("0") + ` AS "Index_length", ` +
		table("0") + ` AS "Data_free", auto_increment AS "Auto_increment", NULL AS "Create_time", NULL AS "Update_time", ` +
		`NULL AS "Check_time", ` + table("'utf8mb4_general_ci'") + ` AS "Collation", NULL AS "Checksum", ` +
		table("''") + ` AS "Create_options", CASE WHEN view THEN 'VIEW' ELSE comment END AS "Comment", ` +
		table("0") + ` AS "Max_index_length", ` + table("'N'") + ` AS "Temporary" FROM (` + st + `) AS s ORDER BY name`
}

// indexColumns are SHOW INDEX's columns, as MariaDB's.
var indexColumns = []string{"Table", "Non_unique", "Key_name", "Seq_in_index", "Column_name", "Collation", "Cardinality",
	"Sub_part", "Packed", "Null", "Index_type", "Comment", "Index_comment", "Ignored"}

// indexSQL is SHOW INDEX on the Indexes relation idx.
func indexSQL(idx string) string {
	return `SELECT tbl AS "Table", CASE WHEN non_unique THEN 1 ELSE 0 END AS "Non_unique", key_name AS "Key_name", ` +
		`seq AS "Seq_in_index", column_name AS "Column_name", 'A' AS "Collation", cardinality AS "Cardinality", ` +
		`NULL AS "Sub_part", NULL AS "Packed", CASE WHEN nullable THEN 'YES' ELSE '' END AS "Null", 'BTREE' AS "Index_type", ` +
		`'' AS "Comment", '' AS "Index_comment", 'NO' AS "Ignored" FROM (` + idx + `) AS i ORDER BY pos, seq`
}

// columnNames are SHOW FULL COLUMNS' columns, Field first.
var columnNames = []string{"Field", "Type", "Collation", "Null", "Key", "Default", "Extra", "Privileges", "Comment"}

// columnsSQL is SHOW [FULL] COLUMNS on the Columns relation cols.
func columnsSQL(cols string, full bool) string {
	var b strings.Builder
	b.WriteString(`SELECT name AS "Field", type AS "Type", `)
	if full {
		b.WriteString(`CASE WHEN type = 'text' OR type LIKE '%char(%' THEN 'utf8mb4_general_ci' END AS "Collation", `)
	}
	// dflt is a literal, as SHOW CREATE TABLE writes it; SHOW COLUMNS says a string's value ('x' is x)
	b.WriteString(`CASE WHEN nullable THEN 'YES' ELSE 'NO' END AS "Null", key AS "Key", ` +
		`CASE WHEN dflt LIKE '''%''' AND length(dflt) > 1 THEN replace(substr(dflt, 2, length(dflt) - 2), '''''', '''') ELSE dflt END AS "Default", ` +
		`extra AS "Extra"`)
	if full {
		b.WriteString(`, 'select,insert,update,references' AS "Privileges", comment AS "Comment"`)
	}
	b.WriteString(" FROM (" + cols + ") AS c ORDER BY pos")
	return b.String()
}

// createTableSQL is SHOW CREATE TABLE on the Columns relation cols and the Keys relation keys:
// the table in MySQL's syntax, its columns (types as SHOW COLUMNS gives them, NOT NULL,
// DEFAULT, AUTO_INCREMENT), then its primary key and unique keys; with a CreateCatalog's
// OtherKeys relation other and TableOptions options (else ""), its unique and plain indexes
// and foreign keys after those, as MariaDB orders them, and its options.
func createTableSQL(cols, keys, other, options string) string {
	const nl = "chr(10)"
	keyLines := `(SELECT string_agg(',' || ` + nl + ` || CASE WHEN kind = 'PRIMARY KEY' THEN '  PRIMARY KEY (' ` +
		`ELSE '  UNIQUE KEY ' || ` + Tick("name") + ` || ' (' END || cols || ')', '' ORDER BY kind <> 'PRIMARY KEY', pos) ` +
		`FROM (` + keys + `) AS k)`
	if other != "" {
		keyLines = `concat(` + keyLines + `, (SELECT string_agg(',' || ` + nl + ` || CASE WHEN kind = 'FOREIGN KEY' ` +
			`THEN '  CONSTRAINT ' || ` + Tick("name") + ` || ' FOREIGN KEY (' || cols || ') REFERENCES ' || refs ` +
			`ELSE '  ' || kind || ' ' || ` + Tick("name") + ` || ' (' || cols || ')' END, '' ` +
			`ORDER BY CASE kind WHEN 'UNIQUE KEY' THEN 0 WHEN 'KEY' THEN 1 ELSE 2 END, pos) FROM (` + other + `) AS o))`
	}
	tail := nl + ` || ')'`
	if options != "" {
		tail += ` || coalesce((SELECT min(options) FROM (` + options + `) AS t), '')`
	}
	return `SELECT min(tbl) AS "Table", 'CREATE TABLE ' || ` + Tick("min(tbl)") + ` || ' (' || ` + nl +
		` || string_agg('  ' || ` + Tick("name") + ` || ' ' || type || ` +
		`CASE WHEN nullable THEN '' ELSE ' NOT NULL' END || ` +
		`CASE WHEN dflt IS NOT NULL THEN ' DEFAULT ' || dflt WHEN nullable THEN ' DEFAULT NULL' ELSE '' END || ` +
		`CASE WHEN extra ILIKE 'on update %' THEN ' ON UPDATE ' || substr(extra, 11) WHEN extra <> '' THEN ' ' || upper(extra) ELSE '' END, ',' || ` + nl + ` ORDER BY pos) || coalesce(` + keyLines + `, '') || ` +
		tail + ` AS "Create Table" FROM (` + cols + `) AS c`
}

// Tick is the SQL expression writing the text expression expr as a MySQL `quoted` name.
func Tick(expr string) string { return "'`' || replace(" + expr + ", '`', '``') || '`'" }

// quoteIdent writes name as a standard "quoted" identifier.
func quoteIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// MissingTable is MySQL's message for a table that does not exist, db.table or table.
func MissingTable(db, table string) string {
	if db == "" {
		return "Table '" + table + "' doesn't exist"
	}
	return "Table '" + db + "." + table + "' doesn't exist"
}
