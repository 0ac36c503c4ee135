package history_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/history/historytest"
	"github.com/queryflux/queryflux/node/workerapi"
)

// errorOf decodes an error answer.
func errorOf(t *testing.T, rec *httptest.ResponseRecorder) workerapi.ErrorBody {
	t.Helper()
	var body workerapi.ErrorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("answer %d is no error body: %q", rec.Code, rec.Body)
	}
	return body
}

// A worker is the one party that writes history, so the batch bounds are what keep one that
// misbehaves from filling the control plane: each bound holds at its exact value.
func TestIngestBatchBounds(t *testing.T) {
	h := history.NewIngest(history.NewMemory(history.BatchRecordsMax+1), resolver, nil)
	ids := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = "q" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + time.Duration(i).String()
		}
		return out
	}
	padded := func(body string, size int) string { return body + strings.Repeat(" ", size-len(body)) }
	id64 := strings.Repeat("i", history.BatchIDLenMax)
	cases := []struct {
		name, body string
		code       int
		field, msg string
	}{
		{"body at the bound", padded(validBatchJSON("q1"), history.BatchBytesMax), 200, "", ""},
		{"body over the bound", padded(validBatchJSON("q1"), history.BatchBytesMax+1), 400, "", "body larger than"},
		{"batch id at the bound", strings.Replace(validBatchJSON("q1"), `"b1"`, `"`+id64+`"`, 1), 200, "", ""},
		{"batch id over the bound", strings.Replace(validBatchJSON("q1"), `"b1"`, `"`+id64+`x"`, 1), 400, "batchId", "longer than"},
		{"records at the bound", validBatchJSON(ids(history.BatchRecordsMax)...), 200, "", ""},
		{"records over the bound", validBatchJSON(ids(history.BatchRecordsMax + 1)...), 400, "records", "more than"},
		{"a body that is no object", `[]`, 400, "", "must be a JSON object"},
		{"a record that is no object", `{"batchId":"b","records":[{"queryId":"q"},[1]]}`, 400, "records[1]", "must be a JSON object"},
		{"malformed JSON", `{"batchId":"b",,"records":[]}`, 400, "", "malformed JSON at byte"},
		{"a cut body", `{"batchId":"b","records":[`, 400, "", "malformed JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := post(h, c.body, history.MediaQueryRecords, "tok-a")
			if rec.Code != c.code {
				t.Fatalf("got %d %.200s, want %d", rec.Code, rec.Body, c.code)
			}
			if c.code == 200 {
				return
			}
			if body := errorOf(t, rec); body.Field != c.field || !strings.Contains(body.Error, c.msg) {
				t.Fatalf("got field %q %q, want field %q and %q", body.Field, body.Error, c.field, c.msg)
			}
		})
	}
	// DecodeBatch holds the byte bound on its own too: it is not only the handler's.
	if _, err := history.DecodeBatch([]byte(padded(validBatchJSON("q1"), history.BatchBytesMax+1))); err == nil || !strings.Contains(err.Error(), "body larger than") {
		t.Fatalf("DecodeBatch over the bound: %v", err)
	}
}

func TestIngestRefusesWhatIsNotAWorkersPost(t *testing.T) {
	store := history.NewMemory(10)
	either := func(worker string, err error) history.WorkerResolver {
		return func(*http.Request) (string, error) { return worker, err }
	}
	for name, resolve := range map[string]history.WorkerResolver{
		"no worker and no error":    either("", nil),
		"a worker and an error too": either("w", errors.New("expired")),
	} {
		if rec := post(history.NewIngest(store, resolve, nil), validBatchJSON("q1"), history.MediaQueryRecords, "tok-a"); rec.Code != 401 {
			t.Errorf("%s: got %d, want 401", name, rec.Code)
		}
	}
	rec := httptest.NewRecorder()
	history.NewIngest(store, resolver, nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, history.PathWorkerHistory, nil))
	if rec.Code != 405 || rec.Header().Get("Allow") != http.MethodPost {
		t.Fatalf("GET: got %d Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
	if n := store.Len(); n != 0 {
		t.Fatalf("refused posts stored %d records", n)
	}
	rec = post(history.NewIngest(failingStore{}, resolver, nil), validBatchJSON("q1"), history.MediaQueryRecords, "tok-a")
	if rec.Header().Get("Retry-After") == "" {
		t.Fatalf("a store failure's 503 has no Retry-After: %v", rec.Header())
	}
	for _, build := range []func(){
		func() { history.NewIngest(nil, resolver, nil) },
		func() { history.NewIngest(store, nil, nil) },
		func() { history.NewAdmin(nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("a handler without its store or resolver was built")
				}
			}()
			build()
		}()
	}
}

type failingQueries struct{ history.Store }

