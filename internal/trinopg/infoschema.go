package trinopg

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// Trino's information_schema.columns has eight columns (table_catalog, table_schema,
// table_name, column_name, ordinal_position as bigint, column_default, is_nullable, data_type),
// data_type in Trino's names (varchar(5), timestamp(3), double); PostgreSQL's has 44, its
// types in its own names. A Trino client's information_schema.columns is read as a subquery of
// PostgreSQL's with Trino's columns, typed as DESCRIBE types them (show.go).

// Trino's hidden columns, comment and extra_info (what its DESCRIBE reads as Comment and
// Extra), are in the subquery only for a statement that names one (hiddenColumns): a * lists
// every column of a subquery.

// trinoColumns is that subquery, trinoColumnsHidden the one with the hidden columns.
const (
	trinoColumns       = trinoColumnsSelect + trinoColumnsFrom
	trinoColumnsHidden = trinoColumnsSelect + `, col_description(a.attrelid, a.attnum) AS comment, NULL::text AS extra_info ` + trinoColumnsFrom
)

const trinoColumnsSelect = `(SELECT c.table_catalog::text AS table_catalog, c.table_schema::text AS table_schema, ` +
	`c.table_name::text AS table_name, c.column_name::text AS column_name, c.ordinal_position::bigint AS ordinal_position, ` +
	`c.column_default::text AS column_default, c.is_nullable::text AS is_nullable, ` + trinoType + ` AS data_type `

const trinoColumnsFrom = `FROM information_schema.columns c JOIN pg_attribute a ` +
	`ON a.attrelid = CAST(quote_ident(c.table_schema) || '.' || quote_ident(c.table_name) AS regclass) AND a.attname = c.column_name ` +
	`CROSS JOIN LATERAL (SELECT format_type(a.atttypid, a.atttypmod) AS whole) f ` +
	`CROSS JOIN LATERAL (SELECT regexp_replace(f.whole, '(\[\])+$', '') AS t) d)`

// notAliases are the words that may follow a table in FROM without naming it.
var notAliases = map[string]bool{"where": true, "join": true, "left": true, "right": true, "inner": true, "full": true,
	"cross": true, "natural": true, "on": true, "using": true, "group": true, "order": true, "limit": true, "offset": true,
	"fetch": true, "having": true, "window": true, "union": true, "except": true, "intersect": true}

// infoSchemaColumns is sqlText with each information_schema.columns read as trinoColumns (named
// columns unless the statement names it), and those replacements.
func infoSchemaColumns(sqlText string) (string, []edit) {
	if !sqltok.ContainsFold(sqlText, "information_schema") {
		return sqlText, nil
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.Trino)
	subquery := trinoColumns
	for _, t := range toks {
		if isWord(t, "comment") || isWord(t, "extra_info") || t.Kind == sqltok.QuotedIdent && (t.Text == `"comment"` || t.Text == `"extra_info"`) {
			subquery = trinoColumnsHidden
			break
		}
	}
	var b strings.Builder
	var edits []edit
	at := 0
	for i := 0; i+2 < len(toks); i++ {
		if !isWord(toks[i], "information_schema") || toks[i+1].Text != "." || !isWord(toks[i+2], "columns") || i > 0 && toks[i-1].Text == "." {
			continue
		}
		out := subquery
		if next := i + 3; next >= len(toks) || toks[next].Kind != sqltok.Word && toks[next].Kind != sqltok.QuotedIdent ||
			toks[next].Kind == sqltok.Word && notAliases[strings.ToLower(toks[next].Text)] {
			out += " AS columns"
		}
		end := toks[i+2].Pos + len(toks[i+2].Text)
		b.WriteString(sqlText[at:toks[i].Pos])
		b.WriteString(out)
		edits = append(edits, edit{at: toks[i].Pos, old: end - toks[i].Pos, new: len(out)})
		at = end
		i += 2
	}
	if at == 0 {
		return sqlText, nil
	}
	b.WriteString(sqlText[at:])
	return b.String(), edits
}
