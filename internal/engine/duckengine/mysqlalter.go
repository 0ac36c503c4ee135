package duckengine

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's ALTER TABLE as Django's migrations (and other MySQL schema tools) write it,
// which DuckDB refuses, is run as the DuckDB statements that do the same (mysqlAlterTable):
//   - ADD [CONSTRAINT c] FOREIGN KEY ... REFERENCES ...: the table created again with the key,
//     as for a PostgreSQL client (pgforeignkey.go: an empty table no other key references);
//   - ADD [COLUMN] c type ...: with NOT NULL (Django's field with a default), which DuckDB
//     refuses ("Adding columns with constraints not yet supported"), the column is added (its
//     DEFAULT filling the rows) and then SET NOT NULL;
//   - MODIFY [COLUMN] c type [NULL | NOT NULL] [DEFAULT v]: DuckDB has no MODIFY: ALTER COLUMN c
//     TYPE, SET or DROP NOT NULL, SET or DROP DEFAULT (the column defined again, as MariaDB
//     does: without NOT NULL it takes NULL, without DEFAULT it has none), each left out when
//     it changes nothing (withoutNoOps); CHANGE [COLUMN] c d type ...: RENAME COLUMN c TO
//     d, then d's MODIFY (FIRST / AFTER: the table created again, mysqlcolumnplace.go);
//   - DROP [COLUMN] c; RENAME COLUMN c TO d.
// The column's type is written as in CREATE TABLE (columnDefinition: a text column COLLATE
// NOCASE). DuckDB alters no table that has an index, but adds its columns: the table's indexes
// are dropped around the change and created again (not one on a dropped column; a renamed
// column's under its new name). Any other ALTER TABLE is DuckDB's to run or refuse.

