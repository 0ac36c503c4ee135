package duckengine

import (
	"context"
	"database/sql"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// PostgreSQL's INSERT INTO t VALUES (...) without a column list may give fewer values than t
// has columns: they go to the first columns and the rest take their defaults. DuckDB refuses
// that ("table t has 4 columns but 3 values were supplied"). A PostgreSQL client's such
// INSERT gets the column list of the first columns written in, one per value of its first
// row (PostgreSQL wants every row as long: DuckDB says so of a longer or shorter later row),
// the table's columns read as pgtypmod.go reads them (kept per table for pooled
// connections). An INSERT with as many values as columns, or more (DuckDB's error), a column
// list, DEFAULT VALUES or a SELECT is left as written.

// pgInsertDefaults is q with such an INSERT's column list written in; q as it is otherwise.
func pgInsertDefaults(ctx context.Context, conn *sql.Conn, client, q *query.Request) *query.Request {
	if client.Protocol != query.ProtocolPostgres || !sqltok.FirstKeywordIs(q.SQL, sqltok.Postgres, "insert") {
		return q
	}
	toks := sqltok.SignificantTokens(q.SQL, sqltok.Postgres)
	if len(toks) < 5 || !isWord(toks[1], "into") {
		return q
	}
	var name []string
	i := 2
	for i < len(toks) && (toks[i].Kind == sqltok.Word || toks[i].Kind == sqltok.QuotedIdent) {
		name = append(name, pgIdent(toks[i]))
		if i++; i >= len(toks) || toks[i].Text != "." {
			break
		}
		i++
	}
	if len(name) == 0 || len(name) > 3 || i >= len(toks) {
		return q
	}
	if isWord(toks[i], "as") && i+1 < len(toks) {
		i += 2 // an alias
	}
	at := toks[i-1].Pos + len(toks[i-1].Text) // where a column list goes
	if i+1 < len(toks) && isWord(toks[i], "overriding") {
		i += 3 // OVERRIDING {SYSTEM | USER} VALUE
	}
	if i+1 >= len(toks) || !isWord(toks[i], "values") || toks[i+1].Text != "(" {
		return q
	}
	values, depth := 1, 0
	for j := i + 1; j < len(toks); j++ {
		switch toks[j].Text {
		case "(", "[":
			depth++
		case ")", "]":
			depth--
		case ",":
			if depth == 1 {
				values++
			}
		}
		if depth == 0 {
			break
		}
	}
	full := append([]string{"", "main"}[:3-len(name)], name...)
	full[1] = duckSchema(full[1])
	cols := cachedPgTypes(ctx, conn, full[0], full[1], full[2])
	if values >= len(cols) {
		return q
	}
	list := make([]string, values)
	for k := range list {
		list[k] = quoteIdent(cols[k].name)
	}
	out := *q
	out.SQL = q.SQL[:at] + " (" + strings.Join(list, ", ") + ")" + q.SQL[at:]
	return &out
}
