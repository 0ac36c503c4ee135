package trinopg

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

func TestNames(t *testing.T) {
	for q, want := range map[string]string{
		"select 1": "select 1 AS _col0",
		"SELECT a, t.b, \"C\", a + 1, count(*) n, x is null, 'é' y, current_date, true from t": "SELECT a, t.b, \"C\", a + 1 AS _col3, count(*) n, x is null AS _col5, 'é' y, current_date AS _col7, true AS _col8 from t",
		"select *, t.* from t": "select *, t.* from t",
		"select 1 +":           "select 1 +",
		"with w as (select 1) select x, 2 from w":         "with w as (select 1) select x, 2 AS _col1 from w",
		"select interval '1' day, case when a then 1 end": "select interval '1' day AS _col0, case when a then 1 end AS _col1",
		"insert into t select 1":                          "insert into t select 1",
	} {
		tr, err := SQL(q, Session{})
		if err != nil || tr.SQL != want {
			t.Errorf("%s:\n got %s\nwant %s (%v)", q, tr.SQL, want, err)
		}
	}
}

func TestFunctions(t *testing.T) {
	for q, want := range map[string]string{
		"select split(s, ',') x from t":                                         "select string_to_array(s, ',') x from t",
		"select contains(split(s, ','), 'a') c":                                 "select (('a') = ANY(string_to_array(s, ','))) c",
		"select cast(x as double) d, cast(y as varchar) v":                      "select CAST(x AS double precision) d, cast(y as varchar) v",
		"select t.split(x) y":                                                   "select t.split(x) y",
		"select date_add(u, 1, d) y":                                            "select date_add(u, 1, d) y",
		"select date_add('week', n, current_date) y":                            "select CAST(((current_date) + (n) * interval '7 days') AS date) y",
		"select 1e0 / 3 x, -2.5E-3 y, 1.5 z":                                    "select CAST(1e0 AS double precision) / 3 x, -CAST(2.5E-3 AS double precision) y, 1.5 z",
		"select row(1, 'a') r, cast(row(1, 'a') as row(x integer, y double)) s": "select jsonb_build_array(1, 'a') r, jsonb_build_array(CAST(1 AS integer), CAST('a' AS double precision)) s",
	} {
		tr, _ := SQL(q, Session{})
		if tr.SQL != want {
			t.Errorf("%s:\n got %s\nwant %s", q, tr.SQL, want)
		}
	}
}

// TestPositionsInClientText: a name of the client's text that a translation keeps as it was
// (zz) is found by Position where the client wrote it, whatever calls and items surround it.
func TestPositionsInClientText(t *testing.T) {
	items := []string{"1", "a", "t.b", "a + 1", "'é'", "split(s, ',')", "element_at(a, -1)", "count(*) n", "to_unixtime(now())",
		"date_diff('day', d, current_date)", "cast(x as double)", "\"É\""}
	rapid.Check(t, func(t *rapid.T) {
		list := rapid.SliceOfN(rapid.SampledFrom(items), 0, 5).Draw(t, "items")
		at := rapid.IntRange(0, len(list)).Draw(t, "at")
		list = append(list[:at:at], append([]string{"zz"}, list[at:]...)...)
		q := "select " + strings.Join(list, ",\n ") + " from t"
		tr, _ := SQL(q, Session{})
		i := strings.Index(tr.SQL, "zz")
		if i < 0 {
			t.Fatalf("zz lost: %s", tr.SQL)
		}
		pos := int32(utf8.RuneCountInString(tr.SQL[:i])) + 1
		want := int32(utf8.RuneCountInString(q[:strings.Index(q, "zz")])) + 1
		if got := tr.Position(pos); got != want {
			t.Fatalf("%s\nas %s\nzz at %d, Position %d, want %d", q, tr.SQL, pos, got, want)
		}
		for n, item := range list {
			named := strings.Contains(tr.SQL, fmt.Sprintf(" AS _col%d", n))
			if expression := item != "a" && item != "t.b" && item != "zz" && item != "count(*) n" && item != "\"É\""; named != expression {
				t.Fatalf("%s\nas %s\nitem %d (%s) named %v", q, tr.SQL, n, item, named)
			}
		}
	})
}

// Trino's X'..' is varbinary: PostgreSQL's bytea literal of the same bytes, not its bit string.
func TestBinaryLiterals(t *testing.T) {
	for q, want := range map[string]string{
		"select x'0102ff' b":          `select '\x0102ff'::bytea b`,
		"select X'01 02' b, 'x''a' c": `select '\x0102'::bytea b, 'x''a' c`,
		"select 'x' b":                "select 'x' b",
	} {
		if tr, _ := SQL(q, Session{}); tr.SQL != want {
			t.Errorf("%s:\n got %s\nwant %s", q, tr.SQL, want)
		}
	}
}

func TestZonedTimestamps(t *testing.T) {
	for q, want := range map[string]string{
		"select timestamp '2024-01-02 03:04:05 UTC'":                                   "select (timestamptz '2024-01-02 03:04:05 UTC' AT TIME ZONE 'UTC') AS _col0",
		"select timestamp '2024-01-02 03:04:05+05:30' x":                               "select (timestamptz '2024-01-02 03:04:05+05:30' AT TIME ZONE INTERVAL '+05:30') x",
		"select ts at time zone 'America/New_York' x from t":                           "select ((ts)::timestamptz AT TIME ZONE 'America/New_York') x from t",
		"select t.ts AT TIME ZONE '-08:00' x, hour(now() at time zone 'UTC') h from t": "select ((t.ts)::timestamptz AT TIME ZONE INTERVAL '-08:00') x, CAST(floor(extract(hour from (((now())::timestamptz AT TIME ZONE 'UTC')))) AS bigint) h from t",
		"select timestamp '2024-01-02 03:04:05 UTC' at time zone 'Asia/Tokyo' x":       "select (timestamptz '2024-01-02 03:04:05 UTC' AT TIME ZONE 'Asia/Tokyo') x",
		"select timestamp '2024-01-02 03:04:05' at time zone 'UTC' x":                  "select ((timestamp '2024-01-02 03:04:05')::timestamptz AT TIME ZONE 'UTC') x",
		"select timestamp '2024-01-02 03:04:05' x":                                     "select timestamp '2024-01-02 03:04:05' x",
		"select 'at time zone' x":                                                      "select 'at time zone' x",
	} {
		tr, err := SQL(q, Session{})
		if err != nil || tr.SQL != want {
			t.Errorf("%s:\n got %s\nwant %s (%v)", q, tr.SQL, want, err)
		}
	}
}

// TestNullsLast: a descending key that names neither NULLS FIRST nor NULLS LAST sorts its NULLs
// last, as Trino's; in a window's and an aggregate's ORDER BY too.
func TestNullsLast(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`select a from t order by a desc, b`, `select a from t order by a desc NULLS LAST, b`},
		{`select a from t order by a desc nulls first, b desc limit 1`, `select a from t order by a desc nulls first, b desc NULLS LAST limit 1`},
		{`select rank() over (partition by a order by b desc) from t`, `select rank() over (partition by a order by b desc NULLS LAST) AS _col0 from t`},
		{`select array_agg(a order by a desc) from t`, `select array_agg(a order by a desc NULLS LAST) AS _col0 from t`},
		{`select a from t order by a`, `select a from t order by a`},
	} {
		tr, err := SQL(c.in, Session{})
		if err != nil || tr.SQL != c.want {
			t.Errorf("%s:\n got %s (%v)\nwant %s", c.in, tr.SQL, err, c.want)
		}
	}
}
