package duckengine

import (
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestTrinoDeclaredItems: a Trino client's select items that are now(), current_timestamp,
// from_unixtime(x) (with interval literals added or subtracted), cast(x as varchar(n)) or
// cast(x as timestamp(p) with time zone), aliased or not, declare their Trino types; an item
// inside another expression does not, a list with a * declares nothing (its columns are not its
// items), and neither does another protocol's statement.
func TestTrinoDeclaredItems(t *testing.T) {
	for sqlText, want := range map[string]string{
		"select now()": "timestamp(3) with time zone",
		"select current_timestamp ts, 1, NOW() AS n":          "timestamp(3) with time zone||timestamp(3) with time zone",
		"select from_unixtime(x / 2) \"F\" from t":            "timestamp(3) with time zone",
		"select cast(x as varchar(12)), cast(x AS VARCHAR) v": "varchar(12)|",
		"select now() + interval '1' day, x from t":           "timestamp(3) with time zone|",
		"select current_timestamp - interval '2' hour + interval '1' month c, from_unixtime(x) - interval '1-2' year to month": "timestamp(3) with time zone|timestamp(3) with time zone",
		"select now() + x, now() + interval '1' day * 2, interval '1' day + now()":                                             "<nil>",
		"select cast(x as timestamp(3) with time zone) a, cast(x as timestamp(7) with time zone), cast(x as timestamp(3))":     "timestamp(3) with time zone||",
		"select timestamp '2024-01-02 03:04:05.678' + interval '1' day, timestamp '2024-01-02' - interval '1' hour, timestamp '2024-01-02 03:04:05.6789' t, " +
			"timestamp '2024-01-02 03:04:05.678 UTC', timestamp '2024-01-02 03:04:05.1234567', timestamp '2024-01-02 03:04:05'": "timestamp(3)|timestamp(0)|timestamp(4)|||timestamp(0)",
		"select timestamp '2024-01-02 03:04:05.6 Z', timestamp '2024-01-02 03:04:05 UTC' + interval '1' day, timestamp '2024-01-02 03:04:05.5' x": "||timestamp(1)",
		"select *, now() from t":   "<nil>",
		"select t.*, now() from t": "<nil>",
		"select 1":                 "<nil>",
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
