package duckengine

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// What a MySQL client's CREATE TABLE declares beside its columns and keys, kept as MariaDB keeps
// it (mysqlCreateTable runs these statements after the table's):
//   - KEY / INDEX [name] (cols) is a DuckDB index: SHOW INDEX, SHOW CREATE TABLE (KEY `name`),
//     SHOW COLUMNS (MUL) and information_schema.statistics list it under its MariaDB name.
//     DuckDB's index names are its schema's and MariaDB's its table's (mariadb-dump writes
//     `KEY user_id (user_id)` in every table with such a column), so the DuckDB index is named
//     <table>$<name> (mysqlIndexName), and read back without the prefix. An unnamed one is named
//     by its first column, _2, _3 ... after a name the table has, as MariaDB names it. A prefix
//     length (name(10)) and ASC/DESC are left out: DuckDB indexes whole values. DROP INDEX
//     name ON table drops it (mysqlDropIndex).
//   - ON UPDATE CURRENT_TIMESTAMP[(n)] marks the column with DuckDB's column comment
//     (onUpdateComment, MariaDB's Extra for it): an UPDATE that changes a row sets it
//     (mysqlupdate.go), SHOW COLUMNS and SHOW CREATE TABLE write it. (A MySQL column's own
//     COMMENT is left out, as before.)

// onUpdateComment starts the column comment of an ON UPDATE CURRENT_TIMESTAMP column: MariaDB's
// Extra for it, "on update current_timestamp()" or "on update current_timestamp(3)".
const onUpdateComment = "on update current_timestamp"

// mysqlIndexName is the SQL expression of a DuckDB index's MariaDB name (of duckdb_indexes()'s
// index_name and table_name): without its table's prefix.
const mysqlIndexName = `CASE WHEN starts_with(index_name, table_name || '$') THEN substr(index_name, length(table_name) + 2) ELSE index_name END`

// inlineIndex reads a CREATE TABLE definition KEY | INDEX [name] [USING t] (col [(n)] [ASC |
// DESC], ...) [USING t] [COMMENT '...']: its name ("" when not given) and its columns.
func inlineIndex(d []sqltok.Token) (name string, cols []string, ok bool) {
	if len(d) < 3 || !d[0].IsWord("key", "index") {
		return "", nil, false
	}
	i := 1
	if d[i].Text != "(" && !d[i].IsWord("using") {
		name, i = identText(d[i]), i+1
	}
	if i+1 < len(d) && d[i].IsWord("using") {
		i += 2
	}
	if i >= len(d) || d[i].Text != "(" {
		return "", nil, false
	}
	parts, end := definitions(d, i)
	if end < 0 {
		return "", nil, false
	}
	for _, p := range parts {
		if len(p) == 0 || p[0].Kind != sqltok.Word && p[0].Kind != sqltok.QuotedIdent {
			return "", nil, false // an expression: DuckDB's to refuse
		}
		cols = append(cols, identText(p[0]))
	}
	return name, cols, len(cols) > 0
}

// indexStatements are the CREATE INDEX statements of a CREATE TABLE's inline indexes (table:
// its name as DuckDB reads it, bare: unqualified); taken are the key names the table has
// already (its UNIQUE keys'), in lower case.
func indexStatements(table, bare string, indexes []inlineKey, taken map[string]bool) []string {
	var stmts []string
	for _, ix := range indexes {
		name := keyName(ix, taken)
		quoted := make([]string, len(ix.cols))
		for i, c := range ix.cols {
			quoted[i] = quoteIdent(c)
		}
		create := "CREATE INDEX IF NOT EXISTS "
		if ix.unique {
			create = "CREATE UNIQUE INDEX IF NOT EXISTS "
		}
		stmts = append(stmts, create+quoteIdent(bare+"$"+name)+" ON "+table+" ("+strings.Join(quoted, ", ")+")")
	}
	return stmts
}

// keyName is ix's name, as MariaDB names an unnamed one: by its first column, _2, _3 ...
// after a name of taken (the table's key names, lower case), which it joins.
func keyName(ix inlineKey, taken map[string]bool) string {
	name := ix.name
	if name == "" {
		name = ix.cols[0]
		for n := 2; taken[strings.ToLower(name)]; n++ {
			name = ix.cols[0] + "_" + strconv.Itoa(n)
		}
	}
	taken[strings.ToLower(name)] = true
	return name
}

