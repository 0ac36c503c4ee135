package duckengine

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's CREATE TABLE as ORMs and mysqldump write it, which DuckDB's parser refuses,
// is written as DuckDB reads it (mysqlCreateTable):
//   - an AUTO_INCREMENT column takes its values from a sequence of its own (qf_ai_<table>,
//     starting at the table option AUTO_INCREMENT=n, else 1): DEFAULT nextval(...);
//   - TINYINT ... BIGINT [UNSIGNED] with a display width (INT(11)) is DuckDB's type of that
//     size, UNSIGNED its unsigned one (BIGINT UNSIGNED is UBIGINT), MEDIUMINT an INTEGER;
//   - TINYTEXT ... LONGTEXT are a VARCHAR, TINYBLOB ... LONGBLOB a BLOB;
//   - DATETIME and TIMESTAMP are a TIMESTAMP_S, (n) digits a TIMESTAMP_MS up to 3, else a
//     TIMESTAMP (datetimeType); TIME(n) a TIME;
//   - KEY and INDEX definitions are left out (DuckDB has no index in CREATE TABLE), UNIQUE
//     KEY name (cols) is UNIQUE (cols); a column's COMMENT, CHARACTER SET and COLLATE, and
//     the table's options (ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 ...) are left out;
//   - a text column (CHAR, VARCHAR, TEXT ...) is COLLATE NOCASE: MariaDB's default collations
//     (utf8mb4_general_ci) compare, sort, group and join text without regard to case, where
//     DuckDB's compare bytes. A binary one stays DuckDB's: the BINARY attribute, a _bin
//     collation or CHARACTER SET binary, of the column or the table. The collation is the
//     column's, as MariaDB's: a PostgreSQL or Trino client reading the table compares it so
//     too, and the tables they create compare by case. (DuckDB's default_collation would be
//     a connection's, but a locked database refuses to set it; its UNIQUE keys still compare
//     bytes, collation or not.)
//
// An INSERT into a table with such a column gets its ids as MariaDB gives them (autoinc.go)
// and returns its insert id in its command tag (where PostgreSQL has an oid), which the MySQL
// frontend sends in the OK packet and, when generated, hands back for LAST_INSERT_ID()
// (setLastInsertID).

// aiPrefix names the sequences of AUTO_INCREMENT columns.
const aiPrefix = "qf_ai_"

// mysqlCreateTable is a MySQL client's CREATE TABLE as the statements DuckDB runs for it (the
// sequence's, then the table's, without its foreign keys), the table's name and its foreign
// keys (added to the table's statement when it runs, or deferred: mysqlfkchecks.go); ok is
// false for any other statement, or one with nothing to translate. after are the statements
// that run once the table is created: its inline indexes and ON UPDATE marks (mysqlindexes.go).
func mysqlCreateTable(sqlText string) (stmts []string, table string, keys []tableKey, after []string, ok bool) {
	if !sqltok.FirstKeywordIs(sqlText, sqltok.MySQL, "create") {
		return nil, "", nil, nil, false
	}
	h, ok := readCreateTable(sqlText, sqltok.MySQL)
	if !ok {
		return nil, "", nil, nil, false
	}
	toks, name, at, temporary, ifNotExists := h.toks, h.name, h.open, h.temporary, h.ifNotExists
	table = identText(name[len(name)-1])
	defs, end := definitions(toks, at)
	if end < 0 {
		return nil, "", nil, nil, false
	}
	start, changed := tableOptions(toks[end+1:])
	binary := binaryCollation(toks[end+1:])
	ref := mysqlCompat(joinTokens(name)) // the table as DuckDB reads it
	var out []string
	var indexes []inlineKey
	caseless := map[string]bool{} // the NOCASE text columns
	aiColumn := ""
	var declared []declaredColumn // VARCHAR(n) and CHAR(n) columns (mysqldeclared.go)
	for _, d := range defs {
		if key, ok := readTableKey(d); ok && !temporary {
			keys, changed = append(keys, key), true
			continue
		}
		if ixName, cols, ok := inlineIndex(d); ok {
			indexes, changed = append(indexes, inlineKey{name: ixName, cols: cols}), true
			continue
		}
		text, ai, kept, dchanged := columnDefinition(d, binary)
		changed = changed || dchanged || !kept
		if !kept {
			continue
		}
		if ai {
			aiColumn = identText(d[0])
			text += " DEFAULT nextval('" + sequenceName(name) + "')"
		}
		if extra := onUpdateNow(d); extra != "" {
			after = append(after, onUpdateStatement(ref, identText(d[0]), extra))
		}
		if strings.Contains(text, "COLLATE NOCASE") {
			caseless[strings.ToLower(identText(d[0]))] = true
		}
		if c, ok := mysqlDeclaredColumn(d); ok {
			declared = append(declared, c)
		}
		out = append(out, text)
	}
	if !changed || temporary && aiColumn != "" {
		return nil, "", nil, nil, false
	}
	after = append(after, indexStatements(ref, table, indexes, map[string]bool{"primary": true})...)
	after = append(after, caselessKeyIndexes(ref, table, declaredKeys(defs), caseless)...)
	if !temporary {
		after = append(after, uniqueKeyNames(table, defs)...)
		if len(name) == 1 {
			after = append(after, mysqlDeclaredColumns(table, declared, nil)...)
		}
	}
	head := "CREATE "
	if temporary {
		head += "TEMPORARY "
	}
	head += "TABLE "
	if ifNotExists {
		head += "IF NOT EXISTS "
	}
	create := mysqlCompat(head + joinTokens(name) + " (" + strings.Join(out, ", ") + ")")
	if aiColumn == "" {
		return []string{create}, table, keys, after, true
	}
	seq := "SEQUENCE " + sequenceName(name) + " START " + strconv.FormatUint(start, 10)
	if ifNotExists {
		return []string{"CREATE " + strings.Replace(seq, "SEQUENCE ", "SEQUENCE IF NOT EXISTS ", 1), create}, table, keys, after, true
	}
	// A sequence left by a dropped table of the name goes; a table of the name that still
	// exists keeps its own (DuckDB refuses to drop it: dropSequenceRefused).
	return []string{"DROP SEQUENCE IF EXISTS " + sequenceName(name), "CREATE " + seq, create}, table, keys, after, true
}

