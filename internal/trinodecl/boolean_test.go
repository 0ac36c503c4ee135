package trinodecl

import (
	"fmt"
	"testing"
)

func TestBooleanItems(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want string
	}{
		{"select 1", "[]"},
		{"select 1 = 1, a, a <> b x, not ok, not ok AS y, x is null, x is not null n, a in (1, 2), s like 'a%', v between 1 and 2 from t",
			"[true false true true true true true true true true]"},
		{"select true, false f, null, (a > 1), exists (select 1), a + (b = c), f(a = b), 'a = b'", "[true true false true true false false false]"},
		{"select case when a = 1 then true else false end, case when a then 1 else 0 end, case when a then null else b > 1 end c from t",
			"[true false true]"},
		{"select case when a = 1 then 'x' end = 'x', a and b, a or b, a || b = 'c'", "[true true true true]"},
		{"select *, a = b from t", "[]"},
	} {
		if got := fmt.Sprint(BooleanItems(c.sql)); got != c.want {
			t.Errorf("%s: %s, want %s", c.sql, got, c.want)
		}
	}
}
