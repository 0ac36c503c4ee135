package trinopg

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// Trino's X'0102ff' is a varbinary literal; PostgreSQL reads it as a bit string (its text
// "000000010000001011111111"). It is written as PostgreSQL's bytea literal of the same bytes.

// binaryLiterals is sqlText with each X'...' as '\x...'::bytea, and those replacements.
func binaryLiterals(sqlText string) (string, []edit) {
	if !strings.Contains(sqlText, "X'") && !strings.Contains(sqlText, "x'") {
		return sqlText, nil
	}
	var b strings.Builder
	var edits []edit
	at := 0
	for _, t := range sqltok.SignificantTokens(sqlText, sqltok.Trino) {
		if t.Kind != sqltok.String || len(t.Text) < 3 || t.Text[0] != 'X' && t.Text[0] != 'x' || t.Text[1] != '\'' || t.Unterminated {
			continue
		}
		hex := strings.Join(strings.Fields(t.Text[2:len(t.Text)-1]), "") // Trino allows blanks between digits
		out := `'\x` + hex + `'::bytea`
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
