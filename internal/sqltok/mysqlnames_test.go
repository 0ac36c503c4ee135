package sqltok

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestMySQLItemName: the names MariaDB 10.11 gave these items (mariadb --column-type-info,
// 2026-12-06); the mysqlwire oracle tests hold the engines to it.
func TestMySQLItemName(t *testing.T) {
	for item, want := range map[string]string{
		"COUNT(*)": "COUNT(*)", "count( * )": "count( * )", "ID": "ID", "gs.V": "V", "(id)": "id",
		"((g.id))": "id", "(1+1)": "(1+1)", "-g.id": "-g.id", "g.id +  0": "g.id +  0", "'abc'": "abc",
		`"abc"`: "abc", "-1": "-1", "NULL": "NULL", "Null": "NULL", "tRuE": "TRUE", "(true)": "TRUE",
		"false": "FALSE", "current_date": "current_date", "`v`": "v", "`gs`.`id`": "id", "1.50": "1.50",
		"_utf8mb4'x'": "x", "N'y'": "y", "x'41'": "x'41'", "'it''s'": "it's", `'a\tb'`: "a\tb",
		"(((1)))": "1", "('a')": "a", "+1.5": "1.5", "+v": "v", "- 1": "- 1", "''": "", "count(*)over()": "count(*)over()",
		"`a``b`": "a`b", "(select 1)": "(select 1)", "g.v is null": "g.v is null", "concat(v, ?)": "concat(v, ?)",
	} {
		if got := MySQLItemName(item); got != want {
			t.Errorf("%s: %q, MariaDB %q", item, got, want)
		}
	}
}

// TestMySQLItemNameOfAnyText: any text gets a name (no panic), and a quoted column's name is
// the name it quotes, however deep in parentheses.
func TestMySQLItemNameOfAnyText(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		MySQLItemName(rapid.String().Draw(t, "text"))
		name := rapid.StringMatching("[a-zA-Z0-9_ `.()'+-]{1,12}").Draw(t, "name")
		depth := rapid.IntRange(0, 3).Draw(t, "depth")
		item := strings.Repeat("(", depth) + "t.`" + strings.ReplaceAll(name, "`", "``") + "`" + strings.Repeat(")", depth)
		if got := MySQLItemName(item); got != name {
			t.Fatalf("%s: %q", item, got)
		}
	})
}
