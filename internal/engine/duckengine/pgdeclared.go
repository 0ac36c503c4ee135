package duckengine

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// What a PostgreSQL client declared and DuckDB forgets: DuckDB keeps one VARCHAR for text,
// varchar(n) and char(n), one JSON for json and jsonb, and no constraint names or referential
// actions. ORMs that compare the database with their entities at start (TypeORM's synchronize,
// Sequelize's sync({alter: true})) read those back from information_schema.columns
// (udt_name, character_maximum_length, ...), `(udt)::regtype`, pg_attribute and
// pg_constraint, and a difference makes them DROP a column and ADD it again, its data lost, or
// drop a foreign key DuckDB cannot drop. So the compatibility layer keeps its own catalog of
// each PostgreSQL client's CREATE TABLE (and ADD FOREIGN KEY): every column's declared type
// (PostgreSQL's oid and typmod) and every named constraint's name and actions, in a schema of
// the client's database (declaredSchema), written in the same transaction as the DDL so that a
// rollback takes both back, and persisted with the tables in a database file.
//
// The catalog views (information_schema.columns, pg_attribute, pg_constraint, pg_class for a
// key's index) read a column's declared type only while DuckDB's type of the column is the one
// it had when declared, and a constraint's name only while DuckDB has a constraint of that kind
// on those columns: what another client changed since reads as DuckDB's type again.

// declaredSchema is the schema of the client's database holding the catalog: hidden from every
// listing of schemas and tables.
const declaredSchema = "queryflux_pg"

// declaredSetupSQL creates the catalog under qualifier (the database's "db".queryflux_pg).
func declaredSetupSQL(qualifier string) []string {
	return []string{
		"CREATE SCHEMA IF NOT EXISTS " + qualifier,
		"CREATE TABLE IF NOT EXISTS " + qualifier + ".columns (schema_name VARCHAR, table_name VARCHAR, " +
			"column_name VARCHAR, duck_type VARCHAR, type_oid BIGINT, typmod INTEGER)",
		"CREATE TABLE IF NOT EXISTS " + qualifier + ".constraints (schema_name VARCHAR, table_name VARCHAR, " +
			"kind VARCHAR, columns VARCHAR[], name VARCHAR, on_delete VARCHAR, on_update VARCHAR)",
		// a foreign key's DEFERRABLE: 'i' INITIALLY IMMEDIATE, 'd' INITIALLY DEFERRED (pgdeferred.go)
		"ALTER TABLE " + qualifier + ".constraints ADD COLUMN IF NOT EXISTS deferral VARCHAR",
		// an identity column's GENERATED: 'a' ALWAYS, 'd' BY DEFAULT (pgidentity.go)
		"ALTER TABLE " + qualifier + ".columns ADD COLUMN IF NOT EXISTS identity VARCHAR",
	}
}

// setupDeclared creates the catalog in the database home, or, where that database cannot be
// written (a file attached read-only), reads home's catalog through views in the compatibility
// catalog (an empty catalog there when home has none), and returns its qualifier for the
// catalog views.
func setupDeclared(exec func(string) error, home string) (string, error) {
	qualifier := quoteIdent(home) + "." + declaredSchema
	written := true
	for _, s := range declaredSetupSQL(qualifier) {
		if err := exec(s); err != nil {
			written = false
			break
		}
	}
	if written {
		return qualifier, nil
	}
	compat := quoteIdent(compatCatalog) + "." + declaredSchema
	if readDeclaredThroughViews(exec, qualifier, compat) {
		return compat, nil
	}
	for _, s := range declaredSetupSQL(compat) {
		if err := exec(s); err != nil {
			return "", fmt.Errorf("catalog compatibility: %w", err)
		}
	}
	return compat, nil
}

// readDeclaredThroughViews makes compat's catalog views of a read-only home's (from): a file
// written before a column was added to the catalog (constraints.deferral, columns.identity)
// reads it as NULL, as the ADD COLUMN that cannot run there would have left it. rowid is kept: MySQL clients'
// views number constraints by it. False when home has no catalog.
func readDeclaredThroughViews(exec func(string) error, from, compat string) bool {
	columns := "CREATE OR REPLACE VIEW " + compat + ".columns AS SELECT rowid AS rowid, " +
		"schema_name, table_name, column_name, duck_type, type_oid, typmod, "
	if exec("CREATE SCHEMA IF NOT EXISTS "+compat) != nil ||
		exec(columns+"identity FROM "+from+".columns") != nil && exec(columns+"NULL::VARCHAR AS identity FROM "+from+".columns") != nil {
		return false
	}
	view := "CREATE OR REPLACE VIEW " + compat + ".constraints AS SELECT rowid AS rowid, " +
		"schema_name, table_name, kind, columns, name, on_delete, on_update, "
	return exec(view+"deferral FROM "+from+".constraints") == nil ||
		exec(view+"NULL::VARCHAR AS deferral FROM "+from+".constraints") == nil
}

