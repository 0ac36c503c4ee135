package trinoengine

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/frontend/trinohttp"
	"github.com/queryflux/queryflux/internal/query"
)

// TestArrowRoundTripThroughTrino: Arrow → Trino JSON (trinohttp) → Arrow (this engine) keeps
// every value; types change only where Trino has no such type (unsigned integers widen).
func TestArrowRoundTripThroughTrino(t *testing.T) {
	srv, err := trinohttp.NewServer(frontendtest.NewBackend(frontendtest.AllTypesEngine()), trinohttp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(l)
	defer srv.Close()
	e, err := Open(Config{Name: "rt", URL: "http://" + l.Addr().String(), User: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := e.Execute(context.Background(), &query.Request{SQL: "types"})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	b, err := rows.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want, src := frontendtest.AllTypes()
	defer src.Release()
	widened := map[string]arrow.DataType{
		"u8": arrow.PrimitiveTypes.Int16, "u16": arrow.PrimitiveTypes.Int32, "u32": arrow.PrimitiveTypes.Int64,
		"u64": &arrow.Decimal128Type{Precision: 20, Scale: 0},
	}
	for c := 0; c < int(src.NumCols()); c++ {
		name := want.Field(c).Name
		wantType := want.Field(c).Type
		if w, ok := widened[name]; ok {
			wantType = w
		}
		if got := b.Schema().Field(c).Type; !arrow.TypeEqual(got, wantType) {
			t.Errorf("column %s: type %s, want %s", name, got, wantType)
		}
		for r := 0; r < 2; r++ {
			if got, exp := b.Column(c).ValueStr(r), src.Column(c).ValueStr(r); got != exp {
				t.Errorf("column %s row %d: %q, want %q", name, r, got, exp)
			}
		}
	}
	if _, err := rows.Next(context.Background()); err != io.EOF {
		t.Fatal(err)
	}
}
