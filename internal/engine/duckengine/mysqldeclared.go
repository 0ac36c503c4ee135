package duckengine

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's VARCHAR(n) and CHAR(n), which DuckDB keeps as VARCHAR without a length (and
// TINYINT(1), a TINYINT to DuckDB):
// their lengths are recorded in the declared catalog (pgdeclared.go, the catalog PostgreSQL
// clients' declarations go to, as PostgreSQL's varchar(n) and char(n)) by CREATE TABLE and
// by ALTER TABLE's ADD, MODIFY, CHANGE, DROP and RENAME COLUMN, so that SHOW COLUMNS, SHOW
// CREATE TABLE and information_schema.COLUMNS (COLUMN_TYPE, DATA_TYPE,
// CHARACTER_MAXIMUM_LENGTH) say varchar(n) as MariaDB does, while DuckDB's type of the column
// is still the one it had then. ORMs that compare their entities with the database at start
// (TypeORM's synchronize, Sequelize's sync({alter})) saw text where they declared varchar(n)
// and changed the column at every start.

// tinyintOne is the typmod recorded with a TINYINT(1) column (BOOLEAN to MySQL ORMs: Sequelize's,
// TypeORM's), which DuckDB keeps as a TINYINT: PostgreSQL's smallint (oid 21) has no typmod, and
// one there changes nothing PostgreSQL clients read.
const tinyintOne = 1

// yearFour is the typmod recorded with a YEAR column (mysqlyear.go), a USMALLINT to DuckDB.
const yearFour = 4

// mysqlDeclaredColumn is the declared catalog's row of a column definition (its name at d[0],
// its type after it) when the type is CHAR(n), VARCHAR(n), TINYINT(1) or YEAR.
func mysqlDeclaredColumn(d []sqltok.Token) (declaredColumn, bool) {
	if len(d) < 2 || d[0].Kind != sqltok.Word && d[0].Kind != sqltok.QuotedIdent {
		return declaredColumn{}, false
	}
	if len(d) >= 5 && d[1].IsWord("tinyint") && d[2].Text == "(" && d[3].Text == "1" && d[4].Text == ")" && (len(d) == 5 || !d[5].IsWord("unsigned", "zerofill")) {
		return declaredColumn{name: identText(d[0]), oid: 21, typmod: tinyintOne}, true
	}
	if d[1].IsWord("year") {
		return declaredColumn{name: identText(d[0]), oid: 21, typmod: yearFour}, true
	}
	oid, typmod, _, ok := readPGType(d[1:])
	if !ok || oid != 1043 && oid != 1042 || typmod <= 4 {
		return declaredColumn{}, false
	}
	return declaredColumn{name: identText(d[0]), oid: oid, typmod: typmod}, true
}

// mysqlDeclaredColumns are the statements that record table's declared columns cols, over
// what the catalog held for the columns named in forget (every column of the table for nil).
func mysqlDeclaredColumns(table string, cols []declaredColumn, forget []string) []string {
	where := "schema_name = current_schema() AND lower(table_name) = lower(" + quoteString(table) + ")"
	if forget != nil {
		names := make([]string, len(forget))
		for i, c := range forget {
			names[i] = "lower(" + quoteString(c) + ")"
		}
		where += " AND lower(column_name) IN (" + strings.Join(names, ", ") + ")"
	}
	d := declaredTable{name: table, columns: cols}
	return append([]string{"DELETE FROM " + declaredSchema + ".columns WHERE " + where}, d.insertColumns()...)
}

// isDeclaredColumnsStatement reports whether s is one of mysqlDeclaredColumns' statements.
func isDeclaredColumnsStatement(s string) bool {
	return strings.HasPrefix(s, "DELETE FROM "+declaredSchema+".columns ") || strings.HasPrefix(s, "INSERT INTO "+declaredSchema+".columns ")
}

// movedColumns are the statements that give the renamed table its columns' declared types.
func (r tableRename) movedColumns() []string {
	return []string{mysqlDeclaredColumns(r.to, nil, nil)[0], "UPDATE " + declaredSchema + ".columns SET table_name = " + quoteString(r.to) +
		" WHERE schema_name = current_schema() AND lower(table_name) = lower(" + quoteString(r.from) + ")"}
}

// alterDeclared are the statements that record what ALTER TABLE table's ADD, MODIFY or CHANGE
// (verb) of column col declares (def: the new name and type for CHANGE, else the type), and
// what its DROP and RENAME COLUMN leave (to: RENAME's new name).
func alterDeclared(table, verb string, col sqltok.Token, def []sqltok.Token) []string {
	name := identText(col)
	switch verb {
	case "add", "modify":
		c, ok := mysqlDeclaredColumn(append([]sqltok.Token{col}, def...))
		return mysqlDeclaredColumns(table, declaredIf(c, ok), []string{name})
	case "change":
		c, ok := mysqlDeclaredColumn(def)
		return mysqlDeclaredColumns(table, declaredIf(c, ok), []string{name, identText(def[0])})
	case "drop":
		return mysqlDeclaredColumns(table, nil, []string{name})
	case "rename":
		return []string{"UPDATE " + declaredSchema + ".columns SET column_name = " + quoteString(identText(def[1])) +
			" WHERE schema_name = current_schema() AND lower(table_name) = lower(" + quoteString(table) + ") AND lower(column_name) = lower(" +
			quoteString(name) + ")"}
	}
	return nil
}

func declaredIf(c declaredColumn, ok bool) []declaredColumn {
	if !ok {
		return nil
	}
	return []declaredColumn{c}
}