// createTable is the head of a CREATE [TEMP | TEMPORARY] [UNLOGGED] TABLE [IF NOT EXISTS] name (
// statement: its significant tokens (a final ; dropped), the name's, and the index of the "(".
type createTable struct {
	toks, name             []sqltok.Token
	open                   int
	temporary, ifNotExists bool
}

// readCreateTable reads the head of sqlText, a CREATE TABLE in dialect d; ok is false for any
// other statement (CREATE TABLE ... AS among them).
func readCreateTable(sqlText string, d sqltok.Dialect) (h createTable, ok bool) {
	toks := sqltok.SignificantTokens(sqlText, d)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	at := 1
	word := func(w string) bool {
		if at < len(toks) && toks[at].Kind == sqltok.Word && strings.EqualFold(toks[at].Text, w) {
			at++
			return true
		}
		return false
	}
	h.temporary = word("temp") || word("temporary")
	word("unlogged")
	if !word("table") {
		return h, false
	}
	if h.ifNotExists = word("if"); h.ifNotExists && (!word("not") || !word("exists")) {
		return h, false
	}
	nameStart := at
	for at < len(toks) && toks[at].Text != "(" {
		at++
	}
	if at == len(toks) || at == nameStart {
		return h, false
	}
	h.toks, h.name, h.open = toks, toks[nameStart:at], at
	return h, true
}

// definitions splits the parenthesized list opening at toks[open] into its definitions (at
// its top level commas); end is the index of its closing parenthesis, -1 when it has none.
func definitions(toks []sqltok.Token, open int) (defs [][]sqltok.Token, end int) {
	depth, from := 0, open+1
	for i := open; i < len(toks); i++ {
		switch toks[i].Text {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				if i > from {
					defs = append(defs, toks[from:i])
				}
				return defs, i
			}
		case ",":
			if depth == 1 {
				defs = append(defs, toks[from:i])
				from = i + 1
			}
		}
	}
	return nil, -1
}

// tableOptions reads what follows a CREATE TABLE's definitions (MySQL's table options, all
// left out): the AUTO_INCREMENT option's start (1 without one), and whether there was any.
func tableOptions(toks []sqltok.Token) (start uint64, any bool) {
	start = 1
	for i, t := range toks {
		if t.Kind == sqltok.Word && strings.EqualFold(t.Text, "auto_increment") {
			j := i + 1
			if j < len(toks) && toks[j].Text == "=" {
				j++
			}
			if j < len(toks) {
				if n, err := strconv.ParseUint(toks[j].Text, 10, 64); err == nil && n > 0 {
					start = n
				}
			}
		}
	}
	return start, len(toks) > 0
}

