package history_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/history"
)

// nulRecord is a record of validBatchJSON's with field set to value (JSON-escaped).
func nulRecord(id, field, value string) string {
	rec := map[string]any{"queryId": id, "user": "u", "protocol": "postgres", "group": "g", "cluster": "c",
		"status": "succeeded", "startedAt": "2026-01-01T00:00:00Z", "endedAt": "2026-01-01T00:00:01Z"}
	if field != "" {
		rec[field] = value
	}
	if field == "routingTrace" {
		rec[field] = []string{value}
	}
	data, _ := json.Marshal(rec)
	return string(data)
}

// TestIngestRefusesANULInAKeyByName: a worker's records whose query id or a name holds a NUL
// byte are refused each by index and field, counted, and the rest of their batch is stored: a
// store that dropped the NUL would take "q-1\x00" for the worker's own "q-1" (a duplicate,
// silently not stored) or for another worker's, and PostgreSQL cannot store it at all. A NUL
// in free text (the statement) is the store's to keep or drop, the record stored.
func TestIngestRefusesANULInAKeyByName(t *testing.T) {
	store := history.NewMemory(100)
	counted := map[string]int{}
	h := history.NewIngest(store, resolver, nil).OnRefused(func(reason string, n int) { counted[reason] += n }).
		Gate(func(string) func(*history.Record) error {
			return func(r *history.Record) error {
				if r.Cluster == "not-given" {
					return history.ErrNotGiven
				}
				return nil
			}
		})
	if rec := post(h, validBatchJSON("q-1"), history.MediaQueryRecords, "tok-a"); rec.Code != 200 {
		t.Fatalf("the first batch: %d %s", rec.Code, rec.Body)
	}
	keys := []struct{ field, value string }{
		{"queryId", "q-1\x00"}, {"user", "u\x00"}, {"protocol", "post\x00gres"}, {"group", "\x00g"}, {"cluster", "c\x00"},
	}
	recs := []string{nulRecord("q-ok", "", "")}
	for i, k := range keys {
		id := fmt.Sprintf("q-nul-%d", i)
		if k.field == "queryId" {
			id = k.value
		}
		recs = append(recs, nulRecord(id, k.field, k.value))
	}
	recs = append(recs, nulRecord("q-not-given", "cluster", "not-given"), nulRecord("q-sql", "sql", "select '\x00'"))
	rec := post(h, `{"batchId":"b2","records":[`+strings.Join(recs, ",")+`]}`, history.MediaQueryRecords, "tok-a")
	var ack history.IngestAck
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &ack) != nil {
		t.Fatalf("a batch with NULs in its keys: %d %s, want 200 with the others stored", rec.Code, rec.Body)
	}
	if ack.Accepted != len(recs) || ack.Inserted != 2 || ack.Refused != len(keys)+1 || ack.Duplicates != 0 || len(ack.RefusedRecords) != len(keys)+1 {
		t.Fatalf("ack %+v: want q-ok and q-sql stored, the %d NUL records and q-not-given refused, no duplicate", ack, len(keys))
	}
	for i, k := range keys {
		rr := ack.RefusedRecords[i]
		if want := fmt.Sprintf("records[%d].%s:", i+1, k.field); rr.Index != i+1 || !strings.HasPrefix(rr.Error, want) || !strings.Contains(rr.Error, "NUL") {
			t.Errorf("the record with a NUL in its %s: refused as %+v, want index %d and an error starting %q naming the NUL", k.field, rr, i+1, want)
		}
	}
	if rr := ack.RefusedRecords[len(keys)]; rr.QueryID != "q-not-given" || rr.Index != len(keys)+1 {
		t.Errorf("the record the gate refuses: %+v", rr)
	}
	if counted[history.RefusedNUL] != len(keys) || counted[history.RefusedNotGiven] != 1 || len(counted) != 2 {
		t.Errorf("counted %v, want %d %s and 1 %s", counted, len(keys), history.RefusedNUL, history.RefusedNotGiven)
	}
	page, err := store.Query(t.Context(), history.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range page.Records {
		ids = append(ids, r.QueryID)
	}
	if slices.Sort(ids); strings.Join(ids, ",") != "q-1,q-ok,q-sql" {
		t.Fatalf("stored %q, want q-1, q-ok and q-sql", ids)
	}
}

// TestAdminRefusesANameNoRecordCanHold: an admin's filter on a name with a NUL byte or that is
// not UTF-8 (PostgreSQL refuses to compare either: a 503 that retrying never ends), or a cursor
// whose query id holds a NUL, is refused 400 naming the parameter before the store is asked.
func TestAdminRefusesANameNoRecordCanHold(t *testing.T) {
	nulCursor := base64.RawURLEncoding.EncodeToString([]byte("1767225600000000:q\x00"))
	for _, q := range []string{"user=a%00b", "worker=%00", "group=g%00", "cluster=%ff", "user=%c3", "before=" + nulCursor} {
		rec := httptest.NewRecorder()
		history.NewAdmin(failingQueries{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, history.PathAdminQueries+"?"+q, nil))
		param, _, _ := strings.Cut(q, "=")
		if body := errorOf(t, rec); rec.Code != 400 || body.Field != param {
			t.Errorf("?%s: %d %+v, want 400 naming %q", q, rec.Code, body, param)
		}
	}
	rec := httptest.NewRecorder()
	history.NewAdmin(history.NewMemory(1)).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, history.PathAdminQueries+"?user=%C3%A9", nil))
	if rec.Code != 200 {
		t.Fatalf("a UTF-8 name: %d %s", rec.Code, rec.Body)
	}
}