// declaredColumn is a column and PostgreSQL's type of it.
type declaredColumn struct {
	name     string
	oid      uint32
	typmod   int32
	identity byte // GENERATED ... AS IDENTITY: 'a' ALWAYS, 'd' BY DEFAULT, 0 not an identity column
}

// declaredConstraint is a primary key ('p'), unique ('u') or foreign key ('f') constraint with
// a name or referential actions; actions are pg_constraint's letters ('a' NO ACTION, 'r'
// RESTRICT, 'c' CASCADE, 'n' SET NULL, 'd' SET DEFAULT).
type declaredConstraint struct {
	kind               byte
	columns            []string
	name               string
	onDelete, onUpdate byte
	deferral           byte // a foreign key's: 0 NOT DEFERRABLE, 'i' DEFERRABLE [INITIALLY IMMEDIATE], 'd' INITIALLY DEFERRED
}

// declaredTable is what a CREATE TABLE declares.
type declaredTable struct {
	schema, name string // schema "" for the current one; DuckDB's names (public is main)
	ifNotExists  bool
	columns      []declaredColumn
	constraints  []declaredConstraint
}

// readDeclaredTable reads a PostgreSQL client's CREATE TABLE (not a temporary one); nil for any
// other statement.
func readDeclaredTable(sqlText string) *declaredTable {
	h, ok := readCreateTable(sqlText, sqltok.Postgres)
	if !ok || h.temporary {
		return nil
	}
	var parts []string
	for i, t := range h.name {
		switch {
		case i%2 == 1 && t.Text == ".":
		case i%2 == 0 && (t.Kind == sqltok.Word || t.Kind == sqltok.QuotedIdent):
			parts = append(parts, pgIdent(t))
		default:
			return nil // CREATE TABLE t AS ..., PARTITION OF ...
		}
	}
	if len(parts) == 0 || len(parts) > 3 {
		return nil
	}
	d := &declaredTable{name: parts[len(parts)-1], ifNotExists: h.ifNotExists}
	if len(parts) >= 2 {
		d.schema = duckSchema(parts[len(parts)-2])
	}
	defs, end := definitions(h.toks, h.open)
	if end < 0 {
		return nil
	}
	for _, def := range defs {
		if len(def) == 0 {
			continue
		}
		if tableConstraintStart(def[0]) {
			if c, ok := readConstraint(def, nil); ok {
				d.constraints = append(d.constraints, c)
			}
			continue
		}
		if def[0].Kind != sqltok.Word && def[0].Kind != sqltok.QuotedIdent {
			continue
		}
		col := pgIdent(def[0])
		oid, typmod, n, ok := readPGType(def[1:])
		if ok {
			d.columns = append(d.columns, declaredColumn{col, oid, typmod, identityKind(def[1+n:])})
		}
		d.constraints = append(d.constraints, columnConstraints(def[1+n:], col)...)
	}
	for i, c := range d.constraints {
		if c.kind == 'f' && c.name == "" {
			d.constraints[i].name = foreignKeyName(d.name, c.columns)
		}
	}
	return d
}

// foreignKeyName is PostgreSQL's name of table's unnamed foreign key on cols.
func foreignKeyName(table string, cols []string) string {
	name := table + "_" + strings.Join(cols, "_") + "_fkey"
	if len(name) > 63 {
		name = name[:63]
	}
	return name
}

// tableConstraintStart reports whether a definition starting with t is a table constraint.
func tableConstraintStart(t sqltok.Token) bool {
	for _, w := range []string{"constraint", "primary", "unique", "foreign", "check", "exclude", "like"} {
		if isWord(t, w) {
			return true
		}
	}
	return false
}

