package trinopg

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// Trino's 1e0, 2.5E-3 (a number with an exponent) is a double; PostgreSQL reads it as numeric
// (1e0 / 3 is 0.33333333333333333333, a number, not Trino's double 0.3333333333333333). It is
// written as CAST(1e0 AS double precision). Trino's typed literals of types PostgreSQL spells
// otherwise (double '2.5', tinyint '1') are written with PostgreSQL's names.

// doubleLiterals is sqlText with each number with an exponent as a double precision cast, and
// those replacements.
func doubleLiterals(sqlText string) (string, []edit) {
	if !strings.ContainsAny(sqlText, "eE") && !sqltok.ContainsFold(sqlText, "tinyint") {
		return sqlText, nil
	}
	var b strings.Builder
	var edits []edit
	at := 0
	toks := sqltok.SignificantTokens(sqlText, sqltok.Trino)
	for i, t := range toks {
		var out string
		switch {
		case t.Kind == sqltok.Word && i+1 < len(toks) && toks[i+1].Kind == sqltok.String && (i == 0 || toks[i-1].Text != "."):
			out = trinoTypes[strings.ToLower(t.Text)]
		case t.Kind == sqltok.Number && strings.ContainsAny(t.Text, "eE") && !strings.HasPrefix(t.Text, "0x") && !strings.HasPrefix(t.Text, "0X"):
			out = "CAST(" + t.Text + " AS double precision)"
		}
		if out == "" {
			continue
		}
		b.WriteString(sqlText[at:t.Pos])
		b.WriteString(out)
		edits = append(edits, edit{at: t.Pos, old: len(t.Text), new: len(out)})
		at = t.Pos + len(t.Text)
	}
	if at == 0 {
		return sqlText, nil
	}
	b.WriteString(sqlText[at:])
	return b.String(), edits
}
