package trinomy

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
	"github.com/queryflux/queryflux/internal/trinopg"
)

// Trino's row(1, 'a') is a value, row(integer, varchar(1)) written [1, "a"]; MariaDB's ROW(...)
// is a comparison's operand only (a select item of one fails 1241 "Operand should contain 1
// column(s)"), and it has no row type (cast(row(..) as row(x integer, ..)) is 1064). A select
// item that is a row, or a cast of one to a row type, is MariaDB's JSON_ARRAY of its fields
// (each cast to its field's type), rows inside it too; the Trino frontend announces the row
// its text declares (trinodecl's rows.go) and writes the array. A row elsewhere (row(x, y) =
// row(1, 'a')) is MariaDB's own.

// rowItems writes the select items of toks that are rows as JSON arrays.
func rowItems(toks []sqltok.Token, text, pre, post []string) {
	los, his := trinopg.ItemBounds(toks)
	for k, lo := range los {
		hi := his[k]
		switch {
		case lo+1 < hi && toks[lo].IsWord("row") && toks[lo+1].Text == "(":
			end := closing(toks, lo+1, "(", ")")
			if end < 0 || end > hi || !aliasOnly(toks[end:hi]) {
				continue
			}
			arrays(toks, text, lo, end)
		case lo+3 < hi && toks[lo].IsWord("cast") && toks[lo+1].Text == "(" && toks[lo+2].IsWord("row") && toks[lo+3].Text == "(":
			castRow(toks, text, pre, post, lo, hi)
		}
	}
}

// arrays writes each row(...) of toks[lo:end] as JSON_ARRAY(...).
func arrays(toks []sqltok.Token, text []string, lo, end int) {
	for j := lo; j+1 < end; j++ {
		if toks[j].IsWord("row") && toks[j+1].Text == "(" && (j == lo || toks[j-1].Text == "(" || toks[j-1].Text == ",") {
			text[j] = "JSON_ARRAY"
		}
	}
}

// castRow writes the select item toks[lo:hi], cast(row(a, b) as row(x t1, y t2)) [alias], as
// JSON_ARRAY(CAST(a AS t1'), CAST(b AS t2')), t' MariaDB's cast type of t; left as written
// when a field's type has none.
func castRow(toks []sqltok.Token, text, pre, post []string, lo, hi int) {
	castEnd := closing(toks, lo+1, "(", ")")
	rowEnd := closing(toks, lo+3, "(", ")")
	if castEnd < 0 || castEnd > hi || !aliasOnly(toks[castEnd:hi]) || rowEnd < 0 || rowEnd+3 >= castEnd ||
		!toks[rowEnd].IsWord("as") || !toks[rowEnd+1].IsWord("row") || toks[rowEnd+2].Text != "(" ||
		closing(toks, rowEnd+2, "(", ")") != castEnd-1 {
		return
	}
	args := splitAt(toks, lo+4, rowEnd-1)
	fields := splitAt(toks, rowEnd+3, castEnd-2)
	if len(args) != len(fields) {
		return
	}
	types := make([]string, len(fields))
	for i, f := range fields {
		if f[1]-f[0] < 2 {
			return
		}
		t, ok := castType(toks[f[0]+1 : f[1]])
		if !ok {
			return
		}
		types[i] = t
	}
	arrays(toks, text, lo+2, rowEnd)
	text[lo], text[lo+1] = "", ""
	for i, a := range args {
		if types[i] != "" {
			pre[a[0]] = "CAST(" + pre[a[0]]
			post[a[1]-1] += " AS " + types[i] + ")"
		}
	}
	for j := rowEnd; j < castEnd; j++ {
		text[j] = ""
	}
}

// splitAt is the [first, past-the-last) token range of each comma-separated part of
// toks[from:to] outside parentheses.
func splitAt(toks []sqltok.Token, from, to int) [][2]int {
	var parts [][2]int
	depth, start := 0, from
	for j := from; j < to; j++ {
		depth += sqltok.ParenStep(toks[j])
		if depth == 0 && toks[j].Text == "," {
			parts, start = append(parts, [2]int{start, j}), j+1
		}
	}
	return append(parts, [2]int{start, to})
}

// castType is MariaDB's cast type of a Trino row field's type; "" for boolean (a boolean value
// is one in MariaDB's JSON already); ok is false for a type it has none for.
func castType(typ []sqltok.Token) (string, bool) {
	name := strings.ToLower(typ[0].Text)
	args := ""
	if len(typ) > 1 {
		if typ[1].Text != "(" || typ[len(typ)-1].Text != ")" {
			return "", false
		}
		for _, t := range typ[2 : len(typ)-1] {
			if t.Kind != sqltok.Number && t.Text != "," {
				return "", false
			}
			args += t.Text
		}
		args = "(" + args + ")"
	}
	switch {
	case args == "" && (name == "bigint" || name == "integer" || name == "int" || name == "smallint" || name == "tinyint"):
		return "SIGNED", true
	case args == "" && (name == "double" || name == "real"):
		return "DOUBLE", true
	case name == "varchar" || name == "char":
		return "CHAR" + args, true
	case name == "decimal":
		return "DECIMAL" + args, true
	case args == "" && name == "date":
		return "DATE", true
	case args == "" && name == "boolean":
		return "", true
	}
	return "", false
}