// mysqlAlterTable reads q, a MySQL client's statement, as one of the ALTER TABLE forms above.
func mysqlAlterTable(q *query.Request) (ownRun, bool) {
	if !sqltok.FirstKeywordIs(q.SQL, sqltok.MySQL, "alter") {
		return nil, false
	}
	keyed := withRestrictActions(q.SQL)
	if table, at, word, unnamed := unnamedForeignKey(keyed); unnamed {
		if _, ok, err := addForeignKey(&query.Request{SQL: mysqlCompat(withKeyName(keyed, "k", at, word)), Protocol: query.ProtocolPostgres}); ok && err == nil {
			return func(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
				return addNamedForeignKey(ctx, conn, inTx, keyed, table, at, word)
			}, true
		}
	}
	if run, ok, err := addForeignKey(&query.Request{SQL: mysqlCompat(keyed), Protocol: query.ProtocolPostgres}); ok && err == nil {
		return run, true
	}
	toks := sqltok.SignificantTokens(q.SQL, sqltok.MySQL)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	isName := func(i int) bool {
		return i < len(toks) && (toks[i].Kind == sqltok.Word || toks[i].Kind == sqltok.QuotedIdent && toks[i].Text[0] == '`')
	}
	if len(toks) < 5 || !toks[1].IsWord("table") || !isName(2) {
		return nil, false
	}
	if run, ok := mysqlDropForeignKey(toks); ok {
		return run, true
	}
	table, at := toks[2], 3 // unqualified only: its indexes are looked up in the current schema
	alter := "ALTER TABLE " + table.Text + " "
	verb := strings.ToLower(toks[at].Text)
	at++
	if at < len(toks) && toks[at].IsWord("column") {
		at++
	}
	if !isName(at) || toks[at].IsWord("constraint", "index", "key", "unique", "primary", "foreign", "fulltext", "spatial", "check", "partition") {
		return nil, false
	}
	col, def := toks[at], toks[at+1:]
	var stmts, keys []string // keys: DuckDB statements, after the MySQL ones
	dropped, renamed := "", ""
	var place columnPlace // where the column goes (mysqlcolumnplace.go), placed its name
	placed := ""
	switch verb {
	case "add":
		place, def = readColumnPlace(def) // FIRST / AFTER c: mysqlcolumnplace.go
		placed = identText(col)
		notNull, rest := cutNotNull(def)
		unique, rest := cutUnique(rest)
		text, ai, kept, _ := columnDefinition(append([]sqltok.Token{col}, rest...), false)
		if ai || !kept {
			return nil, false // DuckDB's to run
		}
		stmts = []string{alter + "ADD COLUMN " + text}
		if notNull {
			stmts = append(stmts, alter+"ALTER COLUMN "+col.Text+" SET NOT NULL")
		}
		if unique { // the key as ADD UNIQUE (col) makes it (mysqladdkey.go); DuckDB adds no column with one
			name, key := identText(table), []string{identText(col)}
			keys = indexStatements(quoteIdent(name), name, []inlineKey{{cols: key, unique: true}}, map[string]bool{})
			if stmt, ok := caselessKeyIndex(quoteIdent(name), name+"$qf_ci_"+key[0], key, map[string]bool{strings.ToLower(key[0]): strings.Contains(text, "COLLATE NOCASE")}); ok {
				keys = append(keys, stmt)
			}
		}
	case "rename":
		if len(def) != 2 || !def[0].IsWord("to") || !toks[at-1].IsWord("column") {
			return nil, false
		}
		stmts, dropped, renamed = []string{alter + "RENAME COLUMN " + col.Text + " TO " + def[1].Text}, identText(col), identText(def[1])
	case "modify":
		if stmts = modifyColumn(alter, col, def); stmts == nil {
			return nil, false
		}
		place, _ = readColumnPlace(def)
		placed = identText(col)
	case "change": // CHANGE old new type ...: RENAME COLUMN (when the name changes), then MODIFY new
		if len(def) < 2 || !isName(at+1) {
			return nil, false
		}
		if !strings.EqualFold(identText(col), identText(def[0])) {
			stmts, dropped, renamed = []string{alter + "RENAME COLUMN " + col.Text + " TO " + def[0].Text}, identText(col), identText(def[0])
		}
		modify := modifyColumn(alter, def[0], def[1:])
		if modify == nil {
			return nil, false
		}
		stmts = append(stmts, modify...)
		place, _ = readColumnPlace(def)
		placed = identText(def[0])
	case "drop":
		if len(def) > 0 {
			return nil, false // CASCADE, RESTRICT: DuckDB's to read
		}
		stmts, dropped = []string{alter + "DROP COLUMN " + col.Text}, identText(col)
	default:
		return nil, false
	}
	for i := range stmts {
		stmts[i] = mysqlCompat(stmts[i])
	}
	stmts = append(stmts, keys...)
	name := identText(table)
	declared := alterDeclared(name, verb, col, def) // mysqldeclared.go
	return func(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
		if err := placeExists(ctx, conn, name, place); err != nil {
			return nil, err
		}
		stmts, err := withoutNoOps(ctx, conn, name, stmts)
		if err != nil {
			return nil, err
		}
		if len(stmts) == 0 {
			if err := moveColumn(ctx, conn, name, placed, place, inTx); err != nil {
				return nil, err
			}
			return engine.TagRows("ALTER TABLE"), runAll(ctx, conn, declared, inTx)
		}
		// In a transaction DuckDB's refusal of an ALTER of a referenced table would fail it
		// (Knex runs a migration in one): the referencing tables are set aside at once.
		aside := inTx && verb != "drop" && referencedTable(ctx, conn, "", name)
		if !aside {
			err = alterAroundIndexes(ctx, conn, name, stmts, dropped, renamed, inTx)
		}
		if err != nil && verb == "drop" && strings.Contains(err.Error(), "an index depends on a column after it") {
			var rebuild []string
			if rebuild, err = withoutColumn(ctx, conn, name, dropped); err == nil {
				err = runAll(ctx, conn, rebuild, inTx)
			}
		}
		if aside || err != nil && verb != "drop" && (strings.Contains(err.Error(), "there are entries that depend on it") ||
			strings.Contains(err.Error(), "is involved in the foreign key constraint")) {
			var aside []string
			if aside, err = withReferencingSetAside(ctx, conn, name, dropped, renamed, stmts); err == nil {
				err = alterAroundIndexes(ctx, conn, name, aside, dropped, renamed, inTx)
			}
		}
		if err == nil {
			err = moveColumn(ctx, conn, name, placed, place, inTx)
		}
		if err == nil {
			err = runAll(ctx, conn, declared, inTx)
		}
		if err != nil {
			return nil, err
		}
		return engine.TagRows("ALTER TABLE"), nil
	}, true
}

