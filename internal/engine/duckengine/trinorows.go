package duckengine

import (
	"github.com/queryflux/queryflux/internal/sqltok"
	"github.com/queryflux/queryflux/internal/trinodecl"
)

// Trino's row(1, 'a') is a row of anonymous fields, row(integer, varchar(1)), written [1, "a"].
// DuckDB's row(...) is a STRUCT of unnamed fields, which go-duckdb cannot read ("empty name":
// the statement failed). A Trino client's row constructor is written as DuckDB's struct of
// fields named trinodecl.AnonymousField(i), {'#0': 1, '#1': 'a'}, which the Trino frontend
// announces as anonymous; rows compare field by field as before (both sides' names are the
// same). Left as written: a row type (CAST(x AS ROW(a integer)), a column's row(...) type), a
// cast of a row constructor to a row type and every row inside it (DuckDB casts an unnamed
// struct by position, a named one by name), a row subscripted (row(1, 2)[2]: DuckDB reads an
// unnamed struct's field by position only), and VALUES ROW(...) (valuesRows).

// holdsRow reports cheaply whether sqlText may hold a row constructor.
func holdsRow(sqlText string) bool { return containsFold(sqlText, "row") }

// trinoRow writes the row constructor at w.i as a struct of anonymously named fields; it
// reports whether it wrote anything.
func (w *compatWriter) trinoRow() bool {
	if w.word(w.i) != "row" || w.i < w.keptRows {
		return false
	}
	prev := w.prevSig(w.i)
	open := w.sig(w.i+1, 0)
	if w.word(open) != "(" || w.word(prev) == "." || w.word(prev) == "as" {
		return false
	}
	end := w.callEnd(open)
	if end < 0 || end == w.sig(open+1, 0) || w.word(w.sig(end+1, 0)) == "[" { // row(1, 2)[2]: DuckDB's unnamed field by position
		return false
	}
	// a column's type (c row(x integer)), a row type inside another type (array(row(...)),
	// map(varchar, row(...)))
	if prev >= 0 && (w.toks[prev].Kind == sqltok.QuotedIdent || w.toks[prev].Kind == sqltok.Word && !rowBefore[w.word(prev)]) {
		return false
	}
	commas := w.topLevelCommas(open, end)
	if w.namesAType(w.sig(open+1, 0)) {
		return false
	}
	for _, c := range commas {
		if w.namesAType(w.sig(c+1, 0)) {
			return false
		}
	}
	// cast(row(...) as row(...)): DuckDB casts the unnamed struct by position
	if castOpen := prev; w.word(castOpen) == "(" && (w.word(w.prevSig(castOpen)) == "cast" || w.word(w.prevSig(castOpen)) == "try_cast") {
		if as := w.sig(end+1, 0); w.word(as) == "as" && w.word(w.sig(as+1, 0)) == "row" {
			w.keptRows = end
			return false
		}
	}
	w.emit("{" + quoteString(trinodecl.AnonymousField(0)) + ": ")
	for k, c := range commas {
		w.replace(c, c, ", "+quoteString(trinodecl.AnonymousField(k+1))+":")
	}
	w.replace(end, end, "}")
	w.i = open + 1
	return true
}

// rowBefore are the words after which row(...) is a value, not a type.
var rowBefore = map[string]bool{"select": true, "and": true, "or": true, "not": true, "in": true, "when": true,
	"then": true, "else": true, "return": true, "by": true, "is": true, "distinct": true, "all": true, "any": true,
	"some": true, "between": true, "like": true, "on": true, "where": true, "having": true, "set": true, "case": true,
	"array": true, "values": true}

// topLevelCommas are the indexes of the commas between the arguments of the call whose
// parentheses are at open and end.
func (w *compatWriter) topLevelCommas(open, end int) []int {
	var commas []int
	depth := 0
	for j := w.sig(open+1, 0); j >= 0 && j < end; j = w.sig(j+1, 0) {
		switch w.word(j) {
		case "(", "[":
			depth++
		case ")", "]":
			depth--
		case ",":
			if depth == 0 {
				commas = append(commas, j)
			}
		}
	}
	return commas
}

// namesAType reports whether the argument at a reads as a row type's field, a name and a
// type (x integer, "a b" varchar(3)) or a type alone (integer), not as a value.
func (w *compatWriter) namesAType(a int) bool {
	if a < 0 {
		return false
	}
	next := w.sig(a+1, 0)
	t := w.toks[a]
	if t.Kind != sqltok.Word && t.Kind != sqltok.QuotedIdent {
		return false
	}
	if after := w.word(next); after == "," || after == ")" {
		return t.Kind == sqltok.Word && rowFieldTypes[w.word(a)]
	}
	return next >= 0 && w.toks[next].Kind == sqltok.Word && !valueWords[w.word(a)] && !operatorWords[w.word(next)]
}

// rowFieldTypes are Trino's type names, a field of an anonymous row type (row(integer, varchar)).
var rowFieldTypes = map[string]bool{"boolean": true, "tinyint": true, "smallint": true, "integer": true, "int": true,
	"bigint": true, "real": true, "double": true, "decimal": true, "varchar": true, "char": true, "varbinary": true,
	"json": true, "date": true, "time": true, "timestamp": true, "interval": true, "array": true, "map": true,
	"row": true, "uuid": true, "ipaddress": true}

// valueWords begin a value of two or more words (case when, not x, interval '1' day...).
var valueWords = map[string]bool{"case": true, "not": true, "exists": true, "cast": true, "try_cast": true,
	"interval": true, "timestamp": true, "date": true, "time": true, "array": true, "row": true, "current_date": true,
	"current_time": true, "current_timestamp": true, "localtime": true, "localtimestamp": true, "null": true,
	"true": true, "false": true, "extract": true, "distinct": true}

// operatorWords continue a value after its first word (x is null, x between a and b...).
var operatorWords = map[string]bool{"is": true, "and": true, "or": true, "in": true, "not": true, "between": true,
	"like": true, "ilike": true, "similar": true, "escape": true, "at": true, "collate": true, "over": true,
	"filter": true, "within": true, "as": true, "from": true, "for": true}