// intTypes are MySQL's integer types, each with DuckDB's of its size, signed and unsigned.
var intTypes = map[string][2]string{"tinyint": {"TINYINT", "UTINYINT"}, "smallint": {"SMALLINT", "USMALLINT"},
	"mediumint": {"INTEGER", "UINTEGER"}, "int": {"INTEGER", "UINTEGER"}, "integer": {"INTEGER", "UINTEGER"},
	"bigint": {"BIGINT", "UBIGINT"}}

// columnDefinition writes one definition of a CREATE TABLE as DuckDB reads it (MySQL's text
// still: mysqlCompat reads the whole statement after): ai says it was AUTO_INCREMENT, kept is
// false for a KEY or INDEX, and changed whether anything was written otherwise.
func columnDefinition(d []sqltok.Token, binaryTable bool) (text string, ai, kept, changed bool) {
	is := func(i int, words ...string) bool {
		if i >= len(d) || d[i].Kind != sqltok.Word {
			return false
		}
		for _, w := range words {
			if strings.EqualFold(d[i].Text, w) {
				return true
			}
		}
		return false
	}
	switch {
	case is(0, "key", "index", "fulltext", "spatial"):
		return "", false, false, true
	case is(0, "unique") && is(1, "key", "index"):
		// UNIQUE KEY [name] (cols): DuckDB's UNIQUE (cols)
		i := 2
		for i < len(d) && d[i].Text != "(" {
			i++
		}
		return "UNIQUE " + joinTokens(d[i:]), false, true, true
	case is(0, "primary", "constraint", "check", "foreign"):
		return joinTokens(d), false, true, false
	}
	var out []sqltok.Token
	nocase := -1 // where COLLATE NOCASE goes: after a text column's type
	if is(1, "char", "varchar", "text", "tinytext", "mediumtext", "longtext", "nchar", "nvarchar") && !binaryTable {
		nocase = 2
		if is(1, "char", "varchar", "nchar", "nvarchar") && len(d) > 4 && d[2].Text == "(" && d[4].Text == ")" {
			nocase = 5
		}
	}
	for i := 0; i < len(d); i++ {
		t := d[i]
		if i == nocase {
			out = append(out, sqltok.Token{Kind: sqltok.Word, Text: "COLLATE NOCASE"})
		}
		switch {
		case i == 1 && t.Kind == sqltok.Word && intTypes[strings.ToLower(t.Text)] != [2]string{}:
			sizes := intTypes[strings.ToLower(t.Text)]
			if i+3 < len(d) && d[i+1].Text == "(" && d[i+3].Text == ")" {
				i += 3 // a display width
			}
			unsigned := false
			for ; is(i+1, "unsigned", "signed", "zerofill"); i++ {
				unsigned = unsigned || is(i+1, "unsigned")
			}
			typ := sizes[0]
			if unsigned {
				typ = sizes[1]
			}
			out = append(out, sqltok.Token{Kind: sqltok.Word, Text: typ})
			changed = true
		case i == 1 && is(i, "year"):
			// YEAR and YEAR(4) (mysqlyear.go): a USMALLINT, declared year(4) (mysqldeclared.go)
			if i+3 < len(d) && d[i+1].Text == "(" && d[i+3].Text == ")" {
				i += 3
			}
			out = append(out, sqltok.Token{Kind: sqltok.Word, Text: "USMALLINT"})
			changed = true
		case i == 1 && is(i, "tinytext", "mediumtext", "longtext", "tinyblob", "mediumblob", "longblob"):
			// MySQL's sizes of TEXT and BLOB (Django's TextField is a longtext): DuckDB's have none.
			typ := "VARCHAR"
			if strings.HasSuffix(strings.ToLower(t.Text), "blob") {
				typ = "BLOB"
			}
			out = append(out, sqltok.Token{Kind: sqltok.Word, Text: typ})
			changed = true
		case i == 1 && is(i, "datetime", "timestamp"):
			// DATETIME[(n)] and TIMESTAMP[(n)] keep MySQL's fractional digits (DuckDB's
			// TIMESTAMP has six): whole seconds are a TIMESTAMP_S, which the MySQL frontend
			// sends without a fraction, as MariaDB sends a DATETIME.
			typ, end := datetimeType(d, i)
			out = append(out, sqltok.Token{Kind: sqltok.Word, Text: typ})
			i, changed = end, true
		case i == 1 && is(i, "time") && i+3 < len(d) && d[i+1].Text == "(" && d[i+3].Text == ")":
			// TIME(n): DuckDB's TIME has six digits and takes no precision (Django's TimeField
			// is a time(6)); the MySQL frontend sends a whole second without them, as MariaDB's TIME.
			out = append(out, t)
			i, changed = i+3, true
		case is(i, "auto_increment"):
			ai, changed = true, true
		case i > 1 && is(i, "on") && is(i+1, "update") && is(i+2, "current_timestamp", "now", "localtimestamp", "localtime"):
			// ON UPDATE CURRENT_TIMESTAMP[(n)] (TypeORM's @UpdateDateColumn, Laravel's
			// useCurrentOnUpdate, mariadb-dump of such a column): DuckDB has no such clause and
			// the column is not set on UPDATE (left out, so the table is created at all).
			i += 2
			if i+1 < len(d) && d[i+1].Text == "(" {
				for i < len(d) && d[i].Text != ")" {
					i++
				}
			}
			changed = true
		case i > 1 && is(i, "default") && is(i+1, "true", "false"):
			// DEFAULT TRUE / FALSE is MySQL's 1 / 0 (SHOW COLUMNS' Default "0", not DuckDB's
			// CAST('f' AS BOOLEAN)); DuckDB's ALTER TABLE ... ADD of a column with a default
			// that is not a literal fails on a locked configuration.
			value := "0"
			if is(i+1, "true") {
				value = "1"
			}
			out = append(out, t, sqltok.Token{Kind: sqltok.Number, Text: value})
			i, changed = i+1, true
		case is(i, "comment") && i+1 < len(d) && d[i+1].Kind == sqltok.String:
			i, changed = i+1, true
		case is(i, "collate", "charset") && i+1 < len(d):
			if binaryName(d[i+1].Text) && nocase >= 0 {
				return columnDefinition(d, true)
			}
			i, changed = i+1, true
		case is(i, "character") && is(i+1, "set") && i+2 < len(d):
			if binaryName(d[i+2].Text) && nocase >= 0 {
				return columnDefinition(d, true)
			}
			i, changed = i+2, true
		case i > 1 && is(i, "binary"): // VARCHAR(n) BINARY: utf8mb4_bin
			if nocase >= 0 {
				return columnDefinition(d, true)
			}
			changed = true
		default:
			out = append(out, t)
		}
	}
	if nocase == len(d) {
		out = append(out, sqltok.Token{Kind: sqltok.Word, Text: "COLLATE NOCASE"})
	}
	return joinTokens(out), ai, true, changed || nocase >= 0
}

