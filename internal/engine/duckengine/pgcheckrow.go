package duckengine

import (
	"context"
	"database/sql"
	"strings"
	"unicode/utf8"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// PostgreSQL's violated CHECK names the row in its DETAIL: `Failing row contains (-1, x,
// null).`, each column's value as its type writes it (null for NULL, t and f for booleans, a
// value longer than 64 bytes cut there and followed by ...). DuckDB's error names no row, so
// the row is found again after the statement failed: for an INSERT ... VALUES (without ON
// CONFLICT) the first of its rows, with the defaults of the columns it does not give, that
// fails the check; for a single-table UPDATE ... SET ... [WHERE ...] the first row it would
// have written that fails it. A row given a sequence's next value (a serial's default), a
// DEFAULT in VALUES, a statement of any other form or one whose rows cannot be read again (a
// table of the client's open transaction) gets no DETAIL.

// failingRowMax is how many bytes of a value the DETAIL shows (PostgreSQL's maxfieldlen).
const failingRowMax = 64

// failingRow is the DETAIL of client's statement's violation of check (DuckDB's text of it,
// CHECK((...))) on schema.table, "" when the row cannot be told.
func failingRow(ctx context.Context, conn *sql.Conn, client *query.Request, schema, table, check string) string {
	if !sqltok.FirstKeywordIs(client.SQL, sqltok.Postgres, "insert", "update") {
		return ""
	}
	cond, ok := strings.CutPrefix(check, "CHECK(")
	if cond, ok = strings.CutSuffix(cond, ")"); !ok {
		return ""
	}
	type col struct{ name, typ, def string }
	rows, err := conn.QueryContext(ctx, `SELECT column_name, data_type, coalesce(column_default, '') FROM duckdb_columns()
		WHERE database_name = current_database() AND schema_name = ? AND table_name = ? ORDER BY column_index`, schema, table)
	if err != nil {
		return ""
	}
	var cols []col
	for rows.Next() {
		var c col
		if rows.Scan(&c.name, &c.typ, &c.def) != nil {
			rows.Close()
			return ""
		}
		cols = append(cols, c)
	}
	rows.Close()
	if rows.Err() != nil || len(cols) == 0 {
		return ""
	}
	toks := sqltok.SignificantTokens(client.SQL, sqltok.Postgres)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	_, at, ok := pgWriteTarget(toks)
	if !ok {
		return ""
	}
	source := make([]string, len(cols)) // each column's value, an expression over the rows read
	var from string
	if isWord(toks[0], "insert") {
		names := make([]string, len(cols))
		for i, c := range cols {
			names[i] = c.name
		}
		listed := at < len(toks) && toks[at].Text == "("
		if listed {
			defs, end := definitions(toks, at)
			if end < 0 {
				return ""
			}
			names = names[:0]
			for _, d := range defs {
				if len(d) != 1 {
					return ""
				}
				names = append(names, pgIdent(d[0]))
			}
			at = end + 1
		}
		if at >= len(toks) || !isWord(toks[at], "values") || at+1 >= len(toks) || toks[at+1].Text != "(" {
			return ""
		}
		last := at + 1
		for i := at + 1; i < len(toks) && toks[i].Text == "("; {
			defs, end := definitions(toks, i)
			if end < 0 {
				return ""
			}
			if !listed && len(defs) < len(names) {
				names = names[:len(defs)] // fewer values than columns: the first columns' (pginsertdefaults.go)
			}
			last = end
			if i = end + 1; i >= len(toks) || toks[i].Text != "," {
				break
			}
			i++
		}
		if last+1 != len(toks) {
			return "" // ON CONFLICT, RETURNING: the row written may be another
		}
		for _, t := range toks[at+1 : last] {
			if isWord(t, "default") {
				return ""
			}
		}
		aliases := make([]string, len(names))
		for i, n := range names {
			aliases[i] = quoteIdent("qf_" + n)
		}
		from = "(VALUES " + client.SQL[toks[at+1].Pos:toks[last].Pos+1] + ") AS qf_v(" + strings.Join(aliases, ", ") + ")"
		for i, c := range cols {
			source[i] = "NULL"
			if c.def != "" {
				if containsFold(c.def, "nextval") {
					return ""
				}
				source[i] = c.def
			}
			for j, n := range names {
				if strings.EqualFold(n, c.name) {
					source[i] = aliases[j]
				}
			}
		}
	} else {
		first := 1
		if isWord(toks[1], "only") {
			first = 2
		}
		where, end := -1, len(toks)
		depth := 0
		for i := at; i < len(toks); i++ {
			switch {
			case toks[i].Text == "(":
				depth++
			case toks[i].Text == ")":
				depth--
			case depth == 0 && isWord(toks[i], "from"):
				return "" // UPDATE ... FROM: not read again here
			case depth == 0 && isWord(toks[i], "where") && where < 0:
				where = i
			case depth == 0 && isWord(toks[i], "returning"):
				end = i
			}
		}
		for i, c := range cols {
			source[i] = quoteIdent(c.name)
		}
		for _, a := range setAssignments(toks[:end]) {
			name := sqltok.Token{Kind: sqltok.Word, Text: a.col}
			if strings.HasPrefix(a.col, `"`) {
				name.Kind = sqltok.QuotedIdent
			}
			if len(a.expr) == 0 {
				return ""
			}
			text := client.SQL[a.expr[0].Pos : a.expr[len(a.expr)-1].Pos+len(a.expr[len(a.expr)-1].Text)]
			if len(a.expr) == 1 && isWord(a.expr[0], "default") {
				return ""
			}
			for i, c := range cols {
				if strings.EqualFold(c.name, pgIdent(name)) {
					source[i] = "(" + text + ")"
				}
			}
		}
		from = client.SQL[toks[first].Pos:toks[at].Pos]
		if where >= 0 {
			last := toks[end-1]
			from += " " + client.SQL[toks[where].Pos:last.Pos+len(last.Text)]
		}
	}
	proj, out := make([]string, len(cols)), make([]string, len(cols))
	for i, c := range cols {
		proj[i] = "CAST(" + source[i] + " AS " + c.typ + ") AS " + quoteIdent(c.name)
		out[i] = "CAST(" + quoteIdent(c.name) + " AS VARCHAR)"
	}
	inner := pgCompat(&query.Request{SQL: "SELECT " + strings.Join(proj, ", ") + " FROM " + from, Protocol: query.ProtocolPostgres})
	q := "SELECT " + strings.Join(out, ", ") + " FROM (" + inner + ") qf_r WHERE NOT coalesce((" + cond + "), true) LIMIT 1"
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if conn.QueryRowContext(ctx, q, client.Args...).Scan(ptrs...) != nil {
		return ""
	}
	shown := make([]string, len(cols))
	for i, v := range vals {
		switch {
		case !v.Valid:
			shown[i] = "null"
		case cols[i].typ == "BOOLEAN":
			shown[i] = map[string]string{"true": "t", "false": "f"}[v.String]
		case len(v.String) > failingRowMax:
			cut := v.String[:failingRowMax]
			for !utf8.ValidString(cut) {
				cut = cut[:len(cut)-1]
			}
			shown[i] = cut + "..."
		default:
			shown[i] = v.String
		}
	}
	return "Failing row contains (" + strings.Join(shown, ", ") + ")."
}
