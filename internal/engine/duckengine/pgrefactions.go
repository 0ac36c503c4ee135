package duckengine

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// A foreign key's referential actions, ON DELETE / ON UPDATE CASCADE, SET NULL or SET DEFAULT,
// which DuckDB refuses (it has NO ACTION only): Sequelize declares every association so
// (ON DELETE SET NULL ON UPDATE CASCADE), so its sync() could create no table with a key. The
// key is kept, its actions left out: where PostgreSQL would cascade or set NULL, DuckDB refuses
// the DELETE or UPDATE of a referenced row (23503), as NO ACTION does; nothing is changed
// that PostgreSQL would have changed differently.

// withoutReferentialActions is sqlText without the referential actions DuckDB refuses, and
// whether it had any.
func withoutReferentialActions(sqlText string) (string, bool) {
	if !containsFold(sqlText, "references") {
		return sqlText, false
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.Postgres)
	is := func(i int, w string) bool {
		return i < len(toks) && toks[i].Kind == sqltok.Word && strings.EqualFold(toks[i].Text, w)
	}
	var out strings.Builder
	from := 0
	for i := 0; i+2 < len(toks); i++ {
		if !is(i, "on") || !is(i+1, "delete") && !is(i+1, "update") {
			continue
		}
		end := i + 2
		switch {
		case is(end, "cascade"):
			end++
		case is(end, "set") && (is(end+1, "null") || is(end+1, "default")):
			end += 2
			if end < len(toks) && toks[end].Text == "(" { // SET NULL (columns)
				for end < len(toks) && toks[end].Text != ")" {
					end++
				}
				end++
			}
		default:
			continue // NO ACTION, RESTRICT: DuckDB's own
		}
		out.WriteString(sqlText[from:toks[i].Pos])
		from = len(sqlText)
		if end < len(toks) {
			from = toks[end].Pos
		}
		i = end - 1
	}
	if from == 0 {
		return sqlText, false
	}
	out.WriteString(sqlText[min(from, len(sqlText)):])
	return out.String(), true
}

// withoutDeferrability is sqlText, a CREATE TABLE, without its constraints' [NOT] DEFERRABLE
// and INITIALLY DEFERRED / IMMEDIATE, which DuckDB refuses ("Constraint not implemented"), and
// whether it had any. The key is checked as each statement runs, as deferrability reads (the
// words are reserved in PostgreSQL: no column is named so without quotes).
func withoutDeferrability(sqlText string) (string, bool) {
	if !containsFold(sqlText, "deferrable") && !containsFold(sqlText, "initially") {
		return sqlText, false
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.Postgres)
	var out strings.Builder
	from, found := 0, false
	for i := 0; i < len(toks); i++ {
		end := i
		switch {
		case isWord(toks[i], "not") && i+1 < len(toks) && isWord(toks[i+1], "deferrable"):
			end = i + 2
		case isWord(toks[i], "deferrable"):
			end = i + 1
		case isWord(toks[i], "initially") && i+1 < len(toks) && (isWord(toks[i+1], "deferred") || isWord(toks[i+1], "immediate")):
			end = i + 2
		default:
			continue
		}
		out.WriteString(sqlText[from:toks[i].Pos])
		from, found = len(sqlText), true
		if end < len(toks) {
			from = toks[end].Pos
		}
		i = end - 1
	}
	if !found {
		return sqlText, false
	}
	out.WriteString(sqlText[from:])
	return out.String(), true
}