// binaryName reports whether a collation or character set compares bytes: utf8mb4_bin, binary.
func binaryName(name string) bool {
	name = strings.ToLower(strings.Trim(name, "`'\""))
	return name == "binary" || strings.HasSuffix(name, "_bin")
}

// binaryCollation reports whether a CREATE TABLE's options (toks) make its text columns
// compare bytes: [DEFAULT] COLLATE [=] x_bin, [DEFAULT] CHARSET [=] binary.
func binaryCollation(toks []sqltok.Token) bool {
	for i, t := range toks {
		if !t.IsWord("collate", "charset", "set") {
			continue
		}
		if j := i + 1; j < len(toks) && (toks[j].Text == "=" && j+1 < len(toks) && binaryName(toks[j+1].Text) || binaryName(toks[j].Text)) {
			return true
		}
	}
	return false
}

// identText is a name token's name: a `quoted` one unquoted.
func identText(t sqltok.Token) string {
	if t.Kind == sqltok.QuotedIdent && len(t.Text) >= 2 && t.Text[0] == '`' {
		return strings.ReplaceAll(t.Text[1:len(t.Text)-1], "``", "`")
	}
	return t.Text
}

// sequenceName is the sequence of the AUTO_INCREMENT column of the table name (db.t or t):
// qf_ai_ and the table's name in lower case, other than letters, digits and _ as _, in the
// table's database.
func sequenceName(name []sqltok.Token) string {
	table := []byte(strings.ToLower(identText(name[len(name)-1])))
	for i, c := range table {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			table[i] = '_'
		}
	}
	if len(name) == 3 && name[1].Text == "." {
		return identText(name[0]) + "." + aiPrefix + string(table)
	}
	return aiPrefix + string(table)
}

