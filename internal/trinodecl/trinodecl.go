// Package trinodecl reads the Trino types a statement's text gives its select items where an
// engine's result type says less: now(), current_timestamp and from_unixtime(x) are
// timestamp(3) with time zone in Trino (an engine's timestamptz keeps microseconds);
// cast(x as varchar(7)) is varchar(7) (DuckDB drops the length at parse); timestamp
// '2024-01-02 03:04:05.6789' is timestamp(4); interval '1' year is interval year to month; a
// literal's own type (literals.go).
// The engines answer the Trino frontend with their own types, and the frontend announces these
// instead, its values cut to the precision.
package trinodecl

import (
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// Mentions reports cheaply whether sqlText may hold an item ItemTypes types.
func Mentions(sqlText string) bool {
	return strings.IndexByte(sqlText, '\'') >= 0 || sqltok.ContainsFold(sqlText, "null") || decimalPoint(sqlText) || sqltok.ContainsFold(sqlText, "row") ||
		sqltok.ContainsFold(sqlText, "now") || sqltok.ContainsFold(sqlText, "interval") || sqltok.ContainsFold(sqlText, "timestamp") ||
		sqltok.ContainsFold(sqlText, "from_unixtime") || sqltok.ContainsFold(sqlText, "varchar") || sqltok.ContainsFold(sqlText, "zone")
}

// decimalPoint reports whether sqlText may hold a number that is not an integer: a point next
// to a digit (1.5, .5), or a digit's exponent (1e0, 2E-3).
func decimalPoint(sqlText string) bool {
	digit := func(i int) bool { return i >= 0 && i < len(sqlText) && sqlText[i] >= '0' && sqlText[i] <= '9' }
	for i := 0; i < len(sqlText); i++ {
		switch sqlText[i] {
		case '.':
			if digit(i-1) || digit(i+1) {
				return true
			}
		case 'e', 'E':
			if digit(i-1) && (digit(i+1) || i+2 < len(sqlText) && (sqlText[i+1] == '-' || sqlText[i+1] == '+') && digit(i+2)) {
				return true
			}
		}
	}
	return false
}

// ItemTypes is the Trino type of each select item of sqlText's outermost SELECT, "" where the
// engine's type tells it; nil when no item has one, and for a select list with a * (its
// columns are not its items).
func ItemTypes(sqlText string) []string {
	if !Mentions(sqlText) {
		return nil
	}
	return eachItem(sqlText, trinoItemType)
}

// eachItem is f of each select item of sqlText's outermost SELECT (its tokens without its
// alias); nil when f gives the zero value for every item, and for a select list with a * (its
// columns are not its items).
func eachItem[T comparable](sqlText string, f func([]sqltok.Token) T) []T {
	texts := selectItemTexts(sqlText)
	out := make([]T, len(texts))
	var zero T
	some := false
	for i, text := range texts {
		toks := sqltok.SignificantTokens(text, sqltok.Trino)
		if len(toks) > 0 && toks[len(toks)-1].Text == "*" {
			return nil // a * or t.*
		}
		out[i] = f(withoutAlias(toks))
		some = some || out[i] != zero
	}
	if !some {
		return nil
	}
	return out
}

// selectItemTexts splits the select list of sqlText's outermost SELECT at its top-level commas
// and returns each item as written; nil when there is no such list.
func selectItemTexts(sqlText string) []string {
	return sqltok.SelectItems(sqlText, sqltok.SignificantTokens(sqlText, sqltok.Trino), selectModifiers, listEnds)
}

// selectModifiers may follow SELECT before its first item.
var selectModifiers = map[string]bool{"distinct": true, "all": true}

// listEnds are the words that end a select list outside parentheses.
var listEnds = map[string]bool{"from": true, "where": true, "group": true, "having": true, "order": true,
	"limit": true, "union": true, "except": true, "intersect": true, "window": true, "offset": true, "fetch": true}

func isWord(t sqltok.Token, w string) bool {
	return t.Kind == sqltok.Word && strings.EqualFold(t.Text, w)
}

// withoutAlias is an item's tokens without its alias (AS name, or a name after the expression;
// not an interval's unit, not a word that ends an expression, not an operand of NOT, IS, ...).
func withoutAlias(toks []sqltok.Token) []sqltok.Token {
	n := len(toks)
	switch {
	case n >= 3 && isWord(toks[n-2], "as"):
		return toks[:n-2]
	case n >= 2 && (toks[n-1].Kind == sqltok.Word && !expressionEnds[strings.ToLower(toks[n-1].Text)] || toks[n-1].Kind == sqltok.QuotedIdent) &&
		(toks[n-2].Text == ")" || toks[n-2].Kind == sqltok.Number ||
			toks[n-2].Kind == sqltok.Word && !isWord(toks[n-2], "as") && !operandWords[strings.ToLower(toks[n-2].Text)] ||
			toks[n-2].Kind == sqltok.String && (n < 3 || !isWord(toks[n-3], "interval"))):
		return toks[:n-1]
	}
	return toks
}

// expressionEnds are words that end an expression rather than name it.
var expressionEnds = map[string]bool{"null": true, "true": true, "false": true, "end": true, "unknown": true, "zone": true,
	"year": true, "month": true, "day": true, "hour": true, "minute": true, "second": true}

// operandWords are words after which a name is an operand, not an alias.
var operandWords = map[string]bool{"is": true, "not": true, "and": true, "or": true, "like": true, "between": true,
	"in": true, "then": true, "else": true, "when": true, "case": true, "distinct": true, "escape": true, "to": true,
	"interval": true, "date": true, "time": true, "timestamp": true, "array": true, "at": true, "exists": true}

// trinoItemType is the Trino type of a select item's expression where DuckDB's says less.
func trinoItemType(toks []sqltok.Token) string {
	if t := literalType(toks); t != "" {
		return t
	}
	if t := rowType(toks); t != "" {
		return t
	}
	if end := zonedMillisEnd(toks); end > 0 && intervalsOnly(toks[end:]) {
		return "timestamp(3) with time zone" // now() + interval '1' day: Trino keeps the timestamp's type
	}
	if len(toks) >= 2 && isWord(toks[0], "timestamp") && toks[1].Kind == sqltok.String && intervalsOnly(toks[2:]) {
		if p := literalDigits(toks[1].Text); p >= 0 {
			return "timestamp(" + strconv.Itoa(p) + ")" // timestamp '... .6789' is Trino's timestamp(4)
		}
	}
	if len(toks) >= 3 && isWord(toks[0], "interval") && toks[1].Kind == sqltok.String && (isWord(toks[2], "year") || isWord(toks[2], "month")) &&
		(len(toks) == 3 || len(toks) == 5 && isWord(toks[3], "to") && isWord(toks[4], "month")) {
		return "interval year to month" // an engine's one interval type reads as day to second
	}
	if len(toks) >= 8 && isWord(toks[0], "cast") && toks[1].Text == "(" && closes(toks, 1) == len(toks)-1 {
		return trinoCastType(toks[2 : len(toks)-1])
	}
	if len(toks) >= 6 && isWord(toks[0], "date_trunc") && toks[1].Text == "(" && toks[2].Kind == sqltok.String && toks[3].Text == "," &&
		closes(toks, 1) == len(toks)-1 {
		if t := trinoItemType(toks[4 : len(toks)-1]); strings.HasPrefix(t, "timestamp") {
			return t // Trino's date_trunc keeps its argument's type; an engine's is its default precision
		}
	}
	if len(toks) >= 8 && isWord(toks[0], "date_add") && toks[1].Text == "(" && closes(toks, 1) == len(toks)-1 {
		if args := sqltok.SplitAtCommas(toks[2 : len(toks)-1]); len(args) == 3 && len(args[2]) > 0 {
			if t := trinoItemType(args[2]); strings.HasPrefix(t, "timestamp") {
				return t // date_add keeps its timestamp's type, as date_trunc does
			}
		}
	}
	return ""
}

// zonedMillisEnd is the length of the item's leading now(), current_timestamp or
// from_unixtime(x), Trino's timestamp(3) with time zone; 0 when it starts with none of them.
func zonedMillisEnd(toks []sqltok.Token) int {
	switch {
	case len(toks) >= 1 && isWord(toks[0], "current_timestamp"):
		return 1
	case len(toks) >= 3 && isWord(toks[0], "now") && toks[1].Text == "(" && toks[2].Text == ")":
		return 3
	case len(toks) >= 4 && isWord(toks[0], "from_unixtime") && toks[1].Text == "(":
		return closes(toks, 1) + 1
	}
	return 0
}

// intervalsOnly reports whether toks are nothing but interval literals added or subtracted:
// + interval '1' day - interval '1-2' year to month ... (none: true).
func intervalsOnly(toks []sqltok.Token) bool {
	for len(toks) > 0 {
		if len(toks) < 4 || toks[0].Text != "+" && toks[0].Text != "-" || !isWord(toks[1], "interval") ||
			toks[2].Kind != sqltok.String || toks[3].Kind != sqltok.Word {
			return false
		}
		toks = toks[4:]
		if len(toks) >= 2 && isWord(toks[0], "to") && toks[1].Kind == sqltok.Word {
			toks = toks[2:]
		}
	}
	return true
}

// trinoCastType is the Trino type a cast's inside (x AS type) gives where DuckDB keeps less:
// varchar(n) (DuckDB drops the length), timestamp(p) with time zone (DuckDB's TIMESTAMPTZ keeps
// microseconds whatever p).
func trinoCastType(inner []sqltok.Token) string {
	n := len(inner)
	switch {
	case n >= 6 && isWord(inner[n-5], "as") && isWord(inner[n-4], "varchar") && inner[n-3].Text == "(" &&
		isDigits(inner[n-2], 10) && inner[n-1].Text == ")":
		return "varchar(" + inner[n-2].Text + ")"
	case n >= 9 && isWord(inner[n-8], "as") && isWord(inner[n-7], "timestamp") && inner[n-6].Text == "(" &&
		isDigits(inner[n-5], 1) && inner[n-5].Text <= "6" && inner[n-4].Text == ")" && isWord(inner[n-3], "with") &&
		isWord(inner[n-2], "time") && isWord(inner[n-1], "zone"):
		return "timestamp(" + inner[n-5].Text + ") with time zone"
	}
	return ""
}

// literalDigits is Trino's precision of timestamp 'text' (quoted): the digits of a second the
// text writes; -1 for a text with a zone (another type), with more than the six digits DuckDB
// keeps, or one this does not read.
func literalDigits(quoted string) int {
	text, opened := strings.CutPrefix(quoted, "'")
	text, closed := strings.CutSuffix(text, "'")
	date, clock, timed := strings.Cut(strings.TrimSpace(text), " ")
	if !opened || !closed || date == "" || strings.Trim(date, "0123456789-") != "" {
		return -1
	}
	whole, fraction, fractional := strings.Cut(clock, ".")
	switch {
	case !timed || !fractional && strings.Trim(whole, "0123456789:") == "":
		return 0
	case strings.Trim(whole, "0123456789:") != "" || fraction == "" || len(fraction) > 6 || strings.Trim(fraction, "0123456789") != "":
		return -1
	}
	return len(fraction)
}

// isDigits reports whether t is an unsigned integer of at most max digits.
func isDigits(t sqltok.Token, max int) bool {
	return t.Kind == sqltok.Number && len(t.Text) <= max && strings.Trim(t.Text, "0123456789") == ""
}

// closes is the index of the token that closes the parenthesis at open; -1 when none does.
func closes(toks []sqltok.Token, open int) int {
	depth := 0
	for j := open; j < len(toks); j++ {
		depth += sqltok.ParenStep(toks[j])
		if depth == 0 {
			return j
		}
	}
	return -1
}
