package duckengine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

// TestCompositeValuesReadAsDuckDBText: lists, structs and maps come back as the text DuckDB
// prints for them, every string quoted (a quote doubled) so the text reads back unambiguously,
// struct fields and map entries in a stable order, and each element type written as DuckDB
// writes it (a timestamp in UTC, a date alone, a time of day alone, intervals, blobs, floats).
func TestCompositeValuesReadAsDuckDBText(t *testing.T) {
	e := open(t)
	cases := []struct{ sql, want string }{
		{`['it''s', 'b', NULL]`, `['it''s', 'b', NULL]`},
		{`{'z': 'x', 'a': 1, 'm': NULL}`, `{'a': 1, 'm': NULL, 'z': 'x'}`},
		{`MAP {'k''1': 2, 'a': NULL, 'b': 3}`, `{'k''1'=2, 'a'=NULL, 'b'=3}`},
		{`[timestamptz '2024-02-29 13:14:15.5+02', timestamp '2024-01-02 00:00:00', timestamp '2024-01-02 00:00:01']`, `[2024-02-29 11:14:15.5, 2024-01-02, 2024-01-02 00:00:01]`},
		{`[date '2024-03-01', date '0001-01-02']`, `[2024-03-01, 0001-01-02]`},
		{`[time '01:02:03.25', time '00:00:00']`, `[01:02:03.25, 00:00:00]`},
		{`[interval '14 months -3 days 00:00:01.5', interval '-1 year -1 mon', interval '1 year 00:00:00.000001', interval '0 seconds', interval '1 day', interval '-1 day -00:00:02']`,
			`[1 year 2 mons -3 days +00:00:01.5, -1 years -1 mons, 1 year 00:00:00.000001, 00:00:00, 1 day, -1 days -00:00:02]`},
		{`[1.25::decimal(5,2)]`, `[1.25]`},
		{`['\xDE\xAD'::blob]`, `['\xdead']`},
		// go-duckdb hands UUIDs over as 16 bytes: in a UUID list they are still UUIDs, not blobs.
		{`['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, NULL]`, `[a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11, NULL]`},
		{`[['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid]]`, `[[a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11]]`},
		{`[1.5::float, 0.1::double]`, `[1.5, 0.1]`},
		{`[[1, 2], [3]]`, `[[1, 2], [3]]`},
		{`[{'q': ['s']}]`, `[{'q': ['s']}]`},
		{`[170141183460469231731687303715884105727::hugeint]`, `[170141183460469231731687303715884105727]`},
	}
	for _, c := range cases {
		_, rows, _ := drain(t, e, "select "+c.sql)
		if len(rows) != 1 || rows[0][0] != c.want {
			t.Errorf("%s: %q, want %q", c.sql, rows, c.want)
		}
	}
}

// TestFailingSelectsFreeTheirConnection: a SELECT that fails as it starts, or part way through
// its rows, gives its connection back: on a one-connection engine the next statements still run.
func TestFailingSelectsFreeTheirConnection(t *testing.T) {
	e := openConns(t, 1, nil)
	for _, sql := range []string{
		"select error('boom')",
		"select error('boom') from range(3)",
		"select case when i = 5000 then error('boom') else i end from range(10000) t(i)",
		"select error('boom')",
	} {
		// a hang guard, far beyond the statements' time: a leaked connection waits forever
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		rows, err := e.Execute(ctx, &query.Request{SQL: sql})
		if err == nil {
			for err == nil {
				_, err = rows.Next(ctx)
			}
			rows.Close()
		}
		cancel()
		if err == io.EOF || !strings.Contains(err.Error(), "boom") {
			t.Fatalf("%s: %v, want the statement's error", sql, err)
		}
	}
	if _, rows, _ := drain(t, e, "select 42"); fmt.Sprint(rows) != "[[42]]" {
		t.Fatalf("after the failures: %v", rows)
	}
}

