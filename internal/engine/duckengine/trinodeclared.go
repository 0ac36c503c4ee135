package duckengine

import (
	"cmp"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Types Trino gives that DuckDB has no type for: now(), current_timestamp and
// from_unixtime(x) are timestamp(3) with time zone in Trino, DuckDB's one TIMESTAMPTZ
// (microseconds) here; cast(x as varchar(7)) is varchar(7), DuckDB's VARCHAR (it drops the
// length at parse). Where a Trino client's select item is one of those (with or without an
// alias), its column carries the Trino type (engine.MetaTrinoDeclared), which the Trino
// frontend announces, its values cut to that precision. An item inside an expression, or a
// column of a table declared varchar(n), keeps DuckDB's type.

// trinoDeclared is the Trino type of each select item of q's text, "" where DuckDB's type
// tells it; nil for any statement but a Trino client's SELECT naming one of those, and for a
// select list with a * (its columns are not its items).
func trinoDeclared(q *query.Request) []string {
	written := cmp.Or(q.ClientSQL, q.SQL)
	if q.Protocol != query.ProtocolTrino || !containsFold(written, "now") && !containsFold(written, "current_timestamp") &&
		!containsFold(written, "from_unixtime") && !containsFold(written, "varchar") {
		return nil
	}
	texts := selectItemTexts(written)
	declared := make([]string, len(texts))
	some := false
	for i, text := range texts {
		toks := withoutAlias(sqltok.SignificantTokens(text, sqltok.Generic))
		if len(toks) > 0 && toks[len(toks)-1].Text == "*" {
			return nil // a * or t.*
		}
		declared[i] = trinoItemType(toks)
		some = some || declared[i] != ""
	}
	if !some {
		return nil
	}
	return declared
}

// withoutAlias is an item's tokens without its alias (AS name, or a name after the expression).
func withoutAlias(toks []sqltok.Token) []sqltok.Token {
	n := len(toks)
	switch {
	case n >= 3 && isWord(toks[n-2], "as"):
		return toks[:n-2]
	case n >= 2 && (toks[n-1].Kind == sqltok.Word || toks[n-1].Kind == sqltok.QuotedIdent) &&
		(toks[n-2].Text == ")" || toks[n-2].Kind == sqltok.Word && !isWord(toks[n-2], "as")):
		return toks[:n-1]
	}
	return toks
}

// trinoItemType is the Trino type of a select item's expression where DuckDB's says less.
func trinoItemType(toks []sqltok.Token) string {
	switch {
	case len(toks) == 1 && isWord(toks[0], "current_timestamp"),
		len(toks) == 3 && isWord(toks[0], "now") && toks[1].Text == "(" && toks[2].Text == ")",
		len(toks) >= 4 && isWord(toks[0], "from_unixtime") && toks[1].Text == "(" && closes(toks, 1) == len(toks)-1:
		return "timestamp(3) with time zone"
	case len(toks) >= 8 && isWord(toks[0], "cast") && toks[1].Text == "(" && closes(toks, 1) == len(toks)-1:
		n := len(toks) // ... AS varchar ( digits ) )
		if isWord(toks[n-6], "as") && isWord(toks[n-5], "varchar") && toks[n-4].Text == "(" &&
			toks[n-3].Kind == sqltok.Number && strings.Trim(toks[n-3].Text, "0123456789") == "" && toks[n-2].Text == ")" {
			return "varchar(" + toks[n-3].Text + ")"
		}
	}
	return ""
}

// closes is the index of the token that closes the parenthesis at open; -1 when none does.
func closes(toks []sqltok.Token, open int) int {
	depth := 0
	for j := open; j < len(toks); j++ {
		depth += parenStep(toks[j])
		if depth == 0 {
			return j
		}
	}
	return -1
}

// declare gives each column the Trino type its select item declared, when the items are the
// columns one for one.
func declare(cols []column, declared []string) {
	if len(declared) != len(cols) {
		return
	}
	for i := range cols {
		cols[i].declared = declared[i]
	}
}
