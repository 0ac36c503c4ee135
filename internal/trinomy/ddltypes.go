package trinomy

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// A column's Trino type in CREATE TABLE and ALTER TABLE ... ADD [COLUMN] as MariaDB's type of the
// same values: varchar and varbinary without a length (MariaDB requires one) as TEXT and BLOB,
// timestamp as DATETIME (timestamp alone as timestamp(3), as Trino reads it; MariaDB's TIMESTAMP is zoned, 1970 to 2038, and the first one may
// update itself), real as FLOAT (MariaDB's REAL is a double).

var ddlTypes = map[string]string{"varchar": "TEXT", "varbinary": "BLOB", "timestamp": "DATETIME", "real": "FLOAT"}

// columnTypes writes the Trino column types of a CREATE TABLE's or an ALTER TABLE's column
// definitions as MariaDB's.
func columnTypes(toks []sqltok.Token, text []string) {
	if len(toks) < 4 || !toks[0].IsWord("create", "alter") {
		return
	}
	if !toks[1].IsWord("table") && !(toks[1].IsWord("or") && len(toks) > 3 && toks[3].IsWord("table")) {
		return
	}
	for j := 2; j < len(toks); j++ {
		t := toks[j]
		mariaType, ok := ddlTypes[strings.ToLower(t.Text)]
		if !ok || t.Kind != sqltok.Word || !columnTypeAt(toks, j) {
			continue
		}
		next := ""
		if j+1 < len(toks) {
			next = strings.ToLower(toks[j+1].Text)
		}
		switch {
		case (mariaType == "TEXT" || mariaType == "BLOB") && next == "(":
			// a length: MariaDB's type of that name
		case mariaType == "DATETIME" && next == "with":
			// a zoned timestamp: MariaDB's error as written
		case mariaType == "DATETIME" && next != "(":
			text[j] = "DATETIME(3)" // Trino's timestamp is timestamp(3)
		default:
			text[j] = mariaType
		}
	}
}

// columnTypeAt reports whether toks[j] stands where a column definition's type does: after
// the column's name, which follows the definitions' "(" or ",", or ADD [COLUMN].
func columnTypeAt(toks []sqltok.Token, j int) bool {
	if j < 2 || toks[j-1].Kind != sqltok.Word && toks[j-1].Kind != sqltok.QuotedIdent {
		return false
	}
	before := toks[j-2]
	return before.Text == "(" || before.Text == "," || before.IsWord("add", "column")
}