// columnConstraints are the named or acting constraints among a column definition's tokens
// after its type: PRIMARY KEY, UNIQUE, REFERENCES, each with the CONSTRAINT name before it.
func columnConstraints(ts []sqltok.Token, col string) []declaredConstraint {
	var out []declaredConstraint
	for i := range ts {
		if !isWord(ts[i], "primary") && !isWord(ts[i], "unique") && !isWord(ts[i], "references") {
			continue
		}
		from := i
		if i >= 2 && isWord(ts[i-2], "constraint") {
			from = i - 2
		}
		if c, ok := readConstraint(ts[from:], []string{col}); ok {
			out = append(out, c)
		}
	}
	return out
}

// readConstraint reads [CONSTRAINT name] PRIMARY KEY [(cols)] | UNIQUE [(cols)] | [FOREIGN KEY
// (cols)] REFERENCES t [(cols)] [ON DELETE a] [ON UPDATE a]; cols are the column's own for a
// column constraint. ok is false for other constraints, and for one with nothing to keep (no
// name, no actions).
func readConstraint(ts []sqltok.Token, cols []string) (c declaredConstraint, ok bool) {
	i := 0
	if i < len(ts) && isWord(ts[i], "constraint") {
		if i+1 >= len(ts) {
			return c, false
		}
		c.name, i = pgIdent(ts[i+1]), i+2
	}
	list := func() []string {
		if i >= len(ts) || ts[i].Text != "(" {
			return nil
		}
		var names []string
		for i++; i < len(ts) && ts[i].Text != ")"; i++ {
			if ts[i].Kind == sqltok.Word || ts[i].Kind == sqltok.QuotedIdent {
				names = append(names, pgIdent(ts[i]))
			}
		}
		i++
		return names
	}
	switch {
	case i+1 < len(ts) && isWord(ts[i], "primary") && isWord(ts[i+1], "key"):
		c.kind, i = 'p', i+2
	case i < len(ts) && isWord(ts[i], "unique"):
		c.kind = 'u'
		i++
	case i+1 < len(ts) && isWord(ts[i], "foreign") && isWord(ts[i+1], "key"):
		c.kind, i = 'f', i+2
		cols = list()
		if i >= len(ts) || !isWord(ts[i], "references") {
			return c, false
		}
	case i < len(ts) && isWord(ts[i], "references"):
		c.kind = 'f'
	default:
		return c, false
	}
	if c.kind != 'f' {
		if own := list(); own != nil {
			cols = own
		}
		c.columns = cols
		return c, c.name != "" && len(cols) > 0
	}
	c.columns, c.onDelete, c.onUpdate = cols, 'a', 'a'
	for ; i < len(ts); i++ {
		c.deferral = keyDeferral(ts, i, c.deferral)
		if !isWord(ts[i], "on") || i+2 >= len(ts) {
			continue
		}
		a := referentialAction(ts[i+2:])
		switch {
		case isWord(ts[i+1], "delete"):
			c.onDelete = a
		case isWord(ts[i+1], "update"):
			c.onUpdate = a
		}
	}
	return c, len(cols) > 0 // every foreign key: DuckDB's own name of one is not PostgreSQL's
}

// keyDeferral is a key's deferral (declaredConstraint.deferral) after the word at ts[i].
func keyDeferral(ts []sqltok.Token, i int, deferral byte) byte {
	switch {
	case isWord(ts[i], "deferrable") && (i == 0 || !isWord(ts[i-1], "not")):
		return max(deferral, 'i')
	case isWord(ts[i], "not") && i+1 < len(ts) && isWord(ts[i+1], "deferrable"):
		return 0
	case isWord(ts[i], "initially") && i+1 < len(ts) && isWord(ts[i+1], "deferred"):
		return 'd'
	}
	return deferral
}

// referentialAction is pg_constraint's letter for the action written at ts.
func referentialAction(ts []sqltok.Token) byte {
	switch {
	case isWord(ts[0], "cascade"):
		return 'c'
	case isWord(ts[0], "restrict"):
		return 'r'
	case len(ts) > 1 && isWord(ts[0], "set") && isWord(ts[1], "null"):
		return 'n'
	case len(ts) > 1 && isWord(ts[0], "set") && isWord(ts[1], "default"):
		return 'd'
	}
	return 'a'
}