// modifyColumn are the DuckDB statements (MySQL text) of MODIFY col def: its type, NOT NULL
// or NULL, DEFAULT v; FIRST / AFTER c left out (DuckDB keeps the column where it is). nil
// when def has no type.
func modifyColumn(alter string, col sqltok.Token, def []sqltok.Token) []string {
	typeEnd := 0
	for typeEnd < len(def) && !def[typeEnd].IsWord("not", "null", "default", "auto_increment", "primary", "unique", "key",
		"comment", "references", "first", "after", "on", "check", "generated", "as", "invisible") {
		typeEnd++
	}
	if typeEnd == 0 {
		return nil
	}
	text, _, _, _ := columnDefinition(append([]sqltok.Token{col}, def[:typeEnd]...), false)
	stmts := []string{alter + "ALTER COLUMN " + col.Text + " TYPE " + strings.TrimPrefix(text, col.Text+" ")}
	notNull, rest := cutNotNull(def[typeEnd:])
	if notNull {
		stmts = append(stmts, alter+"ALTER COLUMN "+col.Text+" SET NOT NULL")
	} else { // the column is defined again: without NOT NULL it takes NULL
		stmts = append(stmts, alter+"ALTER COLUMN "+col.Text+" DROP NOT NULL")
	}
	dflt := alter + "ALTER COLUMN " + col.Text + " DROP DEFAULT" // and without DEFAULT it has none
	for i, t := range rest {
		switch {
		case t.IsWord("default") && i+1 < len(rest):
			value := rest[i+1].Text
			if rest[i+1].IsWord("true", "false") { // MySQL's 1 / 0, as columnDefinition writes them
				value = map[bool]string{true: "1", false: "0"}[rest[i+1].IsWord("true")]
			}
			dflt = alter + "ALTER COLUMN " + col.Text + " SET DEFAULT " + value
		case t.IsWord("auto_increment"):
			return stmts // its DEFAULT is its sequence's
		}
	}
	return append(stmts, dflt)
}

// withoutNoOps is stmts without the ALTER COLUMN c TYPE t, SET NOT NULL, DROP NOT NULL and
// DROP DEFAULT that change nothing of table's column: DuckDB keeps no length (VARCHAR(50) to VARCHAR(255),
// Django's auth migrations), and refuses any of them on a table another table's foreign key
// references ("Cannot alter entry": Django's migrate stopped at auth's second migration).
func withoutNoOps(ctx context.Context, conn *sql.Conn, table string, stmts []string) ([]string, error) {
	var caseless map[string]bool
	var out []string
	was := map[string]string{} // a column a RENAME COLUMN before names anew: its name now
	for _, stmt := range stmts {
		toks := sqltok.SignificantTokens(stmt, sqltok.Postgres)
		if len(toks) == 8 && toks[3].IsWord("rename") && toks[4].IsWord("column") {
			was[strings.ToLower(tokenName(toks[7].Text))] = tokenName(toks[5].Text)
		}
		if len(toks) < 8 || !toks[3].IsWord("alter") || !toks[4].IsWord("column") {
			out = append(out, stmt)
			continue
		}
		col := tokenName(toks[5].Text)
		if old, ok := was[strings.ToLower(col)]; ok {
			col = old
		}
		var typ string
		var nullable, hasDefault bool
		err := conn.QueryRowContext(ctx, `SELECT data_type, is_nullable, column_default IS NOT NULL FROM duckdb_columns() WHERE database_name = current_database()
			AND schema_name = current_schema() AND lower(table_name) = lower(?) AND lower(column_name) = lower(?)`, table, col).Scan(&typ, &nullable, &hasDefault)
		if err == sql.ErrNoRows {
			out = append(out, stmt) // no such column: the statement says so
			continue
		}
		if err != nil {
			return nil, wrapErr(err)
		}
		switch rest := strings.ToLower(stmt[toks[6].Pos:]); {
		case rest == "set not null" && !nullable, rest == "drop not null" && nullable, rest == "drop default" && !hasDefault:
			continue
		case toks[6].IsWord("type"):
			newType, nocase := strings.CutSuffix(strings.TrimSpace(stmt[toks[7].Pos:]), " COLLATE NOCASE")
			if caseless == nil {
				if caseless, err = caselessColumns(ctx, conn, table); err != nil {
					return nil, err
				}
			}
			var canonical string
			if err := conn.QueryRowContext(ctx, "SELECT typeof(CAST(NULL AS "+newType+"))").Scan(&canonical); err == nil &&
				canonical == typ && nocase == caseless[strings.ToLower(col)] {
				continue
			}
		}
		out = append(out, stmt)
	}
	return out, nil
}

