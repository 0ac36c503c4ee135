package trinohttp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/query"
)

// The frontend's own work for SELECT 1, without sockets or an engine: the POST and the GET of
// its nextUri served by the handler in process, over an engine answering one row at once. Its
// allocations per query do not depend on the machine's load.
//
//	go test -run '^$' -bench Select1Handler -benchmem ./internal/frontend/trinohttp/
func BenchmarkSelect1Handler(b *testing.B) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "_col0", Type: arrow.PrimitiveTypes.Int32}}, nil)
	bld := array.NewInt32Builder(memory.DefaultAllocator)
	bld.Append(1)
	col := bld.NewArray()
	batch := array.NewRecordBatch(schema, []arrow.Array{col}, 1)
	eng := frontendtest.FuncEngine(func(context.Context, *query.Request) (query.Rows, error) {
		return frontendtest.NewRecordRows(schema, "SELECT 1", batch), nil
	})
	s, err := NewServer(frontendtest.NewBackend(eng), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "http://bench/v1/statement", strings.NewReader("SELECT 1"))
		req.Header.Set("X-Trino-User", "bench")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		body := w.Body.String()
		i := strings.Index(body, `"nextUri":"`)
		if i < 0 {
			b.Fatalf("POST answered %s", body)
		}
		next := body[i+len(`"nextUri":"`):]
		next = next[:strings.IndexByte(next, '"')]
		w = httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, next, nil))
		if !strings.Contains(w.Body.String(), `"data":[[1]]`) {
			b.Fatalf("GET answered %s", w.Body.String())
		}
	}
}