// pgTypeWords are PostgreSQL's one-word type names, serial types as the integer they are.
var pgTypeWords = map[string]uint32{
	"smallint": 21, "int2": 21, "smallserial": 21, "serial2": 21,
	"integer": 23, "int": 23, "int4": 23, "serial": 23, "serial4": 23,
	"bigint": 20, "int8": 20, "bigserial": 20, "serial8": 20,
	"text": 25, "varchar": 1043, "char": 1042, "character": 1042, "bpchar": 1042, "name": 19, "oid": 26,
	"boolean": 16, "bool": 16, "real": 700, "float4": 700, "float8": 701, "float": 701,
	"numeric": 1700, "decimal": 1700, "date": 1082, "time": 1083, "timetz": 1266, "timestamp": 1114,
	"timestamptz": 1184, "interval": 1186, "uuid": 2950, "json": 114, "jsonb": 3802, "bytea": 17,
}

// pgArrayTypes are the array type of each element type above.
var pgArrayTypes = map[uint32]uint32{16: 1000, 17: 1001, 19: 1003, 20: 1016, 21: 1005, 23: 1007, 25: 1009, 26: 1028,
	114: 199, 700: 1021, 701: 1022, 1042: 1014, 1043: 1015, 1082: 1182, 1083: 1183, 1114: 1115, 1184: 1185, 1186: 1187,
	1266: 1270, 1700: 1231, 2950: 2951, 3802: 3807}

// readPGType reads the PostgreSQL type a column definition names at ts[0:n]: its oid and
// typmod (-1 for none) as pg_attribute keeps them. ok is false for a type not known here (a
// user's enum or domain): its column reads as DuckDB's type.
func readPGType(ts []sqltok.Token) (oid uint32, typmod int32, n int, ok bool) {
	if len(ts) == 0 || ts[0].Kind != sqltok.Word {
		return 0, 0, 0, false
	}
	word := func(i int, w string) bool { return i < len(ts) && isWord(ts[i], w) }
	first := strings.ToLower(ts[0].Text)
	if first == "pg_catalog" && len(ts) > 2 && ts[1].Text == "." { // pg_catalog.int4
		oid, typmod, n, ok = readPGType(ts[2:])
		return oid, typmod, n + 2, ok
	}
	n = 1
	switch {
	case first == "double" && word(1, "precision"):
		oid, n = 701, 2
	case (first == "character" || first == "char") && word(1, "varying"):
		oid, n = 1043, 2
	default:
		if oid, ok = pgTypeWords[first]; !ok {
			return 0, 0, 0, false
		}
	}
	// (modifiers)
	var mods []int32
	if n < len(ts) && ts[n].Text == "(" {
		for n++; n < len(ts) && ts[n].Text != ")"; n++ {
			if ts[n].Kind == sqltok.Number {
				var v int32
				if _, err := fmt.Sscan(ts[n].Text, &v); err != nil {
					return 0, 0, 0, false
				}
				mods = append(mods, v)
			} else if ts[n].Text != "," {
				return 0, 0, 0, false
			}
		}
		n++
	}
	typmod = -1
	switch oid {
	case 1043, 1042:
		if len(mods) > 0 {
			typmod = mods[0] + 4
		} else if oid == 1042 {
			typmod = 5 // char is char(1)
		}
	case 1700:
		if len(mods) == 1 {
			typmod = mods[0]<<16 + 4
		} else if len(mods) == 2 {
			typmod = mods[0]<<16 | mods[1] + 4
		}
	case 701:
		if first == "float" && len(mods) == 1 && mods[0] <= 24 {
			oid = 700
		}
	case 1083, 1114, 1186:
		if len(mods) == 1 {
			typmod = mods[0]
		}
	}
	if oid == 1083 || oid == 1114 { // time[stamp] [(p)] with[out] time zone
		switch {
		case word(n, "with") && word(n+1, "time") && word(n+2, "zone"):
			oid, n = map[uint32]uint32{1083: 1266, 1114: 1184}[oid], n+3
		case word(n, "without") && word(n+1, "time") && word(n+2, "zone"):
			n += 3
		}
	}
	for n+1 < len(ts) && ts[n].Text == "[" { // [] or [n]: an array of it
		j := n + 1
		if ts[j].Kind == sqltok.Number {
			j++
		}
		if j >= len(ts) || ts[j].Text != "]" {
			break
		}
		if array, ok := pgArrayTypes[oid]; ok {
			oid = array
		} else if !isArrayOID(oid) {
			return 0, 0, 0, false
		}
		n = j + 1
	}
	if word(n, "array") {
		if oid = pgArrayTypes[oid]; oid == 0 {
			return 0, 0, 0, false
		}
		n++
	}
	return oid, typmod, n, true
}