// alterAroundIndexes runs stmts, an ALTER of table, with its indexes dropped around them
// (DuckDB alters no table that has one) and created again after (afterAlter). Each in a
// transaction of its own: DuckDB still sees an index dropped in the transaction (DROP COLUMN:
// "an index depends on it"; a unique one created again: "already exists"). The indexes come
// back if the ALTER fails.
func alterAroundIndexes(ctx context.Context, conn *sql.Conn, table string, stmts []string, dropped, renamed string, inTx bool) error {
	drops, indexes, err := tableIndexesByName(ctx, conn, table)
	if err != nil {
		return err
	}
	if err := runAll(ctx, conn, drops, inTx); err != nil {
		return err
	}
	if err := runAll(ctx, conn, stmts, inTx); err != nil {
		_ = runAll(context.WithoutCancel(ctx), conn, indexes, inTx)
		return err
	}
	if inTx && slices.ContainsFunc(indexes, uniqueIndexDDL) {
		// DuckDB creates no unique index again under its name in the transaction that dropped
		// it ("already exists": Knex's renameColumn in a migration's transaction), but does once
		// its table was dropped: the table is created again, as it is now, with its rows.
		rebuild, err := rebuiltAsNow(ctx, conn, table)
		if err != nil {
			return err
		}
		if err := runAll(ctx, conn, rebuild, inTx); err != nil {
			return err
		}
	}
	return runAll(ctx, conn, afterAlter(indexes, dropped, renamed), inTx)
}

// uniqueIndexDDL reports whether create, DuckDB's text of an index, is a unique index's.
func uniqueIndexDDL(create string) bool {
	toks := sqltok.SignificantTokens(create, sqltok.Postgres)
	return len(toks) > 2 && toks[0].IsWord("create") && toks[1].IsWord("unique")
}

// rebuiltAsNow are the statements that create table (in the current schema, its indexes
// dropped) again from DuckDB's text of it, its rows kept.
func rebuiltAsNow(ctx context.Context, conn *sql.Conn, table string) ([]string, error) {
	var ddl string
	if err := conn.QueryRowContext(ctx, `SELECT sql FROM duckdb_tables() WHERE database_name = current_database()
		AND schema_name = current_schema() AND lower(table_name) = lower(?)`, table).Scan(&ddl); err != nil {
		return nil, wrapErr(err)
	}
	return rebuildTable(ctx, conn, "", table, ddl)
}

// withReferencingSetAside is stmts, an ALTER of table (not DROP COLUMN, which MariaDB refuses
// of a column a key references), which DuckDB refuses while another table's foreign key
// references it ("Cannot alter entry ... because there are entries that depend on it":
// Django's auth migrations MODIFY auth_user, which auth_user_groups references; "Cannot
// rename column ... involved in the foreign key constraint"), with those tables (and theirs,
// transitively) set aside around them: copied and dropped, children first, and after the
// ALTER created again from DuckDB's text of them (a column of table renamed from to in their
// keys), parents first, their rows and indexes put back (rebuildFamily). All of it runs in
// one transaction: if any of it fails, nothing is dropped.
func withReferencingSetAside(ctx context.Context, conn *sql.Conn, table, from, to string, stmts []string) ([]string, error) {
	family, _, err := tableFamily(ctx, conn, "", table)
	if err != nil {
		return nil, err
	}
	children := slices.DeleteFunc(family, func(t familyTable) bool { return strings.EqualFold(t.name, table) })
	ddl := func(t familyTable) string { return t.ddl }
	if from != "" {
		ddl = func(t familyTable) string { return renamedInDDL(t.ddl, table, from, from, to, false) }
	}
	keep := func(_ familyTable, s string) string { return s }
	return rebuildFamily(children, ddl, keep, func(t familyTable) string { return t.name }, stmts...), nil
}

// withoutColumn are the statements that create table again without its column col, which
// DuckDB drops from no table with an index (a key, a foreign key) on a column after it
// (Django's RemoveField: "Cannot drop this column: an index depends on a column after it"):
// the table and those whose keys reference it copied (the table's rows without col), dropped,
// created again (the table from DuckDB's text of it without col), their rows and indexes put
// back (rebuildFamily), in one transaction; an index of the table's on col is not (MariaDB
// drops col from it). A table constraint that names col (a PRIMARY KEY, UNIQUE or FOREIGN KEY
// of several columns) is refused (1235).
func withoutColumn(ctx context.Context, conn *sql.Conn, table, col string) ([]string, error) {
	family, _, err := tableFamily(ctx, conn, "", table)
	if err != nil {
		return nil, err
	}
	at := slices.IndexFunc(family, func(t familyTable) bool { return strings.EqualFold(t.name, table) })
	if at < 0 {
		return nil, &query.Error{Code: "42S02", Message: "Table '" + table + "' doesn't exist (MySQL error 1146)"}
	}
	ddl, ok := ddlWithoutColumn(family[at].ddl, col)
	if !ok {
		return nil, &query.Error{Code: "42000", Message: "This version of QueryFlux on DuckDB doesn't yet support 'dropping column " + col +
			" of table " + table + ", which a key of the table's names' (MySQL error 1235)"}
	}
	family[at].indexes = slices.DeleteFunc(family[at].indexes, func(create string) bool { return namesColumn(create, col) })
	stmts := rebuildFamily(family, func(t familyTable) string {
		if t.name == family[at].name {
			return ddl
		}
		return t.ddl
	}, func(_ familyTable, s string) string { return s }, func(t familyTable) string { return t.name })
	// the copies come first, in family order: the table's without the column
	stmts[at] = strings.Replace(stmts[at], "SELECT * FROM", "SELECT * EXCLUDE ("+quoteIdent(col)+") FROM", 1)
	return stmts, nil
}