func (failingQueries) Query(context.Context, history.Filter) (history.Page, error) {
	return history.Page{}, errors.New("db down")
}

func TestAdminHandlerEdges(t *testing.T) {
	rec := httptest.NewRecorder()
	history.NewAdmin(history.NewMemory(1)).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, history.PathAdminQueries, nil))
	if rec.Code != 405 || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Fatalf("POST: got %d Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		rec = httptest.NewRecorder()
		history.NewAdmin(history.NewMemory(1)).ServeHTTP(rec, httptest.NewRequest(method, history.PathAdminQueries, nil))
		if rec.Code != 200 {
			t.Fatalf("%s: got %d", method, rec.Code)
		}
	}
	rec = httptest.NewRecorder()
	history.NewAdmin(failingQueries{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, history.PathAdminQueries, nil))
	if rec.Code != 503 || strings.Contains(rec.Body.String(), "db down") {
		t.Fatalf("a failing store: got %d %s", rec.Code, rec.Body)
	}
}

func TestFilterFromQueryBounds(t *testing.T) {
	for q, ok := range map[string]bool{
		"limit=1": true, "limit=1000": true, "limit=1001": false, "limit=0": false, "limit=-1": false,
		"until=2026-01-02T15:04:05Z": true, "until=tomorrow": false, "since=2026-01-02T15:04:05.5%2B02:00": true,
		// Parameters are checked in name order, so the first wrong one is named whatever the order.
		"zzz=1&aaa=1": false,
	} {
		f, err := history.FilterFromQuery(mustQuery(t, q))
		if (err == nil) != ok {
			t.Errorf("%s: %+v, %v", q, f, err)
		}
	}
	var fe *workerapi.FieldError
	if _, err := history.FilterFromQuery(mustQuery(t, "zzz=1&aaa=1")); !errors.As(err, &fe) || fe.Field != "aaa" {
		t.Fatalf("two unknown parameters: %v", err)
	}
	if q := (history.Filter{}).Values(); len(q) != 0 {
		t.Fatalf("the zero filter as parameters: %v", q)
	}
	f := history.Filter{Worker: "w", User: "u", Group: "g", Cluster: "c", Status: history.StatusFailed,
		Since: historytest.Epoch, Until: historytest.Epoch.Add(time.Hour), Limit: 7}
	back, err := history.FilterFromQuery(f.Values())
	if err != nil || back.User != "u" || back.Group != "g" || back.Cluster != "c" || back.Worker != "w" || back.Limit != 7 {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}

func mustQuery(t *testing.T, q string) map[string][]string {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/?"+q, nil)
	return req.URL.Query()
}

// The uplink's sender treats every answer but a whole acknowledgment as a failure, so that the
// batch is sent again and nothing is lost.
func TestHTTPSenderFailsOnAnythingButAWholeAck(t *testing.T) {
	batch := &history.QueryRecordBatchV1{BatchID: "b", Records: []history.Record{{QueryID: "q1"}, {QueryID: "q2"}}}
	answer := func(code int, body string) history.SendFunc {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer tok" || r.Header.Get("Content-Type") != history.MediaQueryRecords {
				http.Error(w, "bad request headers", 400)
				return
			}
			w.WriteHeader(code)
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return history.NewHTTPSender(srv.Client(), srv.URL+"/", func() string { return "tok" }, time.Now)
	}
	if err := answer(200, `{"batchId":"b","accepted":2,"inserted":2}`)(context.Background(), batch); err != nil {
		t.Fatalf("a whole ack: %v", err)
	}
	var se *workerapi.StatusError
	if err := answer(401, `{"error":"expired"}`)(context.Background(), batch); !errors.As(err, &se) || se.Status != 401 {
		t.Fatalf("401: %v", err)
	}
	for name, send := range map[string]history.SendFunc{
		"a partial ack":          answer(200, `{"batchId":"b","accepted":1}`),
		"an ack that is no JSON": answer(200, `accepted`),
		"no server":              history.NewHTTPSender(http.DefaultClient, "http://127.0.0.1:1", func() string { return "tok" }, time.Now),
		"a bad address":          history.NewHTTPSender(http.DefaultClient, "http://bad host", func() string { return "tok" }, time.Now),
	} {
		if err := send(context.Background(), batch); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// A standalone node keeps its own history: a store that fails must fail the send, so the uplink
// keeps the batch.
func TestLocalSenderReportsAStoreFailure(t *testing.T) {
	batch := &history.QueryRecordBatchV1{BatchID: "b", Records: []history.Record{{QueryID: "q1"}}}
	if err := history.NewLocalSender(failingStore{})(context.Background(), batch); err == nil {
		t.Fatal("a failed insert was reported sent")
	}
}