// inlineKey is a KEY / INDEX definition of a CREATE TABLE, or a UNIQUE key an ALTER TABLE adds.
type inlineKey struct {
	name   string // "" when not given
	cols   []string
	unique bool
}

// onUpdateNow reads a column definition's ON UPDATE CURRENT_TIMESTAMP[(n)] (NOW(n),
// LOCALTIMESTAMP, LOCALTIME): MariaDB's Extra for it, "" when it has none.
func onUpdateNow(d []sqltok.Token) string {
	for i := 1; i+2 < len(d); i++ {
		if !d[i].IsWord("on") || !d[i+1].IsWord("update") || !d[i+2].IsWord("current_timestamp", "now", "localtimestamp", "localtime") {
			continue
		}
		digits := ""
		if i+5 < len(d) && d[i+3].Text == "(" && d[i+4].Kind == sqltok.Number && d[i+5].Text == ")" && d[i+4].Text != "0" {
			digits = d[i+4].Text
		}
		return onUpdateComment + "(" + digits + ")"
	}
	return ""
}

// onUpdateStatement marks column col of table (as DuckDB reads it) ON UPDATE CURRENT_TIMESTAMP.
func onUpdateStatement(table, col, extra string) string {
	return "COMMENT ON COLUMN " + table + "." + quoteIdent(col) + " IS " + sqltok.StandardString(extra)
}

// mysqlDropIndex is a MySQL client's DROP INDEX name ON table (unqualified) of an index that
// table's CREATE TABLE declared (table$name); any other DROP INDEX is left to mysqlCompat
// (the name alone, DuckDB's index names being its schema's).
func mysqlDropIndex(q *query.Request) (ownRun, bool) {
	if !sqltok.FirstKeywordIs(q.SQL, sqltok.MySQL, "drop") {
		return nil, false
	}
	toks := sqltok.SignificantTokens(q.SQL, sqltok.MySQL)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	isName := func(t sqltok.Token) bool {
		return t.Kind == sqltok.Word || t.Kind == sqltok.QuotedIdent && t.Text[0] == '`' && !t.Unterminated
	}
	if len(toks) != 5 || !toks[1].IsWord("index") || !isName(toks[2]) || !toks[3].IsWord("on") || !isName(toks[4]) {
		return nil, false
	}
	name, table := identText(toks[2]), identText(toks[4])
	return func(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
		return dropIndex(ctx, conn, table, name)
	}, true
}

// dropIndex drops table's index name: the one its CREATE TABLE or ALTER TABLE declared
// (table$name), else the index of that name.
func dropIndex(ctx context.Context, conn *sql.Conn, table, name string) (query.Rows, error) {
	var declared bool
	if err := conn.QueryRowContext(ctx, "SELECT count(*) > 0 FROM duckdb_indexes() WHERE database_name = current_database() "+
		"AND schema_name = current_schema() AND index_name = ? AND lower(table_name) = lower(?)", table+"$"+name, table).Scan(&declared); err != nil {
		return nil, wrapErr(err)
	}
	duckName := name
	if declared {
		duckName = table + "$" + name
	}
	if err := neededByForeignKey(ctx, conn, table, name, duckName); err != nil {
		return nil, err
	}
	stmt := "DROP INDEX " + quoteIdent(duckName)
	// and the key's caseless index, when an ALTER TABLE or CREATE UNIQUE INDEX added it (mysqladdkey.go)
	for _, s := range []string{stmt, "DROP INDEX IF EXISTS " + quoteIdent(table+"$qf_ci_"+name)} {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return nil, wrapErr(err)
		}
	}
	return engine.TagRows("DROP INDEX"), nil
}

