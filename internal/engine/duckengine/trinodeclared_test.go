package duckengine

import (
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestTrinoDeclaredItems: a Trino client's select items that are now(), current_timestamp,
// from_unixtime(x) or cast(x as varchar(n)), aliased or not, declare their Trino types; an item
// inside an expression does not, a list with a * declares nothing (its columns are not its
// items), and neither does another protocol's statement.
func TestTrinoDeclaredItems(t *testing.T) {
	for sqlText, want := range map[string]string{
		"select now()": "timestamp(3) with time zone",
		"select current_timestamp ts, 1, NOW() AS n":          "timestamp(3) with time zone||timestamp(3) with time zone",
		"select from_unixtime(x / 2) \"F\" from t":            "timestamp(3) with time zone",
		"select cast(x as varchar(12)), cast(x AS VARCHAR) v": "varchar(12)|",
		"select now() + interval '1' day, x from t":           "<nil>",
		"select *, now() from t":                              "<nil>",
		"select t.*, now() from t":                            "<nil>",
		"select 1":                                            "<nil>",
	} {
		got := trinoDeclared(&query.Request{Protocol: query.ProtocolTrino, SQL: sqlText})
		if s := strings.Join(got, "|"); got == nil && want != "<nil>" || got != nil && s != want {
			t.Errorf("%s: %q, want %s", sqlText, got, want)
		}
	}
	if got := trinoDeclared(&query.Request{Protocol: query.ProtocolPostgres, SQL: "select now()"}); got != nil {
		t.Errorf("a PostgreSQL client's now(): %q", got)
	}
}
