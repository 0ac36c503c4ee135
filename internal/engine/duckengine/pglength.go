package duckengine

import (
	"context"
	"database/sql"
	"regexp"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A PostgreSQL client's varchar(n) and char(n) columns refuse a longer value, as PostgreSQL's
// do: 22001 `value too long for type character varying(n)` (`character(n)`), on INSERT, UPDATE,
// COPY FROM, INSERT ... SELECT and an upsert's update alike. DuckDB keeps no length, so a
// PostgreSQL client's CREATE TABLE gets one CHECK per such column, before every other
// constraint (PostgreSQL fits a value to its column's type before it checks the row's
// constraints): `character_length(rtrim(col, ' ')) <= n` for varchar(n),
// `character_length(rtrim(col)) <= n` for char(n) (trailing spaces do not count: PostgreSQL
// cuts them off a value too long by spaces only). DuckDB checks the rows wherever they come
// from; its violation is given PostgreSQL's error (checkViolation), and the checks are hidden
// from the catalogs (pg_constraint, information_schema.check_constraints and
// table_constraints): a client sees the column's type, as on PostgreSQL.
//
// A column added by ALTER TABLE ... ADD COLUMN (DuckDB adds no column with a constraint) or
// given a varchar(n) type by ALTER COLUMN ... TYPE gets its check by the table created again.

// lengthCheckPattern matches a length check's expression, as duckdb_constraints() writes it
// (with or without CHECK( ... ) around, as its constraint_text and information_schema's
// check_clause write it): the column, rtrim's second argument (varchar) or none (char), n.
var lengthCheckPattern = regexp.MustCompile(`^(?:CHECK\()?\(character_length\(rtrim\((.+?)(, ' ')?\)\) <= ([0-9]+)\)\)?$`)

// lengthCheckSQL is lengthCheckPattern for DuckDB's regexp_matches, in a literal.
const lengthCheckSQL = `'^(CHECK\()?\(character_length\(rtrim\(.+\)\) <= [0-9]+\)\)?$'`

// lengthChecks is the checks of decl's varchar(n) and char(n) columns, each followed by ", ";
// "" when it has none.
func lengthChecks(decl *declaredTable) string {
	if decl == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range decl.columns {
		if check := lengthCheck(c.name, c.oid, c.typmod); check != "" {
			b.WriteString(check + ", ")
		}
	}
	return b.String()
}

// lengthCheck is the length check of a column of type oid (typmod), "" when it has none.
func lengthCheck(col string, oid uint32, typmod int32) string {
	n := int(typmod) - 4
	if n <= 0 || oid != 1043 && oid != 1042 {
		return ""
	}
	trim := ""
	if oid == 1043 {
		trim = ", ' '"
	}
	return "CHECK (character_length(rtrim(" + quoteIdent(col) + trim + ")) <= " + strconv.Itoa(n) + ")"
}

// lengthCheckRetyped is the statements giving a column the length check of its new type
// (ALTER TABLE ... ALTER COLUMN ... TYPE, pgalter.go): the table created again without its
// old check and with the new one (rows the new one refuses: 22001), as DuckDB alters no
// check; none when the check stays the same. DuckDB also changes no type of a column a check
// names: the statements come before the ALTER.
func lengthCheckRetyped(ctx context.Context, conn *sql.Conn, schema, table, col string, oldOID uint32, oldMod int32, newOID uint32, newMod int32) ([]string, error) {
	was, will := lengthCheck(col, oldOID, oldMod), lengthCheck(col, newOID, newMod)
	if was == will {
		return nil, nil
	}
	// DuckDB writes the column's name bare or quoted
	names := regexp.QuoteMeta(col) + "|" + regexp.QuoteMeta(quoteIdent(col))
	old := regexp.MustCompile(`, CHECK\(\(character_length\(rtrim\((?:` + names + `)(?:, ' ')?\)\) <= [0-9]+\)\)`)
	return tableRebuiltWith(ctx, conn, schema, table, func(ddl string) string {
		ddl = old.ReplaceAllLiteralString(ddl, "")
		if will != "" { // before the table's other checks, as it is checked first
			at := strings.Index(ddl, ", CHECK(")
			if at < 0 {
				at = strings.LastIndex(ddl, ")")
			}
			ddl = ddl[:at] + ", " + will + ddl[at:]
		}
		return ddl
	})
}

// withLengthChecks is stmts with decl's length checks first in the CREATE TABLE among them.
func withLengthChecks(stmts []string, decl *declaredTable) []string {
	checks := lengthChecks(decl)
	if checks == "" {
		return stmts
	}
	out := append([]string(nil), stmts...)
	for i, s := range out {
		h, ok := readCreateTable(s, sqltok.Postgres)
		if !ok {
			continue
		}
		at := h.toks[h.open].Pos + 1
		if _, end := definitions(h.toks, h.open); end < 0 || end == h.open+1 {
			return stmts // no column: nothing to check
		}
		out[i] = s[:at] + checks + s[at:]
		return out
	}
	return stmts
}

// lengthViolation is PostgreSQL's error for a violated length check's constraint text, ok false
// for any other check.
func lengthViolation(constraintText string) (err *query.Error, ok bool) {
	m := lengthCheckPattern.FindStringSubmatch(constraintText)
	if m == nil {
		return nil, false
	}
	typ := "character varying"
	if m[2] == "" {
		typ = "character"
	}
	return &query.Error{Code: sqlstate.StringDataRightTruncation, Message: "value too long for type " + typ + "(" + m[3] + ")"}, true
}