func isArrayOID(oid uint32) bool {
	for _, a := range pgArrayTypes {
		if a == oid {
			return true
		}
	}
	return false
}

// declaredWhere selects the catalog's rows of the table.
func (d *declaredTable) declaredWhere() string {
	return "schema_name = " + schemaExpr(d.schema) + " AND lower(table_name) = lower(" + quoteString(d.name) + ")"
}

// schemaExpr is the schema name s as SQL, the current one for "".
func schemaExpr(s string) string {
	if s == "" {
		return "current_schema()"
	}
	return quoteString(s)
}

// statements are the statements that record the declaration, run after the CREATE TABLE in its
// transaction; none when CREATE TABLE IF NOT EXISTS finds the table there.
func (d *declaredTable) statements(ctx context.Context, conn *sql.Conn) ([]string, error) {
	if d == nil {
		return nil, nil
	}
	if d.ifNotExists {
		var n int
		err := conn.QueryRowContext(ctx, `SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database()
			AND schema_name = coalesce(nullif(?, ''), current_schema()) AND lower(table_name) = lower(?)`, d.schema, d.name).Scan(&n)
		if err != nil || n > 0 {
			return nil, wrapErr(err)
		}
	}
	return d.record(), nil
}

// record writes the table's declaration over any earlier one of its name.
func (d *declaredTable) record() []string {
	stmts := []string{"DELETE FROM " + declaredSchema + ".columns WHERE " + d.declaredWhere(),
		"DELETE FROM " + declaredSchema + ".constraints WHERE " + d.declaredWhere()}
	stmts = append(stmts, d.insertColumns()...)
	for _, c := range d.constraints {
		stmts = append(stmts, c.insert(d.schema, d.name))
	}
	return stmts
}

// insertColumns is the statement that records the declared columns' types (none without any).
func (d *declaredTable) insertColumns() []string {
	var stmts []string
	if len(d.columns) > 0 {
		var rows []string
		for _, c := range d.columns {
			identity := "NULL"
			if c.identity != 0 {
				identity = "'" + string(c.identity) + "'"
			}
			rows = append(rows, fmt.Sprintf("(%s, %d, %d, %s)", quoteString(c.name), c.oid, c.typmod, identity))
		}
		stmts = append(stmts, "INSERT INTO "+declaredSchema+".columns SELECT c.schema_name, c.table_name, c.column_name, c.data_type, v.oid, v.typmod, v.identity "+
			"FROM (VALUES "+strings.Join(rows, ", ")+") v(col, oid, typmod, identity) JOIN duckdb_columns() c ON c.database_name = current_database() "+
			"AND c.schema_name = "+schemaExpr(d.schema)+" AND lower(c.table_name) = lower("+quoteString(d.name)+") AND lower(c.column_name) = lower(v.col)")
	}
	return stmts
}

// columnList is c's columns as a list literal, lower case (as the catalog views compare them).
func (c declaredConstraint) columnList() string {
	cols := make([]string, len(c.columns))
	for i, col := range c.columns {
		cols[i] = quoteString(strings.ToLower(col))
	}
	return "[" + strings.Join(cols, ", ") + "]::VARCHAR[]"
}

// insert is the statement that records c, a constraint of table schema.name.
func (c declaredConstraint) insert(schema, name string) string {
	text := func(s string) string {
		if s == "" || s == "\x00" {
			return "NULL"
		}
		return quoteString(s)
	}
	return fmt.Sprintf("INSERT INTO %s.constraints VALUES (%s, lower(%s), '%c', %s, %s, %s, %s, %s)", declaredSchema,
		schemaExpr(schema), quoteString(name), c.kind, c.columnList(), text(c.name), text(string(c.onDelete)), text(string(c.onUpdate)),
		text(string(c.deferral)))
}

