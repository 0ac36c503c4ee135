package duckengine

import (
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
	"github.com/queryflux/queryflux/internal/trinodecl"
)

// Trino writes a timestamp's and a time's precision in the type, timestamp(3) (the precision
// of Trino's own timestamp), timestamp(6) with time zone, time(3), in casts and column
// definitions; DuckDB's types take none ("Type 'TIMESTAMP WITH TIME ZONE' does not take any
// type parameters"). A Trino client's timestamp(p) is DuckDB's timestamp of that precision
// (TIMESTAMP_S, TIMESTAMP_MS, TIMESTAMP, TIMESTAMP_NS: a value cast to it keeps as many digits),
// and with a time zone, or a time's, the one type DuckDB has (microseconds).

// holdsTimePrecision reports cheaply whether sqlText may name timestamp(p) or time(p), or
// hold a timestamp literal or localtimestamp (trinoTimestamp), or an interval literal with a
// qualifier (trinoInterval).
func holdsTimePrecision(sqlText string) bool {
	if containsFold(sqlText, "timestamp") || containsFold(sqlText, "interval") {
		return true
	}
	for i := 0; i+4 <= len(sqlText); i++ {
		if sqlText[i]|0x20 != 't' || !strings.EqualFold(sqlText[i:i+4], "time") {
			continue
		}
		j := i + 4
		if j+5 <= len(sqlText) && strings.EqualFold(sqlText[j:j+5], "stamp") {
			j += 5
		}
		for j < len(sqlText) && (sqlText[j] == ' ' || sqlText[j] == '\t' || sqlText[j] == '\n') {
			j++
		}
		if j < len(sqlText) && sqlText[j] == '(' {
			return true
		}
	}
	return false
}

// timePrecisionType writes the type timestamp(p) or time(p) at w.i as DuckDB's; it reports
// whether it wrote anything.
func (w *compatWriter) timePrecisionType() bool {
	key := w.word(w.i)
	if key != "timestamp" && key != "time" || w.word(w.prevSig(w.i)) == "." {
		return false
	}
	open := w.sig(w.i+1, 0)
	digits := w.sig(open+1, 0)
	end := w.sig(digits+1, 0)
	if w.word(open) != "(" || digits < 0 || w.toks[digits].Kind != sqltok.Number || w.word(end) != ")" {
		return false
	}
	p, err := strconv.Atoi(w.toks[digits].Text)
	if err != nil || p < 0 || p > 12 {
		return false
	}
	typ := "TIME"
	if key == "timestamp" {
		switch zoned := w.word(w.sig(end+1, 0)) == "with"; {
		case zoned || p > 3 && p <= 6:
			typ = "TIMESTAMP"
		case p == 0:
			typ = "TIMESTAMP_S"
		case p <= 3:
			typ = "TIMESTAMP_MS"
		default:
			typ = "TIMESTAMP_NS"
		}
	}
	w.emit(typ)
	w.i = end + 1
	return true
}

// trinoTimestamp writes a timestamp literal without a zone at w.i, TIMESTAMP '2020-01-01
// 12:00:00.123', as DuckDB's timestamp type of its precision, and localtimestamp as
// TIMESTAMP_MS: a Trino literal is timestamp(p), p the digits of its fraction of a second
// (none: timestamp(0)), and localtimestamp is timestamp(3), where DuckDB's are all
// microseconds. DuckDB has TIMESTAMP_S, TIMESTAMP_MS, TIMESTAMP and TIMESTAMP_NS (0, 3, 6, 9
// digits): 1 or 2 digits are timestamp(3), 4 or 5 timestamp(6). A literal with a zone is left
// as written. It reports whether it wrote anything.
func (w *compatWriter) trinoTimestamp() bool {
	if w.word(w.prevSig(w.i)) == "." {
		return false
	}
	switch w.word(w.i) {
	case "localtimestamp":
		if w.word(w.sig(w.i+1, 0)) == "(" {
			return false
		}
		w.emit("CAST(localtimestamp AS TIMESTAMP_MS)")
	case "timestamp":
		lit := w.sig(w.i+1, 0)
		if lit < 0 || w.toks[lit].Kind != sqltok.String || w.toks[lit].Unterminated {
			return false
		}
		digits, ok := fractionDigits(strings.Trim(w.toks[lit].Text, "'"))
		if !ok {
			return false
		}
		switch {
		case digits == 0:
			w.emit("TIMESTAMP_S")
		case digits <= 3:
			w.emit("TIMESTAMP_MS")
		case digits <= 6:
			w.emit("TIMESTAMP")
		default:
			w.emit("TIMESTAMP_NS")
		}
	default:
		return false
	}
	w.i++
	return true
}