// TestTextParametersParsedAsTheirType: text arguments (as PostgreSQL-wire clients send them)
// are parsed as the type DuckDB inferred for the parameter; text that is no such value is
// refused with invalid_text_representation naming the parameter; more or fewer arguments than
// the statement's parameters are refused.
func TestTextParametersParsedAsTheirType(t *testing.T) {
	e := open(t)
	drain(t, e, "create table p (i integer, u ubigint, f double, b boolean, d date, ts timestamp)")
	drain(t, e, "insert into p values (42, 7, 1.5, true, date '2024-02-29', timestamp '2024-02-29 13:14:15')")
	q := "select count(*) from p where i = $1 and u = $2 and f = $3 and b = $4 and d = $5 and ts = $6"
	if _, rows, _ := drain(t, e, q, " 42 ", "7", "1.5", "TRUE", "2024-02-29", "2024-02-29 13:14:15"); fmt.Sprint(rows) != "[[1]]" {
		t.Fatalf("well-formed text parameters: %v", rows)
	}
	good := []any{"42", "7", "1.5", "true", "2024-02-29", "2024-02-29 13:14:15"}
	for i, bad := range []string{"4x2", "-7", "one", "maybe", "29/02/2024", "yesterday"} {
		args := append([]any(nil), good...)
		args[i] = bad
		_, err := e.Execute(context.Background(), &query.Request{SQL: q, Args: args})
		var qe *query.Error
		if !errors.As(err, &qe) || qe.Code != "22P02" || !strings.Contains(qe.Message, fmt.Sprintf("parameter $%d", i+1)) {
			t.Errorf("parameter $%d %q: %v, want 22P02 naming it", i+1, bad, err)
		}
	}
	// DuckDB would bind the first and ignore the rest: refused, naming both counts
	for _, args := range [][]any{{"a", "extra"}, {}} {
		_, err := e.Execute(context.Background(), &query.Request{SQL: "select $1::varchar", Args: args})
		var qe *query.Error
		want := fmt.Sprintf("the statement has 1, %d given", len(args))
		if !errors.As(err, &qe) || qe.Code != "42601" || !strings.Contains(qe.Message, want) {
			t.Errorf("%d arguments for 1 parameter: %v, want 42601 saying %q", len(args), err, want)
		}
	}
}

// TestDescribeWithoutRunning: Describe tells a SELECT's columns and its parameters' types
// without running it, no columns for a statement without rows, and the SQLSTATE of one that
// does not prepare; the connection it used is free again afterwards.
func TestDescribeWithoutRunning(t *testing.T) {
	e := openConns(t, 1, nil)
	drain(t, e, "create table d (id integer, name varchar)")
	describe := func(sql string) (*engine.Description, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard
		defer cancel()
		return e.(engine.Describer).Describe(ctx, &query.Request{SQL: sql})
	}
	d, err := describe("select name, id + 1 as next from d where id = $1")
	if err != nil {
		t.Fatal(err)
	}
	if d.Schema == nil || d.Schema.NumFields() != 2 || d.Schema.Field(0).Name != "name" || !arrow.TypeEqual(d.Schema.Field(0).Type, arrow.BinaryTypes.String) ||
		d.Schema.Field(1).Name != "next" || !arrow.TypeEqual(d.Schema.Field(1).Type, arrow.PrimitiveTypes.Int32) || len(d.Params) != 1 {
		t.Fatalf("described %v, params %v", d.Schema, d.Params)
	}
	if d, err := describe("insert into d values ($1, $2)"); err != nil || d.Schema != nil || len(d.Params) != 2 {
		t.Fatalf("an INSERT described as %+v (%v)", d, err)
	}
	var qe *query.Error
	if _, err := describe("select nope from d"); !errors.As(err, &qe) || !strings.HasPrefix(qe.Code, "42") {
		t.Fatalf("a statement that does not bind: %v, want SQLSTATE 42xxx", err)
	}
	if _, rows, _ := drain(t, e, "select count(*) from d"); fmt.Sprint(rows) != "[[0]]" {
		t.Fatalf("after describing: %v", rows)
	}
}