// mysqlAlterIndex is a MySQL client's ALTER TABLE t ADD {INDEX | KEY} [name] (cols) (Laravel's
// and Knex's index(), Flyway scripts) or ALTER TABLE t DROP {INDEX | KEY} name, one action, t
// unqualified: the index as an inline KEY's (t$name), dropped as DROP INDEX name ON t is. DuckDB
// read neither (1064).
func mysqlAlterIndex(q *query.Request) (ownRun, bool) {
	if !sqltok.FirstKeywordIs(q.SQL, sqltok.MySQL, "alter") {
		return nil, false
	}
	toks := sqltok.SignificantTokens(q.SQL, sqltok.MySQL)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	if len(toks) < 6 || !toks[1].IsWord("table") || toks[2].Kind != sqltok.Word && toks[2].Kind != sqltok.QuotedIdent || !toks[4].IsWord("index", "key") {
		return nil, false
	}
	table := identText(toks[2])
	switch {
	case toks[3].IsWord("drop") && len(toks) == 6:
		name := identText(toks[5])
		return func(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
			if _, err := dropIndex(ctx, conn, table, name); err != nil {
				return nil, err
			}
			return engine.TagRows("ALTER TABLE"), nil
		}, true
	case toks[3].IsWord("add"):
		name, cols, ok := inlineIndex(toks[4:])
		if !ok || toks[len(toks)-1].Text != ")" && !toks[len(toks)-1].IsWord("btree", "hash") {
			return nil, false // more than one action, or options: DuckDB's to read
		}
		stmts := indexStatements(quoteIdent(table), table, []inlineKey{{name: name, cols: cols}}, map[string]bool{})
		return func(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
			if err := runAll(ctx, conn, stmts, inTx); err != nil {
				return nil, err
			}
			return engine.TagRows("ALTER TABLE"), nil
		}, true
	}
	return nil, false
}

// A MySQL client's PRIMARY KEY and UNIQUE keys over text columns compare without regard to case,
// as under MariaDB's default collation ('A' then 'a' into a UNIQUE email is 1062 there). DuckDB's
// keys compare bytes whatever the column's collation (its ART ignores NOCASE), so a key with a
// NOCASE column gets beside it a unique index of lower() of those columns (caselessKeyIndexes):
// DuckDB refuses the second row, and INSERT OR IGNORE / ON CONFLICT with the key as its target
// (upsert.go names it) find the row in either case. The index is named <table>$qf_ci_<n>, and
// left out where MariaDB's keys are listed (caselessIndex). The key itself stays, for the
// conflict targets and SHOW CREATE TABLE.

// caselessIndex is the SQL condition that index_name (of duckdb_indexes()) is such an index.
const caselessIndex = `contains(index_name, '$qf_ci_')`

// declaredKeys are the PRIMARY KEY and UNIQUE keys of a CREATE TABLE's definitions (defs), each
// its columns' names: a column's own PRIMARY KEY or UNIQUE, and the table's.
func declaredKeys(defs [][]sqltok.Token) [][]string {
	var keys [][]string
	for _, d := range defs {
		at := 0
		if len(d) > 2 && d[0].IsWord("constraint") {
			at = 2 // CONSTRAINT name PRIMARY KEY / UNIQUE (cols)
		}
		switch {
		case at < len(d) && (d[at].IsWord("primary") || d[at].IsWord("unique")):
			i := at + 1
			for i < len(d) && d[i].Text != "(" {
				i++
			}
			parts, end := definitions(d, i)
			if end < 0 {
				continue
			}
			var cols []string
			for _, p := range parts {
				if len(p) > 0 {
					cols = append(cols, identText(p[0]))
				}
			}
			keys = append(keys, cols)
		case d[0].IsWord("key", "index", "fulltext", "spatial", "check", "foreign"):
		default:
			for i := 1; i < len(d); i++ {
				if d[i].IsWord("unique") || d[i].IsWord("primary") && i+1 < len(d) && d[i+1].IsWord("key") {
					keys = append(keys, []string{identText(d[0])})
					break
				}
			}
		}
	}
	return keys
}

// caselessKeyIndexes are the CREATE UNIQUE INDEX statements of the keys with a column of
// caseless (its NOCASE text columns, lower case); table as DuckDB reads it, bare unqualified.
func caselessKeyIndexes(table, bare string, keys [][]string, caseless map[string]bool) []string {
	var stmts []string
	for _, key := range keys {
		if stmt, ok := caselessKeyIndex(table, bare+"$qf_ci_"+strconv.Itoa(len(stmts)+1), key, caseless); ok {
			stmts = append(stmts, stmt)
		}
	}
	return stmts
}

