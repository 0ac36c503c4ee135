package trinopg

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// JodaField is one field of a Joda-Time pattern (Trino's format_datetime): a letter repeated
// Count times, or (Letter 0) literal text.
type JodaField struct {
	Letter  byte
	Count   int
	Literal string
}

// JodaFields reads a Joda-Time pattern: runs of one letter, text in single quotes (two of them a quote),
// any other character literal; ok is false for an unclosed quote.
func JodaFields(pattern string) ([]JodaField, bool) {
	var out []JodaField
	literal := func(s string) {
		if n := len(out); n > 0 && out[n-1].Letter == 0 {
			out[n-1].Literal += s
			return
		}
		out = append(out, JodaField{Literal: s})
	}
	for i := 0; i < len(pattern); {
		c := pattern[i]
		n := 1
		for i+n < len(pattern) && pattern[i+n] == c {
			n++
		}
		switch {
		case c == '\'' && n >= 2: // '' is a quote
			literal(strings.Repeat("'", n/2))
			i += n / 2 * 2
		case c == '\'':
			end := i + 1
			var b strings.Builder
			for ; end < len(pattern); end++ {
				if pattern[end] != '\'' {
					b.WriteByte(pattern[end])
					continue
				}
				if end+1 < len(pattern) && pattern[end+1] == '\'' {
					b.WriteByte('\'')
					end++
					continue
				}
				break
			}
			if end >= len(pattern) {
				return nil, false
			}
			literal(b.String())
			i = end + 1
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			out = append(out, JodaField{Letter: c, Count: n})
			i += n
		default:
			literal(pattern[i : i+n])
			i += n
		}
	}
	return out, true
}

// pgJoda is PostgreSQL's to_char template of a Joda field, "" for one it has none for.
func pgJoda(f JodaField) string {
	n := f.Count
	pick := func(forms ...string) string { return forms[min(n, len(forms))-1] }
	switch f.Letter {
	case 'y', 'Y':
		if n == 2 {
			return "YY"
		}
		return "YYYY"
	case 'M':
		return pick("FMMM", "MM", "Mon", "FMMonth")
	case 'd':
		return pick("FMDD", "DD")
	case 'H':
		return pick("FMHH24", "HH24")
	case 'h':
		return pick("FMHH12", "HH12")
	case 'm':
		return pick("FMMI", "MI")
	case 's':
		return pick("FMSS", "SS")
	case 'S':
		return map[int]string{1: "FF1", 2: "FF2", 3: "MS", 6: "US"}[n]
	case 'a':
		return "AM"
	case 'E':
		if n >= 4 {
			return "FMDay"
		}
		return "Dy"
	case 'D':
		return pick("FMDDD", "FMDDD", "DDD")
	}
	return ""
}

// formatDatetime is Trino's format_datetime(x, pattern) of a literal pattern as PostgreSQL's
// to_char (literal text in double quotes); ok is false for a pattern with a field it has no
// template for (then PostgreSQL's error names the function).
func formatDatetime(r *rewriter, args []span) (string, bool) {
	if len(args) != 2 || args[1].hi-args[1].lo != 1 || r.toks[args[1].lo].Kind != sqltok.String {
		return "", false
	}
	quoted := r.toks[args[1].lo].Text
	if len(quoted) < 2 || quoted[0] != '\'' {
		return "", false
	}
	fields, ok := JodaFields(strings.ReplaceAll(quoted[1:len(quoted)-1], "''", "'"))
	if !ok {
		return "", false
	}
	var b strings.Builder
	for _, f := range fields {
		if f.Letter == 0 {
			b.WriteString(`"` + strings.ReplaceAll(strings.ReplaceAll(f.Literal, `\`, `\\`), `"`, `\"`) + `"`)
			continue
		}
		t := pgJoda(f)
		if t == "" {
			return "", false
		}
		b.WriteString(t)
	}
	return "to_char(" + r.text(args[0]) + ", '" + strings.ReplaceAll(b.String(), "'", "''") + "')", true
}

// dateTrunc is PostgreSQL's date_trunc, a date's truncation cast back to a date (PostgreSQL's
// is a timestamp with time zone; Trino's of a date is a date); ok is false for any other.
func dateTrunc(r *rewriter, args []span) (string, bool) {
	if len(args) != 2 || !r.isDate(args[1]) {
		return "", false
	}
	return "CAST(date_trunc(" + r.text(args[0]) + ", " + r.text(args[1]) + ") AS date)", true
}

// extremeOf is Trino's greatest or least: NULL when any argument is (PostgreSQL's skip NULLs).
func extremeOf(name string) translation {
	return func(r *rewriter, args []span) (string, bool) {
		if len(args) < 2 {
			return "", false
		}
		var nulls, vals []string
		for _, a := range args {
			nulls = append(nulls, r.paren(a)+" IS NULL")
			vals = append(vals, r.text(a))
		}
		return "(CASE WHEN " + strings.Join(nulls, " OR ") + " THEN NULL ELSE " + name + "(" + strings.Join(vals, ", ") + ") END)", true
	}
}
