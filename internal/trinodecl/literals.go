package trinodecl

import (
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// Trino's types of a select item that is a literal, where an engine's type says less or
// otherwise: 'abc' is varchar(3) (an engine's text is unbounded), time '01:02:03.456' is
// time(3) (an engine's time keeps microseconds), a bare NULL is unknown (PostgreSQL's text,
// DuckDB's integer), 1.50 is decimal(3,2) (PostgreSQL's numeric is unbounded), uuid '...' and
// json '...' are uuid and json, interval '2' day is interval day to second (MariaDB has no
// interval values: trinomy writes the literal as its text).

// literalType is the Trino type of a select item that is one of those literals, "" for any
// other item.
func literalType(toks []sqltok.Token) string {
	switch n := len(toks); {
	case n == 1 && isWord(toks[0], "null"):
		return "unknown"
	case n == 1 && plainString(toks[0]):
		return "varchar(" + strconv.Itoa(len([]rune(StringValue(toks[0].Text)))) + ")"
	case n == 1 && toks[0].Kind == sqltok.Number || n == 2 && (toks[0].Text == "-" || toks[0].Text == "+") && toks[1].Kind == sqltok.Number:
		return numberType(toks[n-1].Text)
	case n == 2 && isWord(toks[0], "time") && plainString(toks[1]):
		if p := clockDigits(StringValue(toks[1].Text)); p >= 0 {
			return "time(" + strconv.Itoa(p) + ")"
		}
	case n == 2 && toks[0].Kind == sqltok.Word && numericLiterals[strings.ToLower(toks[0].Text)] && plainString(toks[1]):
		switch typ := strings.ToLower(toks[0].Text); typ {
		case "decimal":
			return DecimalLiteralType(StringValue(toks[1].Text))
		case "int":
			return "integer"
		default:
			return typ
		}
	case n == 2 && isWord(toks[0], "uuid") && plainString(toks[1]):
		return "uuid"
	case n == 2 && isWord(toks[0], "json") && plainString(toks[1]):
		return "json"
	case n >= 3 && isWord(toks[0], "interval") && plainString(toks[1]):
		if _, ym, ok := IntervalLiteral(toks); ok && !ym {
			return "interval day to second"
		}
	}
	return ""
}

// numericLiterals are the types of Trino's numeric typed literals (real '1.5', decimal '1.50').
var numericLiterals = map[string]bool{"real": true, "double": true, "tinyint": true, "smallint": true, "integer": true,
	"int": true, "bigint": true, "decimal": true}

// DecimalLiteralType is the Trino type of decimal 'text': decimal(p,s) of its digits, "" for a
// text that is not a decimal's.
func DecimalLiteralType(text string) string {
	text = strings.TrimSpace(text)
	digits := strings.TrimLeft(text, "+-")
	if len(text)-len(digits) > 1 || digits == "" || strings.Trim(digits, "0123456789.") != "" || strings.Count(digits, ".") > 1 || digits == "." {
		return ""
	}
	if !strings.Contains(digits, ".") {
		digits += "."
	}
	return numberType(digits)
}

// plainString reports whether t is a whole '...' string literal (not X'..', not E'..').
func plainString(t sqltok.Token) bool {
	return t.Kind == sqltok.String && len(t.Text) >= 2 && t.Text[0] == '\'' && !t.Unterminated
}

// StringValue is the text a '...' literal (quoted) writes: its quotes off, a doubled quote one.
func StringValue(quoted string) string {
	return strings.ReplaceAll(quoted[1:len(quoted)-1], "''", "'")
}

// numberType is the Trino type of an unsigned number literal that is not an integer: decimal(p,s)
// (p its digits but leading zeros, at least 1; s those after the point) or, with an exponent,
// double; "" for an integer (an engine types it as Trino does) and for a decimal past 38 digits.
func numberType(text string) string {
	if strings.ContainsAny(text, "eE") {
		return "double"
	}
	whole, fraction, ok := strings.Cut(text, ".")
	if !ok {
		return ""
	}
	whole = strings.TrimLeft(whole, "0")
	p := max(len(whole)+len(fraction), 1)
	if p > 38 {
		return ""
	}
	return "decimal(" + strconv.Itoa(p) + "," + strconv.Itoa(len(fraction)) + ")"
}

// clockDigits is the digits of a second a time literal's text (01:02:03.456) writes; -1 for a
// text that is not a clock.
func clockDigits(text string) int {
	whole, fraction, fractional := strings.Cut(strings.TrimSpace(text), ".")
	if strings.Count(whole, ":") < 1 || strings.Trim(whole, "0123456789:") != "" || fractional && (fraction == "" || len(fraction) > 12 ||
		strings.Trim(fraction, "0123456789") != "") {
		return -1
	}
	return len(fraction)
}

// dayUnits are the units of Trino's interval day to second.
var dayUnits = map[string]int64{"day": 86_400_000, "hour": 3_600_000, "minute": 60_000, "second": 1000}

// IntervalLiteral reads a Trino interval literal's tokens (interval [+|-]'text' unit [to unit]):
// its value as Trino writes it ("2 03:00:00.000" for interval '2 03' day to hour, "1-2" for
// interval '1-2' year to month), ym for year to month; ok is false for tokens that are not one
// or a text this does not read.
func IntervalLiteral(toks []sqltok.Token) (text string, ym bool, ok bool) {
	if len(toks) != 3 && len(toks) != 5 || !isWord(toks[0], "interval") || !plainString(toks[1]) || toks[2].Kind != sqltok.Word ||
		len(toks) == 5 && (!isWord(toks[3], "to") || toks[4].Kind != sqltok.Word) {
		return "", false, false
	}
	from, to := strings.ToLower(toks[2].Text), strings.ToLower(toks[len(toks)-1].Text)
	value := strings.TrimSpace(StringValue(toks[1].Text))
	sign := ""
	if v, neg := strings.CutPrefix(value, "-"); neg {
		value, sign = v, "-"
	}
	if from == "year" || from == "month" {
		y, m, ok := yearMonth(value, from, to)
		if !ok {
			return "", true, false
		}
		return sign + strconv.FormatInt(y, 10) + "-" + strconv.FormatInt(m, 10), true, true
	}
	ms, ok := dayMillis(value, from, to)
	if !ok {
		return "", false, false
	}
	return sign + strconv.FormatInt(ms/86_400_000, 10) + " " + twoDigits(ms/3_600_000%24) + ":" + twoDigits(ms/60_000%60) + ":" +
		twoDigits(ms/1000%60) + "." + strconv.FormatInt(1000+ms%1000, 10)[1:], false, true
}

func twoDigits(v int64) string { return strconv.FormatInt(100+v, 10)[1:] }

// yearMonth reads an interval year to month's text: '3' year, '14' month, '1-2' year to month.
func yearMonth(value, from, to string) (y, m int64, ok bool) {
	switch {
	case from == "year" && to == "year":
		v, err := strconv.ParseInt(value, 10, 32)
		return v, 0, err == nil
	case from == "month" && to == "month":
		v, err := strconv.ParseInt(value, 10, 32)
		return v / 12, v % 12, err == nil
	case from == "year" && to == "month":
		ys, ms, cut := strings.Cut(value, "-")
		y, err1 := strconv.ParseInt(ys, 10, 32)
		m, err2 := strconv.ParseInt(ms, 10, 32)
		return y + m/12, m % 12, cut && err1 == nil && err2 == nil && m >= 0
	}
	return 0, 0, false
}

// dayMillis reads an interval day to second's text as milliseconds: '2' day, '3' hour,
// '1.5' second, '2 03:04:05' day to second, '03:04' hour to minute.
func dayMillis(value, from, to string) (int64, bool) {
	unit, ok1 := dayUnits[from]
	last, ok2 := dayUnits[to]
	if !ok1 || !ok2 || last > unit || value == "" {
		return 0, false
	}
	var parts []string
	if from == "day" && to != "day" {
		d, rest, cut := strings.Cut(value, " ")
		if !cut {
			return 0, false
		}
		parts = append([]string{d}, strings.Split(rest, ":")...)
	} else {
		parts = strings.Split(value, ":")
	}
	var ms int64
	for i, part := range parts {
		u := unitOf(from, i)
		if u == 0 || u < last {
			return 0, false
		}
		if u == 1000 {
			f, err := strconv.ParseFloat(part, 64)
			if err != nil || f < 0 || strings.ContainsAny(part, "eE+-") {
				return 0, false
			}
			ms += int64(f*1000 + 0.5)
			continue
		}
		v, err := strconv.ParseInt(part, 10, 64)
		if err != nil || v < 0 {
			return 0, false
		}
		ms += v * u
	}
	if unitOf(from, len(parts)-1) != last {
		return 0, false
	}
	return ms, true
}

// unitOf is the unit, in milliseconds, of the i-th field (from 0) of an interval that starts
// at from.
func unitOf(from string, i int) int64 {
	order := []int64{86_400_000, 3_600_000, 60_000, 1000}
	start := map[string]int{"day": 0, "hour": 1, "minute": 2, "second": 3}[from]
	if start+i >= len(order) {
		return 0
	}
	return order[start+i]
}
