package trinohttp

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/query"
)

// countingEngine answers every statement at once with one batch of the integers 1..n.
func countingEngine(n int32) frontendtest.FuncEngine {
	return func(context.Context, *query.Request) (query.Rows, error) {
		schema := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int32}}, nil)
		b := array.NewInt32Builder(memory.DefaultAllocator)
		defer b.Release()
		for i := int32(1); i <= n; i++ {
			b.Append(i)
		}
		col := b.NewArray()
		defer col.Release()
		return frontendtest.NewRecordRows(schema, "SELECT "+fmt.Sprint(n), array.NewRecordBatch(schema, []arrow.Array{col}, int64(n))), nil
	}
}

// A query that has told its client everything (its last page served) is held for a retry of
// that page, and then forgotten: for a minute at most, and never longer than AbandonAfter, the
// longest any query is held unpolled. A retry of the last page starts that time again.
func TestFinishedQueryHeldForARetryOfItsLastPage(t *testing.T) {
	const abandonAfter = 30 * time.Second
	ts := startServer(t, frontendtest.NewBackend(countingEngine(1)), Options{AbandonAfter: abandonAfter})
	_, qr := post(t, ts.addr, "SELECT 1")
	last := qr.NextURI
	for qr.NextURI != "" {
		last = qr.NextURI
		_, qr = get(t, last)
	}
	if qr.Stats.State != stateFinished {
		t.Fatalf("last page %+v", qr)
	}
	ts.reapOnce(time.Now().Add(abandonAfter / 2))
	resp, again := get(t, last)
	if resp.StatusCode != http.StatusOK || again.ID != qr.ID || fmt.Sprint(again.Data) != fmt.Sprint(qr.Data) || again.Stats.State != stateFinished {
		t.Fatalf("a retry of the last page %s later: %s %+v", abandonAfter/2, resp.Status, again)
	}
	ts.reapOnce(time.Now().Add(abandonAfter + time.Second))
	if resp, _ := get(t, last); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the last page, retried past AbandonAfter (%s): %s, want 404: the query is still held", abandonAfter, resp.Status)
	}
}

// DELETE /v1/query/{id} of a query whose rows were all produced, though not all read, changes
// nothing, as for a query Trino has finished: its client reads the rest, polling as slowly as
// AbandonAfter allows.
func TestKillAfterTheLastRowLetsTheClientReadOn(t *testing.T) {
	ts := startServer(t, frontendtest.NewBackend(countingEngine(3)), Options{PageRows: 1})
	_, qr := post(t, ts.addr, "SELECT 3")
	var data [][]any
	for len(data) == 0 && qr.NextURI != "" {
		_, qr = get(t, qr.NextURI)
		data = append(data, qr.Data...)
	}
	waitProduced(t, ts.Server, qr.ID)
	req, _ := http.NewRequest(http.MethodDelete, "http://"+ts.addr+"/v1/query/"+qr.ID, nil)
	req.Header.Set("X-Trino-User", "carol")
	if resp, _ := do(t, req); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE /v1/query/%s: %s", qr.ID, resp.Status)
	}
	ts.reapOnce(time.Now().Add(2 * time.Minute)) // a slow client's next poll, within the default 5 minutes
	for qr.NextURI != "" {
		var resp *http.Response
		if resp, qr = get(t, qr.NextURI); resp.StatusCode != http.StatusOK {
			t.Fatalf("a poll after the kill: %s (rows so far %v)", resp.Status, data)
		}
		data = append(data, qr.Data...)
	}
	if fmt.Sprint(data) != "[[1] [2] [3]]" || qr.Error != nil || qr.Stats.State != stateFinished {
		t.Fatalf("rows %v, last page %+v", data, qr)
	}
}

// waitProduced waits until the held query id has produced its last row.
func waitProduced(t *testing.T, s *Server, id string) {
	t.Helper()
	s.mu.Lock()
	q := s.queries[id]
	s.mu.Unlock()
	if q == nil {
		t.Fatalf("query %s is not held", id)
	}
	for {
		q.mu.Lock()
		done, changed := q.done, q.changedLocked()
		q.mu.Unlock()
		if done {
			return
		}
		<-changed
	}
}

// A poll for a page other than the last one served or the next gets Trino's answer: 410 Gone
// for a page already passed, 404 for one ahead of the next or past the last page.
func TestPollsOfOtherPagesAnswerAsTrino(t *testing.T) {
	ts := startServer(t, frontendtest.NewBackend(countingEngine(3)), Options{PageRows: 1})
	_, qr := post(t, ts.addr, "SELECT 3")
	prefix := qr.NextURI[:strings.LastIndexByte(qr.NextURI, '/')+1]
	page := func(token int) string { return prefix + strconv.Itoa(token) } // the query's page token
	get(t, page(1))
	if resp, _ := get(t, page(2)); resp.StatusCode != http.StatusOK {
		t.Fatalf("page 2: %s", resp.Status)
	}
	for token, want := range map[int]int{1: http.StatusGone, 0: http.StatusGone, 4: http.StatusNotFound, 9: http.StatusNotFound} {
		if resp, _ := get(t, page(token)); resp.StatusCode != want {
			t.Errorf("page %d after page 2: %s, want %d", token, resp.Status, want)
		}
	}
	last := 2
	for qr.NextURI != "" {
		last++
		_, qr = get(t, page(last))
	}
	if resp, again := get(t, page(last)); resp.StatusCode != http.StatusOK || again.Stats.State != stateFinished {
		t.Fatalf("a retry of the last page %d: %s %+v", last, resp.Status, again)
	}
	if resp, _ := get(t, page(last+1)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("page %d, past the last page: %s, want 404", last+1, resp.Status)
	}
}