// dropSequenceRefused is the error of a CREATE TABLE whose table exists already: DuckDB
// refused to drop its sequence, which the table uses; PostgreSQL's error (MySQL's 1050).
func dropSequenceRefused(err error, table string) error {
	var qe *query.Error
	if errors.As(err, &qe) && strings.Contains(qe.Message, "Dependency Error") && strings.Contains(qe.Message, aiPrefix) {
		return &query.Error{Code: sqlstate.DuplicateTable, Message: "Table '" + table + "' already exists"}
	}
	return err
}

// mysqlOwnStatement is a MySQL client's CREATE TABLE that mysqlCreateTable translates, run as
// its statements in one transaction.
func mysqlOwnStatement(q *query.Request) (ownRun, bool) {
	if run, ok := mysqlAssignElsewhere(q); ok {
		return run, true
	}
	if run, ok := mysqlSelectVars(q); ok {
		return run, true
	}
	if run, ok := mysqlMultiWrite(q); ok {
		return run, true
	}
	if run, ok := mysqlDropIndex(q); ok {
		return run, true
	}
	if run, ok := mysqlDropTables(q); ok {
		return run, true
	}
	if run, ok := mysqlAddKey(q); ok {
		return run, true
	}
	if run, ok := mysqlRenameTable(q); ok {
		return run, true
	}
	if run, ok := mysqlAlterIndex(q); ok {
		return run, true
	}
	if run, ok := mysqlShowCreate(q); ok {
		return run, true
	}
	if run, ok := mysqlTruncate(q); ok {
		return run, true
	}
	if run, ok := mysqlDumpNoOp(q); ok {
		return run, true
	}
	if run, ok := mysqlAlterCounter(q); ok { // mysqlaltercounter.go
		return run, true
	}
	if run, ok := mysqlAlterTable(q); ok {
		return run, true
	}
	stmts, table, keys, after, ok := mysqlCreateTable(q.SQL)
	if !ok {
		return nil, false
	}
	return func(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
		keep, deferred, err := deferKeys(ctx, conn, table, keys)
		if err != nil {
			return nil, err
		}
		stmts := slices.Clone(stmts)
		stmts[len(stmts)-1] = withKeys(stmts[len(stmts)-1], keep)
		then := after
		if h, _ := readCreateTable(q.SQL, sqltok.MySQL); h.ifNotExists {
			if exists, err := tableExists(ctx, conn, table); err != nil {
				return nil, err
			} else if exists { // the table's declaration stays the one it was created with
				then = slices.DeleteFunc(slices.Clone(after), isDeclaredColumnsStatement)
			} else {
				stmts = freshSequence(stmts)
			}
		}
		stmts = append(stmts, then...)
		if len(keys) > 0 {
			stmts = append(stmts, foreignKeyNames(table, keys)...)
		}
		if err := runAll(ctx, conn, stmts, inTx); err != nil {
			return nil, dropSequenceRefused(err, table)
		}
		if err := noteDeferred(ctx, conn, table, deferred); err != nil {
			return nil, err
		}
		if err := applyKeysTo(ctx, conn, table, inTx); err != nil {
			return nil, err
		}
		return engine.TagRows("CREATE TABLE"), nil
	}, true
}

// freshSequence is a CREATE TABLE IF NOT EXISTS's statements when the table does not exist:
// its AUTO_INCREMENT sequence created anew, not the one a dropped table of the name left
// (Sequelize's sync({force}) drops a table and creates it IF NOT EXISTS: its ids went on from
// the dropped table's where MariaDB's start at 1, or at AUTO_INCREMENT=n).
func freshSequence(stmts []string) []string {
	rest, ok := strings.CutPrefix(stmts[0], "CREATE SEQUENCE IF NOT EXISTS ")
	if !ok {
		return stmts
	}
	name, _, _ := strings.Cut(rest, " ")
	return append([]string{"DROP SEQUENCE IF EXISTS " + name, "CREATE SEQUENCE " + rest}, stmts[1:]...)
}

