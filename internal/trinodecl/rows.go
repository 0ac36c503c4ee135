package trinodecl

import (
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// Trino's row(1, 'a') is row(integer, varchar(1)), written as the JSON array of its fields;
// cast(row(1, 'a') as row(x integer, y varchar)) is row(x integer, y varchar). An engine
// without the type (PostgreSQL: trinopg writes it as a JSON array) answers json; the Trino
// frontend announces the row.

// rowType is the Trino type of a select item that is row(...) of literals or a cast of row(...)
// to a row type; "" for another item.
func rowType(toks []sqltok.Token) string {
	n := len(toks)
	switch {
	case n >= 3 && isWord(toks[0], "row") && toks[1].Text == "(" && closes(toks, 1) == n-1:
		var fields []string
		for _, arg := range splitTop(toks[2 : n-1]) {
			t := fieldType(arg)
			if t == "" {
				return ""
			}
			fields = append(fields, t)
		}
		return "row(" + strings.Join(fields, ", ") + ")"
	case n >= 10 && isWord(toks[0], "cast") && toks[1].Text == "(" && closes(toks, 1) == n-1 && isWord(toks[2], "row") && toks[3].Text == "(":
		end := closes(toks, 3)
		if end < 0 || end+3 >= n-1 || !isWord(toks[end+1], "as") || !isWord(toks[end+2], "row") || toks[end+3].Text != "(" || closes(toks, end+3) != n-2 {
			return ""
		}
		var fields []string
		for _, f := range splitTop(toks[end+4 : n-2]) {
			if len(f) < 2 || f[0].Kind != sqltok.Word && f[0].Kind != sqltok.QuotedIdent {
				return ""
			}
			name := strings.ToLower(f[0].Text) // Trino's names are lower case but a quoted one's
			if f[0].Kind == sqltok.QuotedIdent {
				name = strings.ReplaceAll(f[0].Text[1:len(f[0].Text)-1], `""`, `"`)
			}
			fields = append(fields, name+" "+TypeText(f[1:]))
		}
		if len(fields) != len(splitTop(toks[4:end])) {
			return ""
		}
		return "row(" + strings.Join(fields, ", ") + ")"
	}
	return ""
}

// fieldType is the Trino type of a literal row field: a literal's (literals.go), integer or
// bigint, boolean, a row of those; "" for another.
func fieldType(toks []sqltok.Token) string {
	if t := literalType(toks); t != "" {
		return t
	}
	if t := rowType(toks); t != "" {
		return t
	}
	if len(toks) == 1 && (isWord(toks[0], "true") || isWord(toks[0], "false")) {
		return "boolean"
	}
	if len(toks) == 2 && toks[0].Text == "-" {
		toks = toks[1:]
	}
	if len(toks) == 1 && isDigits(toks[0], 19) {
		if v, err := strconv.ParseInt(toks[0].Text, 10, 64); err == nil {
			if v > 1<<31-1 {
				return "bigint"
			}
			return "integer"
		}
	}
	return ""
}

// TypeText is a type's tokens as Trino writes the type: lower case, a blank between words
// (timestamp(3) with time zone, decimal(10,2)).
func TypeText(toks []sqltok.Token) string {
	var b strings.Builder
	for i, t := range toks {
		if i > 0 && t.Kind == sqltok.Word && (toks[i-1].Kind == sqltok.Word || toks[i-1].Text == ")") || i > 0 && toks[i-1].Text == "," && t.Kind == sqltok.Word {
			b.WriteByte(' ')
		}
		b.WriteString(strings.ToLower(t.Text))
	}
	return b.String()
}

// An engine whose rows have named fields only (DuckDB: go-duckdb cannot read a struct of
// unnamed fields, "empty name") gives Trino's row(1, 'a') fields named AnonymousField(0),
// AnonymousField(1)...: names no Trino identifier is unquoted, which the Trino frontend
// announces as anonymous fields (no fieldName: row(integer, varchar(1)), as Trino's).

// AnonymousField is the name given the i'th field (from 0) of an anonymous row.
func AnonymousField(i int) string { return "#" + strconv.Itoa(i) }

// IsAnonymousField reports whether name is an AnonymousField's.
func IsAnonymousField(name string) bool {
	return len(name) > 1 && name[0] == '#' && strings.Trim(name[1:], "0123456789") == "" && (name == "#0" || name[1] != '0')
}