// fractionDigits is the number of digits of the fraction of a second in a timestamp literal's
// text without a zone ("2020-01-01", "2020-01-01 12:00:00.123"); ok is false for any other.
func fractionDigits(text string) (int, bool) {
	text = strings.TrimSpace(text)
	if len(text) < 10 || strings.Count(text[:10], "-") != 2 {
		return 0, false
	}
	clock := strings.TrimLeft(text[10:], " T")
	if strings.Trim(clock, "0123456789:.") != "" {
		return 0, false // a zone, or not a timestamp
	}
	_, frac, _ := strings.Cut(clock, ".")
	return len(frac), true
}

// A Trino decimal literal is decimal(p, s), s its fraction's digits and p its digits without
// the integer part's leading zeros: 0.5 is decimal(1,1), 0.05 decimal(2,2). DuckDB counts the
// zero (DECIMAL(2,1)), and the difference carries into arithmetic (1.25 * 0.5: Trino's
// decimal(4,3), DuckDB's DECIMAL(5,3)).

// holdsZeroFraction reports cheaply whether sqlText may hold a literal 0.digits
// (trinoFractionLiteral).
func holdsZeroFraction(sqlText string) bool {
	for i := strings.Index(sqlText, "0."); i >= 0; {
		if i+2 < len(sqlText) && sqlText[i+2] >= '0' && sqlText[i+2] <= '9' {
			return true
		}
		next := strings.Index(sqlText[i+1:], "0.")
		if next < 0 {
			return false
		}
		i += 1 + next
	}
	return false
}

// trinoFractionLiteral writes a number token 0.digits at w.i (no exponent) as DuckDB's decimal
// of Trino's type for it, CAST(0.05 AS DECIMAL(2,2)); it reports whether it wrote anything. A
// sample's percentage (TABLESAMPLE BERNOULLI (0.5)), which DuckDB reads as a literal only, is
// left as written.
func (w *compatWriter) trinoFractionLiteral() bool {
	text := w.toks[w.i].Text
	whole, frac, ok := strings.Cut(text, ".")
	if !ok || whole == "" || strings.Trim(whole, "0") != "" || frac == "" || len(frac) > 38 || strings.Trim(frac, "0123456789") != "" {
		return false
	}
	if open := w.prevSig(w.i); w.word(open) == "(" {
		if kind := w.word(w.prevSig(open)); kind == "bernoulli" || kind == "system" || kind == "reservoir" {
			return false
		}
	}
	digits := len(strings.TrimLeft(frac, "0"))
	scale := len(frac)
	if digits == 0 {
		digits = 1 // 0.0: decimal(1,1)
	}
	w.emit("CAST(" + text + " AS DECIMAL(" + strconv.Itoa(max(digits, scale)) + "," + strconv.Itoa(scale) + "))")
	w.i++
	return true
}

// Trino's interval literals with a qualifier, interval '1-2' year to month and interval '1
// 02:03:04.5' day to second (and day to hour, day to minute, hour to minute, hour to second,
// minute to second), are a parser error in DuckDB ("YEAR TO MONTH is not supported"); DuckDB
// reads the same interval from its own text, INTERVAL '1 year 2 months', INTERVAL '1 day
// 02:03:04.5', a leading minus negating the whole.

