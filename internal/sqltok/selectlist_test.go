package sqltok

import (
	"reflect"
	"testing"
)

func TestSelectItems(t *testing.T) {
	mods := map[string]bool{"distinct": true}
	ends := map[string]bool{"from": true, "where": true}
	for _, c := range []struct {
		sql  string
		want []string
	}{
		{"SELECT a, f(b, c) AS x FROM t", []string{"a", "f(b, c) AS x"}},
		{"WITH w AS (SELECT 1 FROM u) SELECT DISTINCT y, arr[1] FROM w", []string{"y", "arr[1]"}},
		{"SELECT (SELECT 1 FROM t), 2;", []string{"(SELECT 1 FROM t)", "2"}},
		{"SELECT a, FROM t", nil},
		{"UPDATE t SET a = 1", nil},
	} {
		got := SelectItems(c.sql, SignificantTokens(c.sql, MySQL), mods, ends)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("SelectItems(%q) = %q, want %q", c.sql, got, c.want)
		}
	}
}
