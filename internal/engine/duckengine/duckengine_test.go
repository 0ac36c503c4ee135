package duckengine_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/query"
)

func open(t *testing.T) query.Engine {
	t.Helper()
	e, err := duckengine.Open(engine.Spec{Name: "duck", Kind: duckengine.Kind, Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	if err := e.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e
}

// drain returns every batch's rows as Arrow value strings, and the tag.
func drain(t *testing.T, e query.Engine, sql string, args ...any) (*arrow.Schema, [][]string, string) {
	t.Helper()
	rows, err := e.Execute(context.Background(), &query.Request{SQL: sql, Args: args})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	var out [][]string
	for {
		b, err := rows.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if b.NumRows() > engine.BatchRowsMax {
			t.Fatalf("batch of %d rows exceeds %d", b.NumRows(), engine.BatchRowsMax)
		}
		for r := 0; r < int(b.NumRows()); r++ {
			row := make([]string, b.NumCols())
			for c := range row {
				row[c] = b.Column(c).ValueStr(r)
			}
			out = append(out, row)
		}
	}
	return rows.Schema(), out, rows.Tag()
}

// sessionOn opens a session on e, closed when the test ends, and returns what runs a request
// on it and answers the rows: each row's values by spaces, rows by sep.
func sessionOn(t *testing.T, e query.Engine, sep string) func(q *query.Request) (string, error) {
	t.Helper()
	ctx := context.Background()
	s, err := e.(engine.SessionOpener).OpenSession(ctx, &query.Request{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return func(q *query.Request) (string, error) {
		rows, err := s.Execute(ctx, q)
		if err != nil {
			return "", err
		}
		defer rows.Close()
		var out []string
		for rows.Schema() != nil {
			b, err := rows.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				return "", err
			}
			for r := 0; r < int(b.NumRows()); r++ {
				cols := make([]string, b.NumCols())
				for c := range cols {
					cols[c] = b.Column(c).ValueStr(r)
				}
				out = append(out, strings.Join(cols, " "))
			}
		}
		return strings.Join(out, sep), nil
	}
}

func TestDuckDBTypeMapping(t *testing.T) {
	e := open(t)
	schema, rows, tag := drain(t, e, `select 1::tinyint a, 2::smallint b, 3::integer c, 4::bigint d,
		1.5::float f, 2.25::double g, 12.345::decimal(10,3) h, 'hi' i, true j, date '2024-02-29' k,
		time '13:14:15.123456' l, timestamp '2024-02-29 13:14:15.5' m,
		timestamptz '2024-02-29 13:14:15.5+02' n, '\xDE\xAD'::blob o, '{"a":1}'::json p,
		'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid q, null r, null::integer s,
		interval '1 month 2 days 3 hours' u, [1, 2] v, 170141183460469231731687303715884105727::hugeint w`)
	want := []struct {
		typ arrow.DataType
		val string
	}{
		{arrow.PrimitiveTypes.Int8, "1"}, {arrow.PrimitiveTypes.Int16, "2"}, {arrow.PrimitiveTypes.Int32, "3"},
		{arrow.PrimitiveTypes.Int64, "4"}, {arrow.PrimitiveTypes.Float32, "1.5"}, {arrow.PrimitiveTypes.Float64, "2.25"},
		{&arrow.Decimal128Type{Precision: 10, Scale: 3}, "12.345"}, {arrow.BinaryTypes.String, "hi"},
		{arrow.FixedWidthTypes.Boolean, "true"}, {arrow.FixedWidthTypes.Date32, "2024-02-29"},
		{arrow.FixedWidthTypes.Time64us, "13:14:15.123456"}, {engine.TimestampType, "2024-02-29T13:14:15.5"},
		{engine.TimestampTZType, "2024-02-29T11:14:15.5Z"}, {arrow.BinaryTypes.Binary, "3q0="},
		{arrow.BinaryTypes.String, `{"a":1}`}, {engine.UUIDType, "oO68mZwLTvi7bWu5vTgKEQ=="},
		{arrow.PrimitiveTypes.Int32, "(null)"}, {arrow.PrimitiveTypes.Int32, "(null)"},
		{arrow.BinaryTypes.String, "1 mon 2 days 03:00:00"}, {arrow.BinaryTypes.String, "[1, 2]"},
		{engine.HugeintType, "1.7014118346046923173168730371588410573e+38"}, // exact in TestDuckDBTypesReadAsTextOrDecimal
	}
	if len(rows) != 1 || len(rows[0]) != len(want) {
		t.Fatalf("got %v", rows)
	}
	for i, w := range want {
		f := schema.Field(i)
		if !arrow.TypeEqual(f.Type, w.typ) {
			t.Errorf("column %s: type %s, want %s", f.Name, f.Type, w.typ)
		}
		if rows[0][i] != w.val {
			t.Errorf("column %s: value %q, want %q", f.Name, rows[0][i], w.val)
		}
		if _, ok := f.Metadata.GetValue(engine.MetaDuckDBType); !ok {
			t.Errorf("column %s lacks %s metadata", f.Name, engine.MetaDuckDBType)
		}
	}
	if tag != "SELECT 1" {
		t.Errorf("tag %q, want SELECT 1", tag)
	}
	// The PostgreSQL view of these columns: JSON stays json, UUID uuid, HUGEINT numeric.
	for col, oid := range map[int]uint32{14: 114, 15: 2950, 20: 1700, 6: 1700, 12: 1184} {
		if got, _ := engine.PGTypeOf(schema.Field(col)); got != oid {
			t.Errorf("column %s: PostgreSQL type %d, want %d", schema.Field(col).Name, got, oid)
		}
	}
}

func TestDuckDBTagsParamsAndBatches(t *testing.T) {
	e := open(t)
	steps := []struct{ sql, tag string }{
		{"create table t(id integer, name varchar)", "CREATE TABLE"},
		{"insert into t select range, 'n' || range from range(5000)", "INSERT 0 5000"},
		{"update t set name = 'x' where id < 10", "UPDATE 10"},
		{"delete from t where id >= 4000", "DELETE 1000"},
	}
	for _, s := range steps {
		_, _, tag := drain(t, e, s.sql)
		if tag != s.tag {
			t.Fatalf("%s: tag %q, want %q", s.sql, tag, s.tag)
		}
	}
	_, rows, tag := drain(t, e, "select id, name from t order by id")
	if len(rows) != 4000 || tag != "SELECT 4000" || rows[3999][0] != "3999" {
		t.Fatalf("got %d rows, tag %q", len(rows), tag)
	}
	_, rows, _ = drain(t, e, "select name from t where id = $1 and name = $2", int32(3), "x")
	if len(rows) != 1 || rows[0][0] != "x" {
		t.Fatalf("parameters: got %v", rows)
	}
	_, rows, _ = drain(t, e, "select count(*) from t where id < $1", "100")
	if len(rows) != 1 || rows[0][0] != "100" {
		t.Fatalf("text parameter cast by DuckDB: got %v", rows)
	}
	d, err := e.(engine.Describer).Describe(context.Background(), &query.Request{SQL: "select * from t where id = $1 and name = $2"})
	if err != nil || len(d.Params) != 2 {
		t.Fatalf("describe: %v %v", d, err)
	}
	if oid, _ := engine.PGTypeOf(d.Params[0]); oid != 23 {
		t.Fatalf("$1 described as %d, want int4 (23)", oid)
	}
}

func TestDuckDBErrorsHaveSQLSTATE(t *testing.T) {
	e := open(t)
	for sql, code := range map[string]string{
		"selec 1":               "42601",
		"select * from missing": "42P01",
		"select from where":     "42601",
		"select 'x'::integer":   "22P02",
	} {
		_, err := e.Execute(context.Background(), &query.Request{SQL: sql})
		var qe *query.Error
		if !errors.As(err, &qe) || qe.Code != code {
			t.Errorf("%s: got %v, want SQLSTATE %s", sql, err, code)
		}
	}
}

func TestDuckDBCancel(t *testing.T) {
	e := open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	rows, err := e.Execute(ctx, &query.Request{SQL: "select count(*) from range(100000000000) a"})
	if err == nil {
		_, err = rows.Next(ctx)
		rows.Close()
	}
	if err == nil {
		t.Fatal("a cancelled long query succeeded")
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("cancel took %v", time.Since(start))
	}
}

var _ = array.NewInt64Builder