// formatTypeSQL creates format_type's compatibility macro: a type's name as PostgreSQL writes it
// with its modifier (numeric(10,2), character varying(50), timestamp(3) with time zone), an
// array's as its element's with []. Its own alias is one no caller's argument names (pg_dump's
// format_type(t.oid, ...) read the macro's t).
func formatTypeSQL() string {
	var elems []string
	for _, elem := range slices.Sorted(maps.Keys(pgArrayTypes)) {
		elems = append(elems, fmt.Sprintf("WHEN %d THEN %d", pgArrayTypes[elem], elem))
	}
	scalar := func(o string) string {
		return `CASE WHEN ` + o + ` = 1700 AND type_mod > 4 THEN 'numeric(' || ((type_mod - 4) >> 16) || ',' || ((type_mod - 4) & 65535) || ')'
			WHEN ` + o + ` IN (1042, 1043) AND type_mod > 4 THEN CASE WHEN ` + o + ` = 1043 THEN 'character varying' ELSE 'character' END || '(' || (type_mod - 4) || ')'
			WHEN ` + o + ` IN (1083, 1114, 1184, 1266) AND type_mod >= 0 THEN CASE WHEN ` + o + ` IN (1083, 1266) THEN 'time' ELSE 'timestamp' END ||
				'(' || type_mod || ')' || CASE WHEN ` + o + ` IN (1184, 1266) THEN ' with time zone' ELSE ' without time zone' END
			ELSE coalesce((SELECT any_value(qf_ft.qf_formatted) FROM {c}.main.qf_pg_type qf_ft WHERE qf_ft.oid = ` + o + `), '???') END`
	}
	elem := `CASE type_oid ` + strings.Join(elems, " ") + ` END`
	return `CREATE MACRO {c}.main.qf_format_type(type_oid, type_mod) AS CASE WHEN ` + elem + ` IS NOT NULL THEN ` +
		scalar(elem) + ` || '[]' ELSE ` + scalar("type_oid") + ` END`
}

// declaredColumnsView is every column with its PostgreSQL type and identity kind (pg_identity:
// 'a' GENERATED ALWAYS, 'd' BY DEFAULT, NULL none): the declared one while DuckDB's
// type is still the one it had then, else the one its values are sent as (qf_type_oid).
const declaredColumnsView = `CREATE VIEW {c}.main.qf_pg_columns AS SELECT c.*,
	coalesce(d.type_oid, {c}.main.qf_type_oid(c.data_type)) AS pg_type_oid,
	coalesce(d.typmod, CASE WHEN c.data_type LIKE 'DECIMAL(%' THEN ((c.numeric_precision << 16) | c.numeric_scale) + 4 ELSE -1 END)::INTEGER AS pg_typmod,
	CASE WHEN c.column_default LIKE 'nextval(%' THEN d.identity END AS pg_identity
	FROM duckdb_columns() c LEFT JOIN {declared}.columns d ON c.database_name = current_database() AND d.schema_name = c.schema_name
	AND d.table_name = c.table_name AND d.column_name = c.column_name AND d.duck_type = c.data_type`

// declaredNameSQL: a constraint's declared name, else dflt (PostgreSQL's default name of it);
// kind is DuckDB's constraint_type.
const declaredNameSQL = `CREATE MACRO {c}.main.qf_constraint_name(in_db, in_schema, in_table, in_kind, in_cols, in_default) AS
	coalesce((SELECT any_value(d.name) FROM {declared}.constraints d WHERE in_db = current_database()
	AND d.schema_name = in_schema AND d.table_name = lower(in_table)
	AND d.kind = CASE in_kind WHEN 'PRIMARY KEY' THEN 'p' WHEN 'UNIQUE' THEN 'u' WHEN 'FOREIGN KEY' THEN 'f' WHEN 'CHECK' THEN 'c' END
	AND d.columns = list_transform(in_cols, x -> lower(x))), in_default)`

// constraintNameSQL: qf_pg_constraint_name(db, schema, name) is PostgreSQL's name of the
// constraint DuckDB names name (its information_schema's), as pg_constraint names it.
const constraintNameSQL = `CREATE MACRO {c}.main.qf_pg_constraint_name(in_db, in_schema, in_name) AS (SELECT
	any_value({c}.main.qf_constraint_name(k.database_name, k.schema_name, k.table_name, k.constraint_type, k.constraint_column_names,
		CASE k.constraint_type WHEN 'PRIMARY KEY' THEN k.table_name || '_pkey'
		WHEN 'FOREIGN KEY' THEN k.table_name || '_' || array_to_string(k.constraint_column_names, '_') || '_fkey'
		ELSE k.constraint_name END))
	FROM duckdb_constraints() k WHERE k.database_name = in_db AND k.schema_name = in_schema AND k.constraint_name = in_name)`

