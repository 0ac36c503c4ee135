package duckengine

import (
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestPgLikeEscapes: where the ESCAPE goes, and what is left as it is.
func TestPgLikeEscapes(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`select 1 where s like 'a\_b'`, `select 1 where s like 'a\_b' ESCAPE '\'`},
		{`select 1 where s not ilike $1 and t like 'x' || $2 || '%' order by 1`, `select 1 where s not ilike $1 ESCAPE '\' and t like 'x' || $2 || '%' ESCAPE '\' order by 1`},
		{`select s like p.x::character varying(3) m, s~~'a' from t p`, `select s like p.x::character varying(3) ESCAPE '\' m, s LIKE 'a' ESCAPE '\' from t p`},
		{`select (s like lower('A') collate "C") = true`, `select (s like lower('A') collate "C" ESCAPE '\') = true`},
		{`select s !~~* case when a then 'x' else 'y' end, s like ('a')`, `select s  NOT ILIKE  case when a then 'x' else 'y' end ESCAPE '\', s like ('a') ESCAPE '\'`},
		{`select 1 where s like (select p from u where q like 'b\%' limit 1) and r ~~ 'c'`, `select 1 where s like (select p from u where q like 'b\%' ESCAPE '\' limit 1) ESCAPE '\' and r  LIKE  'c' ESCAPE '\'`},
		{`select s like 'a' /* c */ from t`, `select s like 'a' ESCAPE '\' /* c */ from t`},
		{`select s like 'a!_' escape '!', s like 'b' escape ''`, ``},
		{`create table t2 (like t1 including all)`, ``},
		{`select s like any (array['a'])`, ``},
		{`select 'like'`, ``},
	} {
		q := &query.Request{SQL: c.in, Protocol: query.ProtocolPostgres}
		got := pgLikeEscapes(q)
		want := c.want
		if want == "" {
			want = c.in
		}
		if got.SQL != want {
			t.Errorf("%s\n  got  %s\n  want %s", c.in, got.SQL, want)
		}
		if c.want != "" && got.ClientSQL != c.in {
			t.Errorf("%s: ClientSQL %q", c.in, got.ClientSQL)
		}
	}
	my := &query.Request{SQL: `select s like 'a\_b'`, Protocol: query.ProtocolMySQL}
	if got := pgLikeEscapes(my); got != my {
		t.Errorf("a MySQL client's LIKE rewritten: %s", got.SQL)
	}
}