// trinoInterval writes the interval literal with a qualifier at w.i as DuckDB's; it reports
// whether it wrote anything (not for a text the qualifier does not read: DuckDB's error then).
func (w *compatWriter) trinoInterval() bool {
	if w.word(w.i) != "interval" || w.word(w.prevSig(w.i)) == "." {
		return false
	}
	lit := w.sig(w.i+1, 0)
	from := w.sig(lit+1, 0)
	to := w.sig(from+1, 0)
	last := w.sig(to+1, 0)
	if lit < 0 || w.toks[lit].Kind != sqltok.String || w.toks[lit].Unterminated || w.word(to) != "to" || last < 0 {
		return false
	}
	text, ok := duckIntervalText(strings.ReplaceAll(strings.Trim(w.toks[lit].Text, "'"), "''", "'"), w.word(from), w.word(last))
	if !ok {
		return false
	}
	w.emit(text)
	w.i = last + 1
	return true
}

// duckIntervalText is DuckDB's interval expression for Trino's interval 'text' from TO last;
// ok is false for a text or qualifier Trino's parse would refuse.
func duckIntervalText(text, from, last string) (string, bool) {
	text = strings.TrimSpace(text)
	sign := ""
	if rest, neg := strings.CutPrefix(text, "-"); neg {
		sign, text = "-", rest
	}
	number := func(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }
	var duck string
	switch from + " " + last {
	case "year month":
		y, m, ok := strings.Cut(text, "-")
		if !ok || !number(y) || !number(m) {
			return "", false
		}
		duck = y + " years " + m + " months"
	case "day hour", "day minute", "day second", "hour minute", "hour second", "minute second":
		days := "0"
		if from == "day" {
			d, clock, ok := strings.Cut(text, " ")
			if !ok || !number(d) {
				return "", false
			}
			days, text = d, strings.TrimSpace(clock)
		}
		// the clock's fields from the first unit to the last: H, H:M, H:M:S, M, M:S
		fields := strings.Split(text, ":")
		want := map[string]int{"hour hour": 1, "hour minute": 2, "hour second": 3, "minute minute": 1, "minute second": 2}
		first := from
		if from == "day" {
			first = "hour"
		}
		if len(fields) != want[first+" "+last] {
			return "", false
		}
		if first == "minute" {
			fields = append([]string{"0"}, fields...)
		}
		for len(fields) < 3 {
			fields = append(fields, "0")
		}
		whole, frac, fractional := strings.Cut(fields[2], ".")
		if !number(fields[0]) || !number(fields[1]) || !number(whole) || fractional && (last != "second" || !number(frac)) {
			return "", false
		}
		duck = days + " days " + fields[0] + " hours " + fields[1] + " minutes " + fields[2] + " seconds"
	default:
		return "", false
	}
	if sign != "" {
		return "(-INTERVAL '" + duck + "')", true
	}
	return "INTERVAL '" + duck + "'", true
}

// trinoDecimal writes Trino's decimal literal at w.i, decimal '-1.50', as DuckDB's decimal of
// Trino's type for it, CAST('-1.50' AS DECIMAL(3,2)) (DuckDB reads the literal as a
// DECIMAL(18,3)); it reports whether it wrote anything (not for a text that is no decimal's:
// DuckDB's error then).
func (w *compatWriter) trinoDecimal() bool {
	if w.word(w.i) != "decimal" || w.word(w.prevSig(w.i)) == "." {
		return false
	}
	lit := w.sig(w.i+1, 0)
	if lit < 0 || w.toks[lit].Kind != sqltok.String || w.toks[lit].Unterminated || !strings.HasPrefix(w.toks[lit].Text, "'") {
		return false
	}
	typ := trinodecl.DecimalLiteralType(trinodecl.StringValue(w.toks[lit].Text))
	if typ == "" {
		return false
	}
	w.emit("CAST(" + w.toks[lit].Text + " AS " + strings.ToUpper(typ) + ")")
	w.i = lit + 1
	return true
}