// declaredByKeySQL is the declared constraints, one row for each schema, table, kind and
// columns (each value the first of its rows that has one, as qf_constraint_name's and
// qf_constraint_action's any_value): the catalog views join it where calling those macros row
// by row would make DuckDB plan a correlated subquery for each call (seconds of planning for
// one ORM's introspection query).
const declaredByKeySQL = `CREATE VIEW {c}.main.qf_declared_by_key AS SELECT schema_name, table_name, kind, columns,
	any_value(name) AS name, any_value(on_delete) AS on_delete, any_value(on_update) AS on_update, any_value(deferral) AS deferral
	FROM {declared}.constraints GROUP BY schema_name, table_name, kind, columns`

// declaredActionSQL: a foreign key's declared ON DELETE (which 'd') or ON UPDATE ('u') action,
// pg_constraint's letter; NO ACTION ('a') when none was declared; which 'x': its deferral
// (declaredConstraint.deferral), 'a' when not deferrable.
const declaredActionSQL = `CREATE MACRO {c}.main.qf_constraint_action(in_db, in_schema, in_table, in_cols, in_which) AS
	coalesce((SELECT any_value(CASE in_which WHEN 'd' THEN d.on_delete WHEN 'u' THEN d.on_update ELSE d.deferral END)
	FROM {declared}.constraints d WHERE in_db = current_database() AND d.schema_name = in_schema
	AND d.table_name = lower(in_table) AND d.kind = 'f' AND d.columns = list_transform(in_cols, x -> lower(x))), 'a')`

// declaredInfoSchemaColumns is a PostgreSQL client's information_schema.columns: each column's
// type described from its PostgreSQL type (qf_pg_columns) as PostgreSQL describes it, a
// serial column's default as PostgreSQL writes it (nextval('t_id_seq'::regclass)), and an
// identity column as PostgreSQL's (no default; is_identity, identity_generation and its
// sequence's start, increment, bounds and cycle).
const declaredInfoSchemaColumns = `CREATE OR REPLACE VIEW {c}.pginfoschema.columns AS SELECT i.* REPLACE (
	{c}.main.qf_pg_schema(i.table_schema) AS table_schema,
	CASE WHEN c.pg_identity IS NULL THEN {c}.main.qf_nextval_text(i.column_default, c.table_oid, false) END AS column_default,
	CASE WHEN c.pg_identity IS NULL THEN 'NO' ELSE 'YES' END AS is_identity,
	CASE c.pg_identity WHEN 'a' THEN 'ALWAYS' WHEN 'd' THEN 'BY DEFAULT' END AS identity_generation,
	CAST(s.start_value AS VARCHAR) AS identity_start, CAST(s.increment_by AS VARCHAR) AS identity_increment,
	CAST(CASE WHEN s.max_value = 9223372036854775807 AND c.pg_type_oid = 23 THEN 2147483647
		WHEN s.max_value = 9223372036854775807 AND c.pg_type_oid = 21 THEN 32767 ELSE s.max_value END AS VARCHAR) AS identity_maximum,
	CAST(s.min_value AS VARCHAR) AS identity_minimum, CASE WHEN s.cycle THEN 'YES' ELSE 'NO' END AS identity_cycle,
	CASE WHEN t.typcategory = 'A' THEN 'ARRAY' WHEN t.oid IS NULL THEN 'USER-DEFINED' ELSE t.qf_formatted END AS data_type,
	CASE WHEN c.pg_type_oid IN (1042, 1043) AND c.pg_typmod > 4 THEN c.pg_typmod - 4 END::INTEGER AS character_maximum_length,
	CASE WHEN c.pg_type_oid IN (1042, 1043) AND c.pg_typmod > 4 THEN (c.pg_typmod - 4) * 4
		WHEN c.pg_type_oid IN (25, 1042, 1043) THEN 1073741824 END::INTEGER AS character_octet_length,
	CASE c.pg_type_oid WHEN 21 THEN 16 WHEN 23 THEN 32 WHEN 20 THEN 64 WHEN 700 THEN 24 WHEN 701 THEN 53
		WHEN 1700 THEN CASE WHEN c.pg_typmod > 4 THEN (c.pg_typmod - 4) >> 16 END END::INTEGER AS numeric_precision,
	CASE WHEN c.pg_type_oid IN (20, 21, 23, 700, 701) THEN 2 WHEN c.pg_type_oid = 1700 THEN 10 END::INTEGER AS numeric_precision_radix,
	CASE WHEN c.pg_type_oid IN (20, 21, 23) THEN 0 WHEN c.pg_type_oid = 1700 AND c.pg_typmod > 4 THEN (c.pg_typmod - 4) & 65535
		END::INTEGER AS numeric_scale,
	CASE WHEN c.pg_type_oid = 1082 THEN 0 WHEN c.pg_type_oid IN (1083, 1114, 1184, 1186, 1266)
		THEN CASE WHEN c.pg_typmod >= 0 THEN c.pg_typmod ELSE 6 END END::INTEGER AS datetime_precision,
	i.table_catalog AS udt_catalog, 'pg_catalog' AS udt_schema, t.typname AS udt_name)
	FROM {c}.infoschema.columns i
	LEFT JOIN {c}.main.qf_pg_columns c ON c.database_name = i.table_catalog AND c.schema_name = i.table_schema
		AND c.table_name = i.table_name AND c.column_name = i.column_name
	LEFT JOIN {c}.main.qf_pg_type t ON t.oid = c.pg_type_oid
	LEFT JOIN (SELECT q.table_oid, q.column_index, d.* FROM {c}.main.qf_column_sequences q
		JOIN duckdb_sequences() d ON d.sequence_oid = q.sequence_oid WHERE q.identity IS NOT NULL) s
		ON s.table_oid = c.table_oid AND s.column_index = c.column_index`

