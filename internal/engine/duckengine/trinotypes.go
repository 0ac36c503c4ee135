package duckengine

import (
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// Trino writes a timestamp's and a time's precision in the type, timestamp(3) (the precision
// of Trino's own timestamp), timestamp(6) with time zone, time(3), in casts and column
// definitions; DuckDB's types take none ("Type 'TIMESTAMP WITH TIME ZONE' does not take any
// type parameters"). A Trino client's timestamp(p) is DuckDB's timestamp of that precision
// (TIMESTAMP_S, TIMESTAMP_MS, TIMESTAMP, TIMESTAMP_NS: a value cast to it keeps as many digits),
// and with a time zone, or a time's, the one type DuckDB has (microseconds).

// holdsTimePrecision reports cheaply whether sqlText may name timestamp(p) or time(p).
func holdsTimePrecision(sqlText string) bool {
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
