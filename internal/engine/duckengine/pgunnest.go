package duckengine

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// zippedUnnest writes PostgreSQL's unnest of several arrays side by side, a FROM item,
// unnest(a, b, ...) WITH ORDINALITY alias(x, y, ..., n) (Django's introspection reads an
// index's keys and options so: unnest(i.indkey, i.indoption) WITH ORDINALITY koi(key, option,
// arridx)), as DuckDB's unnest takes one list: a subquery unnesting each in one select list
// (DuckDB pads the shorter with NULL, as PostgreSQL does), the first's subscripts as n. False
// for any other form, which is written as before.
func (w *compatWriter) zippedUnnest() bool {
	open := w.sig(w.i+1, 0)
	if w.word(open) != "(" {
		return false
	}
	args, end := w.topLevelItems(open)
	if end < 0 || len(args) < 2 || w.word(w.sig(end+1, 0)) != "with" || w.word(w.sig(end+1, 1)) != "ordinality" {
		return false
	}
	alias := w.sig(end+1, 2)
	if alias < 0 || w.toks[alias].Kind != sqltok.Word && w.toks[alias].Kind != sqltok.QuotedIdent || w.word(w.sig(alias+1, 0)) != "(" {
		return false
	}
	names, last := w.topLevelItems(w.sig(alias+1, 0))
	if last < 0 || len(names) != len(args)+1 {
		return false
	}
	items := make([]string, len(names))
	for k, a := range args {
		items[k] = "unnest(" + a + ") AS " + names[k]
	}
	items[len(args)] = "generate_subscripts(" + args[0] + ", 1) AS " + names[len(args)]
	w.emit("(SELECT " + strings.Join(items, ", ") + ") " + w.toks[alias].Text)
	w.i = last + 1
	return true
}

// topLevelItems are the texts of the comma-separated items between the parenthesis at open
// and its match (end), trimmed; end is -1 when it is not closed.
func (w *compatWriter) topLevelItems(open int) (items []string, end int) {
	depth, start := 0, open+1
	for j := open; j < len(w.toks); j++ {
		switch w.toks[j].Text {
		case "(":
			depth++
		case ")":
			if depth--; depth == 0 {
				return append(items, w.text(start, j)), j
			}
		case ",":
			if depth == 1 {
				items, start = append(items, w.text(start, j)), j+1
			}
		}
	}
	return nil, -1
}

// text is the statement's text of tokens from up to to, trimmed.
func (w *compatWriter) text(from, to int) string {
	var b strings.Builder
	for _, t := range w.toks[from:to] {
		b.WriteString(t.Text)
	}
	return strings.TrimSpace(b.String())
}
