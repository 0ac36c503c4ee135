package duckengine_test

import (
	"context"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

// TestCastParametersDescribedByTheirCast: a parameter DuckDB leaves untyped is described by the
// cast the statement writes after it, as PostgreSQL describes it (pgx then sends an integer to
// $1::int compared with a BIGINT column, instead of refusing to write one as text); one
// without a cast stays text.
func TestCastParametersDescribedByTheirCast(t *testing.T) {
	e := open(t)
	for sqlText, want := range map[string][]uint32{
		"select x from range(4) g(x) where x = $1::int":                                        {23},
		"select case when x = $1::int then null else x end from generate_series(0, 3) as g(x)": {23},
		"select x from range(4) g(x) where x = CAST($1 AS bigint) or x = $2":                   {20, 20},
		"select x from range(4) g(x) where x = $1::smallint and $2::int4[] is null":            {21, 1007},
		"select list_contains($1, 1)":                                                          {25}, // a list of no named type
		"select now() where now() > $1::timestamp with time zone":                              {1184},
		"select x from range(4) g(x) where x::varchar = $1::varchar(3)":                        {25},
		"select x from range(4) g(x) where x::varchar = $1":                                    {25},
		"select x from range(4) g(x) where x = $1::int and x = $1::int":                        {23},
		"select x from range(4) g(x) where x = any($1)":                                        {1016},
		"select x from range(4) g(x) where x::int <> ALL ( $1 )":                               {1007},
		"select x * $1, x / ($2 * $3) from range(4) g(x)":                                      {20, 701, 701},
		"select $1 + x::int2 from range(4) g(x)":                                               {21},
	} {
		d, err := e.(engine.Describer).Describe(context.Background(), &query.Request{SQL: sqlText, Protocol: query.ProtocolPostgres})
		if err != nil {
			t.Errorf("%s: %v", sqlText, err)
			continue
		}
		var got []uint32
		for _, p := range d.Params {
			oid, _ := engine.PGTypeOf(p)
			got = append(got, oid)
		}
		if len(got) != len(want) {
			t.Errorf("%s: parameters %v, want %v", sqlText, got, want)
			continue
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: parameters %v, want %v", sqlText, got, want)
				break
			}
		}
	}
}