// caselessKeyIndex is the CREATE UNIQUE INDEX statement of the index name beside key (its
// columns) when a column of it is one of caseless.
func caselessKeyIndex(table, name string, key []string, caseless map[string]bool) (string, bool) {
	exprs, any := make([]string, len(key)), false
	for i, c := range key {
		exprs[i] = quoteIdent(c)
		if caseless[strings.ToLower(c)] {
			exprs[i], any = "lower("+quoteIdent(c)+")", true
		}
	}
	return "CREATE UNIQUE INDEX IF NOT EXISTS " + quoteIdent(name) + " ON " + table + " (" + strings.Join(exprs, ", ") + ")", any
}

// mysqlRenameTable is a MySQL client's ALTER TABLE a RENAME [TO | AS] b or RENAME TABLE a TO b
// [, c TO d ...] (unqualified names), the pairs renamed in order, in one transaction, as
// MariaDB's RENAME TABLE is atomic. DuckDB refuses to rename a table with indexes ("Cannot
// alter entry ... because there are entries that depend on it": a KEY, or a text key's
// caseless index, makes most MySQL tables such): its indexes are dropped around the rename and
// created again on the new name, a declared one (a$name) as b$name. A table a foreign key
// involves is created again under the new name (pgrebuild.go), with the tables referencing it,
// their keys referencing the new name, as MariaDB's follow it: DuckDB renames no referenced
// table, and a referencing one renamed in place leaves its parent unable to be dropped.
func mysqlRenameTable(q *query.Request) (ownRun, bool) {
	if !containsFold(q.SQL, "rename") || !sqltok.FirstKeywordIs(q.SQL, sqltok.MySQL, "alter", "rename") {
		return nil, false
	}
	renames, ok := readTableRenames(q.SQL)
	if !ok {
		return nil, false
	}
	return func(ctx context.Context, conn *sql.Conn, inTx bool) (rows query.Rows, err error) {
		if !inTx {
			if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
				return nil, wrapErr(err)
			}
			defer func() {
				if err != nil {
					_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
				} else if _, cerr := conn.ExecContext(ctx, "COMMIT"); cerr != nil {
					rows, err = nil, wrapErr(cerr)
				}
			}()
		}
		for _, r := range renames {
			stmts, err := r.statements(ctx, conn)
			if err != nil {
				return nil, err
			}
			if err := runAll(ctx, conn, stmts, true); err != nil {
				return nil, err
			}
		}
		return engine.TagRows("ALTER TABLE"), nil
	}, true
}

// tableRename is one pair of a RENAME TABLE: the table from, named to (unquoted).
type tableRename struct{ from, to string }

// readTableRenames reads sqlText as ALTER TABLE a RENAME [TO | AS] b or RENAME TABLE a TO b
// [, c TO d ...]; ok is false for any other statement.
func readTableRenames(sqlText string) (renames []tableRename, ok bool) {
	toks := sqltok.SignificantTokens(sqlText, sqltok.MySQL)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	isName := func(t sqltok.Token) bool {
		return t.Kind == sqltok.Word || t.Kind == sqltok.QuotedIdent && t.Text[0] == '`' && !t.Unterminated
	}
	pair := func(from, to sqltok.Token) bool {
		if !isName(from) || !isName(to) {
			return false
		}
		renames = append(renames, tableRename{from: identText(from), to: identText(to)})
		return true
	}
	switch {
	case len(toks) == 6 && toks[0].IsWord("alter") && toks[1].IsWord("table") && toks[3].IsWord("rename") && toks[4].IsWord("to", "as"):
		return renames, pair(toks[2], toks[5])
	case len(toks) == 5 && toks[0].IsWord("alter") && toks[1].IsWord("table") && toks[3].IsWord("rename") && isName(toks[4]) && !toks[4].IsWord("column", "index", "key", "constraint"):
		return renames, pair(toks[2], toks[4])
	case len(toks) >= 5 && toks[0].IsWord("rename") && toks[1].IsWord("table"):
		for i := 2; ; i += 4 {
			if i+3 > len(toks) || !toks[i+1].IsWord("to") || !pair(toks[i], toks[i+2]) {
				return nil, false
			}
			if i+3 == len(toks) {
				return renames, true
			}
			if toks[i+3].Text != "," {
				return nil, false
			}
		}
	}
	return nil, false
}

