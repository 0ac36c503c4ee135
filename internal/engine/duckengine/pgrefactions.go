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
