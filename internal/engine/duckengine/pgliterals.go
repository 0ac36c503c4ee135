package duckengine

import (
	"regexp"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// A timestamp literal with a blank before its offset, '2026-01-02 03:04:05.000 +00:00' (Sequelize's
// literal of a date, in a bulk INSERT and a WHERE): PostgreSQL reads the offset, DuckDB a time
// zone named "+00:00" that it does not know. It is written without the blank, the same instant
// to both. (A text column given such a literal would keep it without the blank.)

// offsetTimestamp is a timestamp literal's text with a blank before a numeric offset.
var offsetTimestamp = regexp.MustCompile(`^'(\d{4}-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d(?:\.\d+)?)?) ([+-]\d\d(?::?\d\d)?)'$`)

// holdsOffsetTimestamp reports cheaply whether sqlText may hold such a literal: a digit, a
// blank and a sign before two digits.
func holdsOffsetTimestamp(sqlText string) bool {
	for i := 1; i+3 < len(sqlText); i++ {
		if sqlText[i] == ' ' && (sqlText[i+1] == '+' || sqlText[i+1] == '-') && isDigit(sqlText[i-1]) &&
			isDigit(sqlText[i+2]) && isDigit(sqlText[i+3]) {
			return true
		}
	}
	return false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// literal writes the string literal t as DuckDB reads what PostgreSQL reads in it; false when
// it is to be written as it is.
func (w *compatWriter) literal(t sqltok.Token) bool {
	if w.offsets {
		if m := offsetTimestamp.FindStringSubmatch(t.Text); m != nil {
			w.emit("'" + m[1] + m[2] + "'")
			return true
		}
	}
	return false
}