// statements rename r.from (in the current database) as the catalog is now.
func (r tableRename) statements(ctx context.Context, conn *sql.Conn) ([]string, error) {
	renamed := renameAlter{table: r.from, to: r.to}
	// DuckDB keeps, in a referenced table, the name of each table referencing it, and renames
	// neither: a referencing table renamed in place leaves its parents unable to be dropped
	// ("main key table of the table"). So a table a key involves is created again (with the
	// tables referencing it), which DuckDB's parents follow.
	if family, ok, err := tableFamily(ctx, conn, "", r.from); err != nil {
		return nil, err
	} else if ok {
		if err := tableMissingOrTaken(ctx, conn, r); err != nil {
			return nil, err
		}
		index := func(t familyTable, create string) string {
			if !strings.EqualFold(t.name, r.from) {
				return create
			}
			return r.declaredIndex(renamed.renamedIndex(create))
		}
		return append(append(rebuildFamily(family, renamed.familyDDL, index, renamed.familyName), r.movedKeyNames()), r.movedColumns()...), nil
	}
	rows, err := conn.QueryContext(ctx, `SELECT index_name, sql FROM duckdb_indexes() WHERE database_name = current_database()
		AND schema_name = current_schema() AND lower(table_name) = lower(?) AND sql IS NOT NULL ORDER BY index_oid`, r.from)
	if err != nil {
		return nil, wrapErr(err)
	}
	defer rows.Close()
	var drops, creates []string
	for rows.Next() {
		var name, create string
		if err := rows.Scan(&name, &create); err != nil {
			return nil, wrapErr(err)
		}
		drops = append(drops, "DROP INDEX "+quoteIdent(name))
		creates = append(creates, r.declaredIndex(renamed.renamedIndex(create)))
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr(err)
	}
	return append(append(drops, "ALTER TABLE "+quoteIdent(r.from)+" RENAME TO "+quoteIdent(r.to)), append(append(creates, r.movedKeyNames()), r.movedColumns()...)...), nil
}

// movedKeyNames is the statement that gives the renamed table its foreign keys' recorded names
// (mysqlfkchecks.go), a generated one renamed as MariaDB renames it (a_ibfk_1 is b_ibfk_1).
func (r tableRename) movedKeyNames() string {
	return "UPDATE " + declaredSchema + ".constraints SET table_name = lower(" + quoteString(r.to) + "), name = CASE WHEN regexp_full_match(lower(name), lower(" +
		quoteString(r.from+"_ibfk_") + ") || '[0-9]+') THEN " + quoteString(r.to) + " || substr(name, " + strconv.Itoa(len(r.from)+1) + ") ELSE name END " +
		"WHERE schema_name = current_schema() AND table_name = lower(" + quoteString(r.from) + ") AND kind = 'f'"
}

// declaredIndex is create, an index of the renamed table, with a declared index's name (from$name)
// renamed to$name.
func (r tableRename) declaredIndex(create string) string {
	toks := sqltok.SignificantTokens(create, sqltok.Postgres)
	for i, t := range toks {
		if isWord(t, "on") {
			break
		}
		if i > 0 && isWord(toks[i-1], "index") || i > 2 && isWord(toks[i-3], "if") && isWord(toks[i-1], "exists") {
			name := pgIdent(t)
			if prefix := r.from + "$"; len(name) > len(prefix) && strings.EqualFold(name[:len(prefix)], prefix) {
				return create[:t.Pos] + quoteIdent(r.to+"$"+name[len(prefix):]) + create[t.Pos+len(t.Text):]
			}
			return create
		}
	}
	return create
}

// tableMissingOrTaken is MariaDB's error for a rename of a table that does not exist (1146) or
// to a name a table has (1050), checked before the tables are created again.
func tableMissingOrTaken(ctx context.Context, conn *sql.Conn, r tableRename) error {
	exists := func(name string) (bool, error) {
		var n int
		err := conn.QueryRowContext(ctx, `SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database()
			AND schema_name = current_schema() AND lower(table_name) = lower(?)`, name).Scan(&n)
		return n > 0, wrapErr(err)
	}
	if ok, err := exists(r.from); err != nil || !ok {
		if err == nil {
			err = &query.Error{Code: "42S02", Message: "Table '" + r.from + "' doesn't exist (MySQL error 1146)"}
		}
		return err
	}
	if ok, err := exists(r.to); err != nil || ok && !strings.EqualFold(r.from, r.to) {
		if err == nil {
			err = &query.Error{Code: "42S01", Message: "Table '" + r.to + "' already exists (MySQL error 1050)"}
		}
		return err
	}
	return nil
}
