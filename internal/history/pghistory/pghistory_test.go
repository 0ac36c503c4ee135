package pghistory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/history/historytest"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/migrations/migratedtest"
	"github.com/queryflux/queryflux/node/env"
)

func newStore(t testing.TB) (*Store, *pgxpool.Pool) {
	t.Helper()
	pool, _ := migratedtest.NewPool(t)
	return New(pool), pool
}

func TestStoreContract(t *testing.T) {
	s, _ := newStore(t)
	historytest.StoreContract(t, s)
}

func TestPruneContract(t *testing.T) {
	s, _ := newStore(t)
	historytest.PruneContract(t, s)
}

func batch(worker string, from, n int) []history.Record {
	recs := make([]history.Record, n)
	for i := range recs {
		at := historytest.Epoch.Add(time.Duration(from+i) * time.Millisecond)
		recs[i] = history.Record{
			QueryID: fmt.Sprintf("%s-q%07d", worker, from+i), Worker: worker, User: "alice", Protocol: "postgres",
			Group: "adhoc", Cluster: "pg-1", SQL: "select * from t where id = ?", SQLDigest: "0123456789abcdef",
			Status: history.StatusSucceeded, QueueMs: 1, ExecMs: 12, Rows: 10, Bytes: 1024,
			RoutingTrace: []string{"rule: default", "group: adhoc"}, StartedAt: at, EndedAt: at.Add(12 * time.Millisecond),
		}
	}
	return recs
}

// TestSameBatchTwiceStoresEachRecordOnce is the ingest's idempotency against the real database,
// through the Ingest handler's store path.
func TestSameBatchTwiceStoresEachRecordOnce(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	b := batch("w1", 0, 700)
	b = append(b, b[3]) // a duplicate inside one batch, too
	for attempt, want := range []int{700, 0} {
		n, err := s.Insert(ctx, b)
		if err != nil || n != want {
			t.Fatalf("attempt %d: inserted %d, %v; want %d", attempt, n, err, want)
		}
	}
	var total, distinct int
	if err := pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT query_id) FROM query_records").Scan(&total, &distinct); err != nil {
		t.Fatal(err)
	}
	if total != 700 || distinct != 700 {
		t.Fatalf("table holds %d rows (%d distinct), want each of 700 once", total, distinct)
	}
}

func TestOddTextSurvives(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	r := batch("w1", 0, 1)[0]
	r.SQL, r.Error, r.RoutingTrace = "select 'é\x00ü'", "bad \"x\"", nil
	if _, err := s.Insert(ctx, []history.Record{r}); err != nil {
		t.Fatal(err)
	}
	p, err := s.Query(ctx, history.Filter{})
	if err != nil || len(p.Records) != 1 || p.Records[0].SQL != "select 'é\u2400ü'" || p.Records[0].RoutingTrace != nil {
		t.Fatalf("got %+v, %v", p.Records, err)
	}
}

// TestANodesOwnNULsAreNotMerged: a standalone node on PostgreSQL files the queries of the users
// "a\x00b", "ab" and "a␀0b" (a Flight SQL basic-auth user may hold a NUL) under three names,
// its free text's NULs shown as ␀; a record handed to the store with a NUL in a key is refused
// by its id, nothing of its batch stored, never filed under the name without the NUL.
func TestANodesOwnNULsAreNotMerged(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	e := env.Real(slog.New(slog.DiscardHandler))
	u := history.NewStoreUplink(e, history.UplinkConfig{Worker: "standalone", Policy: redact.None}, s)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	users := []string{"a\x00b", "ab", "a\u24000b"}
	for i, user := range users {
		u.Add(history.Record{QueryID: fmt.Sprintf("q-%d", i), User: user, Protocol: "flightsql", Status: history.StatusFailed,
			SQL: "select '\x00'", Error: "bad \x00", RoutingTrace: []string{"rule \x00"}, StartedAt: at, EndedAt: at})
	}
	if err := u.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for i, user := range users {
		p, err := s.Query(ctx, history.Filter{User: history.EscapeKeyNUL(user)})
		if err != nil || len(p.Records) != 1 {
			t.Fatalf("the user %q: %+v, %v; want its one record", user, p.Records, err)
		}
		r := p.Records[0]
		if r.QueryID != fmt.Sprintf("q-%d", i) || r.SQL != "select '\u2400'" || r.Error != "bad \u2400" || r.RoutingTrace[0] != "rule \u2400" {
			t.Fatalf("the user %q's record stored as %+v", user, r)
		}
		if other, ok := seen[r.User]; ok {
			t.Fatalf("%q and %q both filed as %q", other, user, r.User)
		}
		seen[r.User] = user
	}
	bad := batch("w1", 10, 2)
	bad[1].User = "a\x00b"
	if n, err := s.Insert(ctx, bad); !errors.Is(err, history.ErrKeyNUL) || n != 0 || !strings.Contains(err.Error(), bad[1].QueryID) {
		t.Fatalf("a record with a NUL in its user: inserted %d, %v; want ErrKeyNUL naming %s", n, err, bad[1].QueryID)
	}
	if p, _ := s.Query(ctx, history.Filter{User: "ab"}); len(p.Records) != 1 {
		t.Fatalf("the user ab holds %+v, want only its own record", p.Records)
	}
}

// BenchmarkIngest measures records/s into Postgres, one Insert per batch of 500 or 1000 records
// (what the ingest handler does per worker batch), into a table that already holds the earlier
// iterations' rows and all of its indexes.
func BenchmarkIngest(b *testing.B) {
	for _, size := range []int{500, 1000} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			s, _ := newStore(b)
			ctx := context.Background()
			batches := make([][]history.Record, b.N)
			for i := range batches {
				batches[i] = batch("w1", i*size, size)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Insert(ctx, batches[i]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkIngestParallel is BenchmarkIngest with four batches in flight at once, as when
// several workers flush together (the control plane serves each request on its own goroutine).
func BenchmarkIngestParallel(b *testing.B) {
	const size = 1000
	s, _ := newStore(b)
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism(2) // 2 x GOMAXPROCS(2) = 4 concurrent inserts
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(next.Add(1))
			if _, err := s.Insert(ctx, batch("w1", i*size, size)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkIngestHandler is the whole control-plane path for worker batches of 1000 records:
// POST /worker/history body -> strict decode and validation -> stamp -> Postgres insert, one
// batch at a time (seq) and four in flight (parallel, several workers flushing at once).
func BenchmarkIngestHandler(b *testing.B) {
	const size = 1000
	for _, par := range []int{0, 2} {
		name := "seq"
		if par > 0 {
			name = "parallel"
		}
		b.Run(name, func(b *testing.B) {
			s, _ := newStore(b)
			h := history.NewIngest(s, func(*http.Request) (string, error) { return "w1", nil }, nil)
			bodies := make([][]byte, b.N)
			for i := range bodies {
				bodies[i] = history.EncodeBatch(&history.QueryRecordBatchV1{BatchID: fmt.Sprint(i), Records: batch("w1", i*size, size)})
			}
			post := func(body []byte) {
				req := httptest.NewRequest(http.MethodPost, history.PathWorkerHistory, bytes.NewReader(body))
				req.Header.Set("Content-Type", history.MediaQueryRecords)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Errorf("%d %s", rec.Code, rec.Body)
				}
			}
			b.ResetTimer()
			if par == 0 {
				for i := 0; i < b.N; i++ {
					post(bodies[i])
				}
			} else {
				var next atomic.Int64
				b.SetParallelism(par)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						post(bodies[next.Add(1)-1])
					}
				})
			}
			b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