// ddlWithoutColumn is DuckDB's CREATE TABLE text ddl without the definition of column col;
// ok is false when another definition (a key) names col.
func ddlWithoutColumn(ddl, col string) (string, bool) {
	toks := sqltok.SignificantTokens(ddl, sqltok.Postgres)
	open := slices.IndexFunc(toks, func(t sqltok.Token) bool { return t.Text == "(" })
	if open < 0 {
		return "", false
	}
	defs, end := definitions(toks, open)
	var kept []string
	for _, d := range defs {
		if strings.EqualFold(tokenName(d[0].Text), col) {
			continue
		}
		for _, t := range d[1:] {
			if (t.Kind == sqltok.Word || t.Kind == sqltok.QuotedIdent) && strings.EqualFold(tokenName(t.Text), col) {
				return "", false
			}
		}
		last := d[len(d)-1]
		kept = append(kept, ddl[d[0].Pos:last.Pos+len(last.Text)])
	}
	if end < 0 || len(kept) == len(defs) {
		return "", false
	}
	return ddl[:toks[open].Pos+1] + strings.Join(kept, ", ") + ddl[toks[end].Pos:], true
}

// cutNotNull is def without its NOT NULL, and whether it had one.
func cutNotNull(def []sqltok.Token) (bool, []sqltok.Token) {
	for i := 0; i+1 < len(def); i++ {
		if def[i].IsWord("not") && def[i+1].IsWord("null") {
			return true, append(def[:i:i], def[i+2:]...)
		}
	}
	return false, def
}

// cutUnique is def without its UNIQUE [KEY], and whether it had one.
func cutUnique(def []sqltok.Token) (bool, []sqltok.Token) {
	for i, t := range def {
		if t.IsWord("unique") {
			end := i + 1
			if end < len(def) && def[end].IsWord("key") {
				end++
			}
			return true, append(def[:i:i], def[end:]...)
		}
	}
	return false, def
}

// tableIndexesByName are the statements that drop table's indexes in the current schema, and
// those that create them.
func tableIndexesByName(ctx context.Context, conn *sql.Conn, table string) (drops, creates []string, err error) {
	rows, err := conn.QueryContext(ctx, `SELECT schema_name, index_name, sql FROM duckdb_indexes() WHERE database_name = current_database()
		AND schema_name = current_schema() AND table_name = ? AND sql IS NOT NULL ORDER BY index_oid`, table) // created again in the same order (SHOW INDEX lists by it)
	if err != nil {
		return nil, nil, wrapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var schema, index, create string
		if err := rows.Scan(&schema, &index, &create); err != nil {
			return nil, nil, wrapErr(err)
		}
		drops, creates = append(drops, "DROP INDEX "+quoteIdent(schema)+"."+quoteIdent(index)), append(creates, create)
	}
	return drops, creates, wrapErr(rows.Err())
}

// afterAlter are the statements creates that create indexes again after an ALTER: not one
// naming the column dropped, or with it named renamed when it was renamed.
func afterAlter(creates []string, dropped, renamed string) []string {
	var out []string
	for _, create := range creates {
		switch {
		case dropped == "" || !namesColumn(create, dropped):
			out = append(out, create)
		case renamed != "":
			out = append(out, renameColumn(create, dropped, renamed))
		}
	}
	return out
}

// namesColumn reports whether the CREATE INDEX statement create names the column col among
// its columns (in any case, quoted or not).
func namesColumn(create, col string) bool {
	return renameColumn(create, col, "") != create
}

