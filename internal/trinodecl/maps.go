package trinodecl

import (
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// MapItems is the Trino type of each select item of sqlText's outermost SELECT that is
// map(array[...], array[...]) of literals (map(varchar(1), integer) for map(array['a'],
// array[1])), "" for any other item; nil when there is none. An engine without a map type
// (PostgreSQL: a jsonb object) answers it as json; the Trino frontend announces the map.
func MapItems(sqlText string) []string {
	if !sqltok.ContainsFold(sqlText, "map") {
		return nil
	}
	return eachItem(sqlText, mapType)
}

// mapType is the Trino type of map(array[...], array[...]) of literals, "" for another item.
func mapType(toks []sqltok.Token) string {
	n := len(toks)
	if n < 4 || !isWord(toks[0], "map") || toks[1].Text != "(" || closes(toks, 1) != n-1 {
		return ""
	}
	args := splitTop(toks[2 : n-1])
	if len(args) != 2 {
		return ""
	}
	k, v := arrayElementType(args[0]), arrayElementType(args[1])
	if k == "" || v == "" {
		return ""
	}
	return "map(" + k + ", " + v + ")"
}

// arrayElementType is the Trino type of the elements of array[...] of literals of one kind:
// varchar(n) (n the longest string's characters), integer, bigint, boolean; "" for another.
func arrayElementType(toks []sqltok.Token) string {
	n := len(toks)
	if n < 4 || !isWord(toks[0], "array") || toks[1].Text != "[" || toks[n-1].Text != "]" {
		return ""
	}
	kind, longest, wide := "", 0, false
	for _, e := range splitTop(toks[2 : n-1]) {
		if len(e) != 1 {
			return ""
		}
		t, k := e[0], ""
		switch {
		case t.Kind == sqltok.String && strings.HasPrefix(t.Text, "'") && !t.Unterminated:
			k = "varchar"
			longest = max(longest, len([]rune(strings.ReplaceAll(t.Text[1:len(t.Text)-1], "''", "'"))))
		case isDigits(t, 19):
			k = "integer"
			v, err := strconv.ParseInt(t.Text, 10, 64)
			if err != nil {
				return ""
			}
			wide = wide || v > 1<<31-1
		case isWord(t, "true") || isWord(t, "false"):
			k = "boolean"
		default:
			return ""
		}
		if kind != "" && kind != k {
			return ""
		}
		kind = k
	}
	switch {
	case kind == "varchar":
		return "varchar(" + strconv.Itoa(longest) + ")"
	case kind == "integer" && wide:
		return "bigint"
	}
	return kind
}

// splitTop splits toks at the commas outside parentheses and brackets.
func splitTop(toks []sqltok.Token) [][]sqltok.Token {
	var parts [][]sqltok.Token
	depth, start := 0, 0
	for i, t := range toks {
		switch t.Text {
		case "(", "[":
			depth++
		case ")", "]":
			depth--
		case ",":
			if depth == 0 {
				parts, start = append(parts, toks[start:i]), i+1
			}
		}
	}
	return append(parts, toks[start:])
}