// mysqlTruncate is a MySQL client's TRUNCATE [TABLE] t, run as MySQL runs it: the table
// emptied, its AUTO_INCREMENT counter back at 1 (MariaDB's, even for a table created with
// AUTO_INCREMENT=n), and no rows counted (MySQL's OK says 0 rows affected; DuckDB's
// TRUNCATE counts the rows it removed). DuckDB cannot set a sequence back, so the counter's
// offset (autoinc.go) goes down by what the sequence had given.
func mysqlTruncate(q *query.Request) (ownRun, bool) {
	if !sqltok.FirstKeywordIs(q.SQL, sqltok.MySQL, "truncate") {
		return nil, false
	}
	toks := sqltok.SignificantTokens(q.SQL, sqltok.MySQL)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	i := 1
	if i < len(toks) && toks[i].IsWord("table") {
		i++
	}
	isName := func(i int) bool {
		return i < len(toks) && (toks[i].Kind == sqltok.Word || toks[i].Kind == sqltok.QuotedIdent && toks[i].Text[0] == '`')
	}
	if !isName(i) {
		return nil, false
	}
	db, table := "", identText(toks[i])
	if i+2 < len(toks) && toks[i+1].Text == "." && isName(i+2) {
		db, table = table, identText(toks[i+2])
		i += 2
	}
	if i+1 != len(toks) {
		return nil, false // another form (TRUNCATE a, b is not MySQL's): DuckDB's to read
	}
	return func(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
		return ownTransaction(ctx, conn, inTx, func() (query.Rows, error) {
			if _, err := conn.ExecContext(ctx, "TRUNCATE "+tableRef(db, table)); err != nil {
				return nil, wrapErr(err)
			}
			if col, ok := lookupAI(ctx, conn, db, table); ok {
				if err := restartCounter(ctx, conn, col.seq); err != nil {
					return nil, wrapErr(err)
				}
			}
			return engine.TagRows("TRUNCATE TABLE"), nil
		})
	}, true
}

// restartCounter sets the AUTO_INCREMENT counter of sequence seq back to 1, as MariaDB's
// TRUNCATE does (whatever the table's AUTO_INCREMENT=n was).
func restartCounter(ctx context.Context, conn *sql.Conn, seq string) error {
	c, err := readCounter(ctx, conn, seq)
	if err != nil || c.value() == 1 {
		return err
	}
	_, err = conn.ExecContext(ctx, "COMMENT ON SEQUENCE "+seq+" IS "+sqltok.StandardString(aiOffsetComment+strconv.FormatInt(1-c.next, 10)))
	return err
}

// insertModifiers are the words between INSERT and its table's name.
var insertModifiers = map[string]bool{"low_priority": true, "delayed": true, "high_priority": true, "ignore": true, "into": true,
	"or": true, "replace": true} // INSERT OR IGNORE INTO and INSERT OR REPLACE INTO, as mysqlCompat writes INSERT IGNORE and REPLACE

// afterInsertModifiers is where the table's name is among an INSERT's (or REPLACE's)
// significant tokens: after the keyword and its modifiers.
func afterInsertModifiers(toks []sqltok.Token) int {
	i := 1
	for i < len(toks) && toks[i].Kind == sqltok.Word && insertModifiers[strings.ToLower(toks[i].Text)] {
		i++
	}
	return i
}

// insertTarget is the table ([db.]table) a MySQL client's INSERT or REPLACE (its significant
// tokens) writes; ok is false when it names none, or when the statement has a RETURNING,
// whose rows are the client's (the upsert's count and the AUTO_INCREMENT ids leave it as it is).
func insertTarget(toks []sqltok.Token) (db, table string, ok bool) {
	i := afterInsertModifiers(toks)
	if i >= len(toks) {
		return "", "", false
	}
	table = identText(toks[i])
	if i+2 < len(toks) && toks[i+1].Text == "." {
		db, table = table, identText(toks[i+2])
	}
	for _, t := range toks {
		if t.IsWord("returning") {
			return "", "", false
		}
	}
	return db, table, true
}

// setLastInsertID gives a MySQL client's statement that calls LAST_INSERT_ID() the value its
// session holds (the macro reads the connection's variable qf_last_insert_id, catalog.go).
func setLastInsertID(ctx context.Context, conn *sql.Conn, client *query.Request) error {
	if !isMySQL(client) || !containsFold(client.SQL, "last_insert_id") {
		return nil
	}
	_, err := conn.ExecContext(ctx, "SET VARIABLE qf_last_insert_id = "+strconv.FormatUint(client.LastInsertID, 10))
	return wrapErr(err)
}