// castRegText rewrites a parenthesized text expression cast to regclass or regtype, w.i at the
// cast's type, the way TypeORM reads its tables back: ('"' || schema || '"."' || name ||
// '"')::regclass, the relation's oid (qf_regclass_of), and ('"' || udt_schema || '"."' ||
// udt_name || '"')::regtype::text, the type's name as PostgreSQL writes it (qf_regtype_text).
func (w *compatWriter) castRegText(name string) bool {
	closing := w.prevSig(w.i) // w.i is at the ::
	if w.word(closing) != ")" || name != "regclass" && name != "regtype" {
		return false
	}
	open, depth := -1, 0
	for j := closing; j >= 0 && open < 0; j-- {
		switch w.word(j) {
		case ")":
			depth++
		case "(":
			if depth--; depth == 0 {
				open = j
			}
		}
	}
	if open < 0 || w.isName(w.prevSig(open)) { // f(x)::regclass: a function's result, an oid
		return false
	}
	hasConcat := false
	for _, t := range w.toks[open:closing] {
		hasConcat = hasConcat || t.Text == "||"
	}
	if !hasConcat {
		return false
	}
	if name == "regtype" {
		cast := w.sig(w.qualified(w.sig(w.i+1, 0))+1, 0)
		if to := w.word(w.sig(cast+1, 0)); w.word(cast) != "::" || to != "text" && to != "varchar" {
			return false // compared as an oid
		}
	}
	operand, ok := w.retract(open)
	if !ok {
		return false
	}
	fn := map[string]string{"regclass": "qf_regclass_of", "regtype": "qf_regtype_text"}[name]
	w.emit(compatPrefix + fn + operand)
	return true
}

// regTextSQL: qf_regclass_of('"schema"."name"') is the relation's oid (NULL when there is none),
// qf_regtype_text('"pg_catalog"."int4"') the type's name as regtype prints it ("integer").
var regTextSQL = []string{
	`CREATE MACRO {c}.main.qf_regclass_of(x) AS (SELECT any_value(c.oid) FROM {c}.main.qf_pg_class c
		JOIN {c}.main.qf_pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relname = trim(string_split(x, '.')[-1], '"')
		AND (len(string_split(x, '.')) = 1 OR n.nspname = trim(string_split(x, '.')[-2], '"')))`,
	`CREATE MACRO {c}.main.qf_regtype_text(x) AS coalesce((SELECT any_value(t.qf_formatted) FROM {c}.main.qf_pg_type t
		WHERE t.typname = trim(string_split(x, '.')[-1], '"')), x)`,
}

// selectedAlone reports whether the cast at w.i (its ::) of the literal before it is a whole
// item of the outer select list: SELECT 't'::regclass [AS x], ...
func (w *compatWriter) selectedAlone() bool {
	lit := w.prevSig(w.i)
	if w.depth(lit) > 0 || !startsSelectItem(w.word(w.prevSig(lit))) {
		return false
	}
	next := w.sig(w.qualified(w.sig(w.i+1, 0))+1, 0)
	switch w.word(next) {
	case "", ",", ";", "as", "from":
		return true
	}
	return w.toks[next].Kind == sqltok.QuotedIdent || w.toks[next].Kind == sqltok.Word && !notAlias[w.word(next)] && !relationEnds[w.word(next)]
}
