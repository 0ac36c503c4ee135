package engine_test

import (
	"context"
	"io"
	"math"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5/pgtype"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

// Openers open a spec with its kind's opener, and name the known kinds for any other.
func TestOpenersOpenByKind(t *testing.T) {
	var opened []string
	open := func(name string) engine.Opener {
		return func(s engine.Spec) (query.Engine, error) { opened = append(opened, name+":"+s.Name); return nil, nil }
	}
	kinds := engine.Openers{"b": open("b"), "a": open("a")}
	if _, err := kinds.Open(engine.Spec{Name: "x", Kind: "a"}); err != nil || len(opened) != 1 || opened[0] != "a:x" {
		t.Fatalf("opened %v, err %v: want a:x", opened, err)
	}
	_, err := kinds.Open(engine.Spec{Name: "y", Kind: "c"})
	if err == nil || !contains(err.Error(), `engine "y": unknown kind "c" (known: [a b])`) || len(opened) != 1 {
		t.Fatalf("unknown kind: %v, opened %v", err, opened)
	}
}

func TestSpecStringHidesPassword(t *testing.T) {
	s := engine.Spec{Name: "n", Kind: "postgres", Endpoint: "h:1", User: "u", Password: "hunter2"}
	if got := s.String(); got == "" || contains(got, "hunter2") {
		t.Fatalf("Spec.String() = %q", got)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestPGTypeRoundTrip: a PostgreSQL column's field maps back to its own type.
func TestPGTypeRoundTrip(t *testing.T) {
	oids := []uint32{pgtype.BoolOID, pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID, pgtype.Float4OID,
		pgtype.Float8OID, pgtype.NumericOID, pgtype.TextOID, pgtype.VarcharOID, pgtype.ByteaOID, pgtype.DateOID,
		pgtype.TimeOID, pgtype.TimestampOID, pgtype.TimestamptzOID, pgtype.UUIDOID, pgtype.JSONOID, pgtype.JSONBOID,
		pgtype.IntervalOID, pgtype.Int4ArrayOID}
	for _, oid := range oids {
		for _, typmod := range []int32{-1, (10<<16 | 2) + 4} {
			f := engine.PGField("c", oid, typmod)
			gotOID, gotMod := engine.PGTypeOf(f)
			if gotOID != oid || gotMod != typmod {
				t.Errorf("oid %d typmod %d came back as %d %d", oid, typmod, gotOID, gotMod)
			}
		}
	}
	// Without metadata, the Arrow type decides.
	for typ, oid := range map[arrow.DataType]uint32{
		arrow.PrimitiveTypes.Int32: pgtype.Int4OID, arrow.PrimitiveTypes.Int64: pgtype.Int8OID,
		arrow.BinaryTypes.String: pgtype.TextOID, engine.TimestampTZType: pgtype.TimestamptzOID,
		engine.TimestampType: pgtype.TimestampOID, engine.UUIDType: pgtype.UUIDOID,
		&arrow.Decimal128Type{Precision: 10, Scale: 2}: pgtype.NumericOID, arrow.FixedWidthTypes.Date32: pgtype.DateOID,
	} {
		if got, _ := engine.PGTypeOf(arrow.Field{Name: "c", Type: typ}); got != oid {
			t.Errorf("%s maps to %d, want %d", typ, got, oid)
		}
	}
}

// TestStreamChunks: a stream of n appended rows comes out in batches of at most BatchRowsMax
// holding the same values in order.
func TestStreamChunks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		vals := rapid.SliceOfN(rapid.Int64(), 0, 3*engine.BatchRowsMax+5).Draw(t, "vals")
		schema := arrow.NewSchema([]arrow.Field{
			{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: "ts", Type: engine.TimestampTZType, Nullable: true},
		}, nil)
		next := 0
		closed := false
		s := engine.NewStream(schema, func(ctx context.Context, b *engine.BatchBuilder) (bool, error) {
			for !b.Full() {
				if next == len(vals) {
					return false, nil
				}
				if err := b.Append(0, vals[next]); err != nil {
					return false, err
				}
				if err := b.Append(1, time.UnixMicro(vals[next]%math.MaxInt32)); err != nil {
					return false, err
				}
				b.EndRow()
				next++
			}
			return true, nil
		}, func() string { return "SELECT" }, func() error { closed = true; return nil })
		var got []int64
		for {
			rec, err := s.Next(context.Background())
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if rec.NumRows() == 0 || rec.NumRows() > engine.BatchRowsMax {
				t.Fatalf("batch of %d rows", rec.NumRows())
			}
			for i := 0; i < int(rec.NumRows()); i++ {
				got = append(got, rec.Column(0).(interface{ Value(int) int64 }).Value(i))
			}
		}
		_ = s.Close()
		if !closed || len(got) != len(vals) {
			t.Fatalf("closed=%v, %d values out of %d", closed, len(got), len(vals))
		}
		for i := range vals {
			if got[i] != vals[i] {
				t.Fatalf("value %d: %d, want %d", i, got[i], vals[i])
			}
		}
	})
}

func TestAppendValueRejectsWrongTypes(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int16}}, nil)
	b := engine.NewBatchBuilder(schema)
	defer b.Release()
	if err := b.Append(0, int64(1<<20)); err == nil {
		t.Fatal("int16 column accepted 1<<20")
	}
	if err := b.Append(0, "7"); err == nil {
		t.Fatal("int16 column accepted a string")
	}
}