// renameColumn is the CREATE INDEX statement create with the column col among its columns
// named to instead.
func renameColumn(create, col, to string) string {
	head, cols, ok := strings.Cut(create, "(")
	if !ok {
		return create
	}
	toks := sqltok.SignificantTokens(cols, sqltok.Postgres)
	changed := false
	for i, t := range toks {
		name := t.Text
		if t.Kind == sqltok.QuotedIdent {
			name = strings.ReplaceAll(name[1:len(name)-1], `""`, `"`)
		}
		if (t.Kind == sqltok.Word || t.Kind == sqltok.QuotedIdent) && strings.EqualFold(name, col) {
			toks[i].Text, changed = quoteIdent(to), true
		}
	}
	if !changed {
		return create
	}
	return head + "(" + joinTokens(toks)
}

// unnamedForeignKey reads sqlText, an ALTER TABLE t ADD [CONSTRAINT] FOREIGN KEY ..., for a key
// without a name: t, and where in sqlText the name goes (after CONSTRAINT, which word says
// whether it is written).
func unnamedForeignKey(sqlText string) (table string, at int, word bool, unnamed bool) {
	toks := sqltok.SignificantTokens(sqlText, sqltok.MySQL)
	if len(toks) < 6 || !toks[3].IsWord("add") {
		return "", 0, false, false
	}
	switch {
	case toks[4].IsWord("foreign"):
		return identText(toks[2]), toks[4].Pos, false, true
	case toks[4].IsWord("constraint") && toks[5].IsWord("foreign"):
		return identText(toks[2]), toks[5].Pos, true, true
	}
	return "", 0, false, false
}

// addNamedForeignKey adds the key of sqlText (a MySQL client's, without a name) named as
// MariaDB names it: <table>_ibfk_<n>, n one past the highest such name of the table's keys.
func addNamedForeignKey(ctx context.Context, conn *sql.Conn, inTx bool, sqlText, table string, at int, word bool) (query.Rows, error) {
	var n int
	err := conn.QueryRowContext(ctx, `SELECT coalesce(max(TRY_CAST(regexp_extract(name, '_ibfk_([0-9]+)$', 1) AS INTEGER)), 0) FROM `+
		declaredSchema+`.constraints WHERE schema_name = current_schema() AND table_name = lower(?) AND kind = 'f' AND starts_with(lower(name), lower(?))`,
		table, table+"_ibfk_").Scan(&n)
	if err != nil {
		return nil, wrapErr(err)
	}
	named := withKeyName(sqlText, table+"_ibfk_"+strconv.Itoa(n+1), at, word)
	run, ok, err := addForeignKey(&query.Request{SQL: mysqlCompat(named), Protocol: query.ProtocolPostgres})
	if err != nil || !ok {
		return nil, cmp.Or(err, error(&query.Error{Code: "42000", Message: "cannot read the foreign key of: " + sqlText}))
	}
	return run(ctx, conn, inTx)
}

// withKeyName is sqlText (MySQL's) with the key's name written at at (with CONSTRAINT unless
// word).
func withKeyName(sqlText, name string, at int, word bool) string {
	name = "`" + strings.ReplaceAll(name, "`", "``") + "` "
	if !word {
		name = "CONSTRAINT " + name
	}
	return sqlText[:at] + name + sqlText[at:]
}

// withRestrictActions is sqlText, an ALTER TABLE ... ADD ... FOREIGN KEY, with ON DELETE
// RESTRICT and ON UPDATE RESTRICT written where it declares no action: MariaDB's rule for a key
// declared without one, which information_schema and SHOW CREATE TABLE tell from NO ACTION.
func withRestrictActions(sqlText string) string {
	toks := sqltok.SignificantTokens(sqlText, sqltok.MySQL)
	if len(toks) == 0 || !containsFold(sqlText, "foreign") || !containsFold(sqlText, "references") {
		return sqlText
	}
	end := len(toks)
	if toks[end-1].Text == ";" {
		end--
	}
	onDelete, onUpdate := false, false
	for i := 0; i+1 < end; i++ {
		if toks[i].IsWord("on") {
			onDelete = onDelete || toks[i+1].IsWord("delete")
			onUpdate = onUpdate || toks[i+1].IsWord("update")
		}
	}
	last := toks[end-1]
	out := sqlText[:last.Pos+len(last.Text)]
	if !onDelete {
		out += " ON DELETE RESTRICT"
	}
	if !onUpdate {
		out += " ON UPDATE RESTRICT"
	}
	return out + sqlText[last.Pos+len(last.Text):]
}
