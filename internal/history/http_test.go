package history_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/history/historytest"
	"github.com/queryflux/queryflux/node/workerapi"
)

func validBatchJSON(ids ...string) string {
	var recs []string
	for _, id := range ids {
		recs = append(recs, fmt.Sprintf(`{"queryId":%q,"worker":"liar","user":"u","protocol":"postgres","group":"g","cluster":"c","status":"succeeded","queueMs":1,"execMs":2,"rows":3,"bytes":4,"cacheHit":false,"startedAt":"2026-01-01T00:00:00.123456789Z","endedAt":"2026-01-01T00:00:01Z"}`, id))
	}
	return `{"batchId":"b1","worker":"w","records":[` + strings.Join(recs, ",") + `]}`
}

func post(h http.Handler, body, contentType, token string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, history.PathWorkerHistory, strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	if token != "" {
		workerapi.SetBearer(req, token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func resolver(r *http.Request) (string, error) {
	if tok, _ := workerapi.BearerToken(r); tok == "tok-a" {
		return "worker-a", nil
	}
	return "", errors.New("unknown session")
}

func TestIngestStampsWorkerAndIsIdempotent(t *testing.T) {
	store := history.NewMemory(100)
	h := history.NewIngest(store, resolver, nil)
	body := validBatchJSON("q1", "q2", "q1")
	for attempt, wantInserted := range []int{2, 0} {
		rec := post(h, body, history.MediaQueryRecords, "tok-a")
		if rec.Code != http.StatusOK {
			t.Fatalf("attempt %d: %d %s", attempt, rec.Code, rec.Body)
		}
		var ack history.IngestAck
		if err := json.Unmarshal(rec.Body.Bytes(), &ack); err != nil || ack.Accepted != 3 || ack.Inserted != wantInserted || ack.Duplicates != 3-wantInserted {
			t.Fatalf("attempt %d: ack %+v (%v)", attempt, ack, err)
		}
	}
	page, _ := store.Query(context.Background(), history.Filter{})
	if len(page.Records) != 2 || page.Records[0].Worker != "worker-a" {
		t.Fatalf("stored %+v", page.Records)
	}
	if got := page.Records[0].StartedAt; got.Nanosecond() != 123456000 || got.Location() != time.UTC {
		t.Fatalf("StartedAt %v not canonical (UTC, microseconds)", got)
	}
}

func TestIngestRejections(t *testing.T) {
	h := history.NewIngest(history.NewMemory(10), resolver, nil)
	cases := []struct {
		name, body, ctype, token string
		code                     int
		field                    string
	}{
		{"no session", validBatchJSON("q1"), history.MediaQueryRecords, "", 401, "Authorization"},
		{"wrong media type", validBatchJSON("q1"), "application/json", "tok-a", 415, "Content-Type"},
		{"unknown top field", `{"batchId":"b","records":[],"extra":1}`, history.MediaQueryRecords, "tok-a", 400, "extra"},
		{"missing batch id", `{"records":[]}`, history.MediaQueryRecords, "tok-a", 400, "batchId"},
		{"missing records", `{"batchId":"b"}`, history.MediaQueryRecords, "tok-a", 400, "records"},
		{"unknown record field", strings.Replace(validBatchJSON("q1", "q2"), `"rows":3`, `"rows":3,"colour":1`, 2), history.MediaQueryRecords, "tok-a", 400, "records[0].colour"},
		{"wrong type", strings.Replace(validBatchJSON("q1"), `"rows":3`, `"rows":"many"`, 1), history.MediaQueryRecords, "tok-a", 400, "records[0].rows"},
		{"bad status", strings.Replace(validBatchJSON("q1", "q2"), `"status":"succeeded"`, `"status":"meh"`, 2), history.MediaQueryRecords, "tok-a", 400, "records[0].status"},
		{"bad time", strings.Replace(validBatchJSON("q1"), `"endedAt":"2026-01-01T00:00:01Z"`, `"endedAt":"yesterday"`, 1), history.MediaQueryRecords, "tok-a", 400, "records[0].endedAt"},
		{"missing query id", strings.Replace(validBatchJSON("q1"), `"queryId":"q1",`, ``, 1), history.MediaQueryRecords, "tok-a", 400, "records[0].queryId"},
		{"trailing data", validBatchJSON("q1") + "{}", history.MediaQueryRecords, "tok-a", 400, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := post(h, c.body, c.ctype, c.token)
			var body workerapi.ErrorBody
			_ = json.Unmarshal(rec.Body.Bytes(), &body)
			if rec.Code != c.code || body.Field != c.field {
				t.Fatalf("got %d field %q (%s), want %d field %q", rec.Code, body.Field, body.Error, c.code, c.field)
			}
		})
	}
}

type failingStore struct{ history.Store }

func (failingStore) Insert(context.Context, []history.Record) (int, error) {
	return 0, errors.New("db down")
}

func TestIngestStoreFailureIsRetryable(t *testing.T) {
	rec := post(history.NewIngest(failingStore{}, resolver, nil), validBatchJSON("q1"), history.MediaQueryRecords, "tok-a")
	if rec.Code != http.StatusServiceUnavailable || strings.Contains(rec.Body.String(), "db down") {
		t.Fatalf("got %d %s", rec.Code, rec.Body)
	}
}

func TestMemoryStoreContract(t *testing.T) { historytest.StoreContract(t, history.NewMemory(1000)) }

func TestMemoryIsBounded(t *testing.T) {
	m := history.NewMemory(10)
	historytest.Seed(t, m, 25)
	p, _ := m.Query(context.Background(), history.Filter{})
	if m.Len() != 10 || len(p.Records) != 10 || p.Records[len(p.Records)-2].QueryID != "q016" || p.Records[len(p.Records)-1].QueryID != "q005b" {
		t.Fatalf("bounded store kept %d: %v", m.Len(), p.Records)
	}
}

func TestAdminHandler(t *testing.T) {
	m := history.NewMemory(100)
	historytest.Seed(t, m, 30)
	h := history.NewAdmin(m)
	get := func(q string) (*httptest.ResponseRecorder, history.Page) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, history.PathAdminQueries+"?"+q, nil))
		var p history.Page
		_ = json.Unmarshal(rec.Body.Bytes(), &p)
		return rec, p
	}
	rec, p := get("worker=w1&limit=3")
	if rec.Code != 200 || len(p.Records) != 3 || p.Records[0].QueryID != "q029" || p.Next == "" {
		t.Fatalf("got %d %s", rec.Code, rec.Body)
	}
	_, p2 := get("worker=w1&limit=3&before=" + url.QueryEscape(p.Next))
	if p2.Records[0].QueryID != "q023" {
		t.Fatalf("second page starts at %s", p2.Records[0].QueryID)
	}
	for q, field := range map[string]string{"limit=0": "limit", "limit=x": "limit", "since=yesterday": "since", "status=meh": "status", "colour=red": "colour", "before=@@": "before", "user=a&user=b": "user"} {
		rec, _ := get(q)
		var body workerapi.ErrorBody
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		if rec.Code != 400 || body.Field != field {
			t.Errorf("%s: got %d field %q, want 400 %q", q, rec.Code, body.Field, field)
		}
	}
	f := history.Filter{Worker: "w", User: "u", Group: "g", Cluster: "c", Status: history.StatusRejected, Since: historytest.Epoch, Until: historytest.Epoch.Add(time.Hour), Limit: 5, Before: history.CursorOf(history.Record{QueryID: "x", StartedAt: historytest.Epoch}).Encode()}
	back, err := history.FilterFromQuery(f.Values())
	if err != nil || back.Worker != f.Worker || !back.Since.Equal(f.Since) || !back.Until.Equal(f.Until) || back.Limit != 5 || back.Before != f.Before || back.Status != f.Status {
		t.Fatalf("history.Filter.Values round trip: %+v, %v", back, err)
	}
}

func TestMemoryPruneContract(t *testing.T) { historytest.PruneContract(t, history.NewMemory(1000)) }
