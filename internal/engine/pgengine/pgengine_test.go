package pgengine_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/query"
)

func open(t *testing.T) query.Engine {
	t.Helper()
	e, err := pgengine.Open(engine.Spec{Name: "pg", Kind: pgengine.Kind, Endpoint: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	if err := e.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestTypesAndMetadata(t *testing.T) {
	e := open(t)
	for _, args := range [][]any{nil, {int32(7)}} { // exec mode (no args) and cached statements
		sql := "select 1::int2 a, 2::int8 b, 12.5::numeric(6,2) c, 1.5::numeric d, '2024-01-02 03:04:05+00'::timestamptz e, '1 day'::interval f"
		if args != nil {
			sql += ", $1::int4 g"
		}
		rows, err := e.Execute(context.Background(), &query.Request{SQL: sql, Args: args})
		if err != nil {
			t.Fatal(err)
		}
		s := rows.Schema()
		want := []arrow.DataType{arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int64,
			&arrow.Decimal128Type{Precision: 6, Scale: 2}, arrow.BinaryTypes.String, engine.TimestampTZType, arrow.BinaryTypes.String}
		for i, w := range want {
			if !arrow.TypeEqual(s.Field(i).Type, w) {
				t.Errorf("args=%v column %s: %s, want %s", args, s.Field(i).Name, s.Field(i).Type, w)
			}
		}
		if v, _ := s.Field(3).Metadata.GetValue(engine.MetaPGType); v != "numeric" {
			t.Errorf("numeric column pg.type = %q", v)
		}
		if v, _ := s.Field(5).Metadata.GetValue(engine.MetaPGOID); v != "1186" {
			t.Errorf("interval column pg.oid = %q", v)
		}
		b, err := rows.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got := []string{b.Column(0).ValueStr(0), b.Column(2).ValueStr(0), b.Column(3).ValueStr(0), b.Column(4).ValueStr(0), b.Column(5).ValueStr(0)}
		wantVals := []string{"1", "12.5", "1.5", "2024-01-02T03:04:05Z", "1 day"}
		for i := range got {
			if got[i] != wantVals[i] {
				t.Errorf("args=%v value %d: %q, want %q", args, i, got[i], wantVals[i])
			}
		}
		rows.Close()
	}
}

func TestBatchesAreBounded(t *testing.T) {
	e := open(t)
	rows, err := e.Execute(context.Background(), &query.Request{SQL: "select g from generate_series(1, 2500) g"})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var sizes []int64
	for {
		b, err := rows.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, b.NumRows())
	}
	if len(sizes) != 3 || sizes[0] != engine.BatchRowsMax || sizes[2] != 2500-2*engine.BatchRowsMax {
		t.Fatalf("batch sizes %v", sizes)
	}
	if rows.Tag() != "SELECT 2500" {
		t.Fatalf("tag %q", rows.Tag())
	}
}

func TestStatementsAndErrors(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	for sql, tag := range map[string]string{"create table t(a int primary key)": "CREATE TABLE"} {
		rows, err := e.Execute(ctx, &query.Request{SQL: sql})
		if err != nil || rows.Schema() != nil || rows.Tag() != tag {
			t.Fatalf("%s: err=%v tag=%q", sql, err, rows.Tag())
		}
	}
	rows, err := e.Execute(ctx, &query.Request{SQL: "insert into t values ($1), ($2)", Args: []any{"1", int64(2)}})
	if err != nil || rows.Tag() != "INSERT 0 2" {
		t.Fatalf("insert: %v", err)
	}
	_, err = e.Execute(ctx, &query.Request{SQL: "insert into t values (1)"})
	var qe *query.Error
	var pe *pgconn.PgError
	if !errors.As(err, &qe) || qe.Code != "23505" || !errors.As(err, &pe) || pe.ConstraintName != "t_pkey" {
		t.Fatalf("duplicate: %v", err)
	}
	d, err := e.(engine.Describer).Describe(ctx, &query.Request{SQL: "select a, $1::text from t where a = $2"})
	if err != nil || len(d.Params) != 2 || d.Schema.NumFields() != 2 {
		t.Fatalf("describe: %+v %v", d, err)
	}
	if oid, _ := engine.PGTypeOf(d.Params[1]); oid != 23 {
		t.Fatalf("$2 is %d, want int4", oid)
	}
}

func TestSpecErrors(t *testing.T) {
	_, err := pgengine.Open(engine.Spec{Name: "bad", Kind: pgengine.Kind, Endpoint: "no-port-here"})
	if err == nil {
		t.Fatal("bad endpoint accepted")
	}
	_, err = engine.Openers{pgengine.Kind: pgengine.Open}.Open(engine.Spec{Name: "bad", Kind: "nosuch"})
	if err == nil || !strings.Contains(err.Error(), `unknown kind "nosuch" (known: [postgres])`) {
		t.Fatalf("unknown kind: %v", err)
	}
	_, err = pgengine.Open(engine.Spec{Name: "p", Kind: pgengine.Kind, Endpoint: "127.0.0.1:1", Password: "hunter2", Options: map[string]string{"exec_mode": "nope"}})
	if err == nil {
		t.Fatal("unknown exec_mode accepted")
	}
	e, err := pgengine.Open(engine.Spec{Name: "p", Kind: pgengine.Kind, Endpoint: "127.0.0.1:1", User: "u", Password: "hunter2", Options: map[string]string{"connect_timeout": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	err = e.Ping(context.Background())
	if err == nil {
		t.Fatal("ping of a closed port succeeded")
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error leaks the password: %v", err)
	}
}
