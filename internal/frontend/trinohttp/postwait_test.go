package trinohttp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/query"
)

// pythonAgent is the User-Agent of the Python client, which reads rows from a POST's answer.
const pythonAgent = "Trino Python Client/0.339.0"

// postAs sends a statement by hand with the User-Agent agent and decodes the answer.
func postAs(t *testing.T, addr, agent, sql string) (*http.Response, QueryResults) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/statement", strings.NewReader(sql))
	req.Header.Set("X-Trino-User", "carol")
	req.Header.Set("User-Agent", agent)
	resp, err := postClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var qr QueryResults
	if err := json.NewDecoder(resp.Body).Decode(&qr); err != nil {
		t.Fatalf("%s: %v", resp.Status, err)
	}
	return resp, qr
}

// postClient bounds a POST's wait: one not answered in 10 s (PostWait in these tests is 30 ms
// when a statement is held) fails its test instead of hanging it.
var postClient = &http.Client{Timeout: 10 * time.Second}

// readAll follows qr's nextUri to the end, returning every row given on the way (qr's own
// included) and the last document.
func readAll(t *testing.T, qr QueryResults) ([][]any, QueryResults) {
	t.Helper()
	data := qr.Data
	for qr.NextURI != "" {
		_, qr = get(t, qr.NextURI)
		data = append(data, qr.Data...)
	}
	return data, qr
}

// A statement that ends within PostWait, its result within one page, is answered whole in its
// POST when its client reads a POST's rows: FINISHED, columns and data, no nextUri. The query
// is then forgotten at once: its answer named no nextUri, so nothing can ask for it again (a
// page kept for a retry of its token, up to a minute, was half a SELECT 1's allocation and the
// most of the held queries' heap). Any other client gets QUEUED
// and a nextUri, and its rows from a GET, on net/http's server as on the server's own.
func TestQuickStatementAnsweredInItsPOST(t *testing.T) {
	for _, netHTTP := range []bool{false, true} {
		t.Run(fmt.Sprintf("netHTTP=%v", netHTTP), func(t *testing.T) {
			ts := startServerOn(t, frontendtest.NewBackend(countingEngine(3)), Options{PostWait: 10 * time.Second}, netHTTP)
			resp, qr := postAs(t, ts.addr, pythonAgent, "SELECT 3")
			if resp.StatusCode != http.StatusOK || qr.NextURI != "" || qr.Stats.State != stateFinished || qr.Error != nil ||
				fmt.Sprint(qr.Data) != "[[1] [2] [3]]" || len(qr.Columns) != 1 || qr.Columns[0].Name != "n" || qr.Stats.ProcessedRows != 3 {
				t.Fatalf("the POST of the Python client: %s %+v", resp.Status, qr)
			}
			if polls := ts.polls.Load(); polls != 0 {
				t.Errorf("%d GETs for a statement answered in its POST", polls)
			}
			// Forgotten once its answer went out (off the client's wait): at once, or a moment
			// after the client read it.
			held := func() bool {
				ts.Server.mu.Lock()
				defer ts.Server.mu.Unlock()
				return ts.queries[qr.ID] != nil
			}
			for end := time.Now().Add(5 * time.Second); held() && time.Now().Before(end); {
				time.Sleep(time.Millisecond)
			}
			if held() {
				t.Errorf("the query answered in its POST is held")
			}
			for i := range 3 { // the page's encoding buffer, reused once written, holds each one's own answer
				_, again := postAs(t, ts.addr, pythonAgent, "SELECT 3")
				if again.ID == qr.ID || fmt.Sprint(again.Data) != "[[1] [2] [3]]" || again.InfoURI != "http://"+ts.addr+"/ui/query.html?"+again.ID {
					t.Fatalf("answer %d: %+v", i, again)
				}
			}

			_, qr = postAs(t, ts.addr, "Go-http-client/1.1", "SELECT 3")
			if qr.NextURI == "" || qr.Data != nil || qr.Stats.State == stateFinished {
				t.Fatalf("the POST of a client that drops its rows: %+v", qr)
			}
			if data, last := readAll(t, qr); fmt.Sprint(data) != "[[1] [2] [3]]" || last.Stats.State != stateFinished {
				t.Fatalf("rows %v, last page %+v", data, last)
			}
		})
	}
}

// A statement still running after PostWait has its POST answered QUEUED with a nextUri, about
// PostWait after it was sent, and its rows come from its GETs once it ends; meanwhile a poll is
// answered (the statement holds up neither the POST nor its connection).
func TestSlowStatementAnsweredAfterPostWait(t *testing.T) {
	for _, netHTTP := range []bool{false, true} {
		t.Run(fmt.Sprintf("netHTTP=%v", netHTTP), func(t *testing.T) {
			backend := frontendtest.NewBackend(countingEngine(2))
			waiting, release := backend.Hold()
			defer release()
			const postWait = 30 * time.Millisecond
			ts := startServerOn(t, backend, Options{PostWait: postWait, PollWait: 10 * time.Millisecond}, netHTTP)
			start := time.Now()
			_, qr := postAs(t, ts.addr, pythonAgent, "SELECT 2")
			took := time.Since(start)
			<-waiting
			if qr.NextURI == "" || qr.Data != nil || qr.Stats.State != stateQueued {
				t.Fatalf("the POST of a held statement: %+v", qr)
			}
			if took < postWait {
				t.Errorf("the POST of a held statement was answered after %s, before PostWait (%s)", took, postWait)
			}
			_, next := get(t, qr.NextURI)
			if next.Stats.State != stateQueued || next.NextURI == "" {
				t.Fatalf("a poll while held: %+v", next)
			}
			release()
			if data, last := readAll(t, next); fmt.Sprint(data) != "[[1] [2]]" || last.Stats.State != stateFinished {
				t.Fatalf("rows %v, last page %+v", data, last)
			}
		})
	}
}

// An error within PostWait is the POST's answer: FAILED, Trino's error, no nextUri.
func TestErrorAnsweredInItsPOST(t *testing.T) {
	backend := frontendtest.NewBackend(frontendtest.FuncEngine(func(context.Context, *query.Request) (query.Rows, error) {
		return nil, &query.Error{Code: query.CodeSyntax, Message: "syntax error at or near \"SELEC\""}
	}))
	ts := startServer(t, backend, Options{PostWait: 10 * time.Second})
	_, qr := postAs(t, ts.addr, pythonAgent, "SELEC 1")
	if qr.NextURI != "" || qr.Stats.State != stateFailed || qr.Error == nil || qr.Error.ErrorName != "SYNTAX_ERROR" {
		t.Fatalf("the POST of a failing statement: %+v (error %+v)", qr, qr.Error)
	}
}

// A result of more than one page is not answered in the POST (QUEUED, nextUri): its pages come
// from GETs, every row once.
func TestLongResultNotAnsweredInItsPOST(t *testing.T) {
	ts := startServer(t, frontendtest.NewBackend(countingEngine(5)), Options{PostWait: 10 * time.Second, PageRows: 2})
	_, qr := postAs(t, ts.addr, pythonAgent, "SELECT 5")
	if qr.NextURI == "" || qr.Data != nil {
		t.Fatalf("the POST of a five-row result in pages of two: %+v", qr)
	}
	if data, last := readAll(t, qr); fmt.Sprint(data) != "[[1] [2] [3] [4] [5]]" || last.Stats.State != stateFinished {
		t.Fatalf("rows %v, last page %+v", data, last)
	}
}

// A negative PostWait answers no statement in its POST, whoever the client; PostAnswerClients
// names the clients that are.
func TestPostAnswerOffAndClientsNamed(t *testing.T) {
	off := startServer(t, frontendtest.NewBackend(countingEngine(1)), Options{PostWait: -1})
	if _, qr := postAs(t, off.addr, pythonAgent, "SELECT 1"); qr.NextURI == "" || qr.Data != nil {
		t.Fatalf("PostWait -1: the POST of the Python client: %+v", qr)
	}
	mine := startServer(t, frontendtest.NewBackend(countingEngine(1)), Options{PostAnswerClients: []string{"mine/"}})
	if _, qr := postAs(t, mine.addr, "mine/1", "SELECT 1"); qr.NextURI != "" || fmt.Sprint(qr.Data) != "[[1]]" {
		t.Fatalf("a client of PostAnswerClients: %+v", qr)
	}
	if _, qr := postAs(t, mine.addr, pythonAgent, "SELECT 1"); qr.NextURI == "" || qr.Data != nil {
		t.Fatalf("a client not of PostAnswerClients: %+v", qr)
	}
}

// trino-go-client and the npm trino-client, which drop a POST answer's rows, read every row
// with PostWait on (the default): their statements are answered QUEUED, as ever.
func TestClientsThatDropPOSTRowsReadEveryRow(t *testing.T) {
	ts := startServer(t, frontendtest.NewBackend(countingEngine(3)), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://bob@" + ts.addr})
	rows, err := db.Query("SELECT 3")
	if err != nil {
		t.Fatal(err)
	}
	if got := scanAll(t, rows); fmt.Sprint(got) != "[[1] [2] [3]]" {
		t.Errorf("trino-go-client read %v", got)
	}
	o := runNPM(t, ts.addr, "bob", npmStep{Name: "three", SQL: "SELECT 3"})["three"]
	if o.OK == nil || jsonText(t, o.OK.Rows) != "[[1],[2],[3]]" {
		t.Errorf("the npm trino-client read %+v (error %+v)", o.OK, o.Error)
	}
}

// The Python client reads the rows of a statement answered in its POST, and of one that was
// not (held past PostWait). The client is not in Debian and PyPI is out of reach here: the test
// runs where python3 imports it (PYTHONPATH), and skips elsewhere.
func TestPythonClientReadsRowsFromThePOSTAnswer(t *testing.T) {
	python := frontendtest.PythonWith(t, "trino.dbapi, tzlocal, requests") // what its connect needs
	backend := frontendtest.NewBackend(countingEngine(3))
	ts := startServer(t, backend, Options{PostWait: 30 * time.Millisecond, PollWait: 10 * time.Millisecond})
	host, port, _ := strings.Cut(ts.addr, ":")
	script := `
import sys, trino.dbapi
conn = trino.dbapi.connect(host=sys.argv[1], port=int(sys.argv[2]), user="carol", http_scheme="http")
cur = conn.cursor()
cur.execute("SELECT 3")
print(cur.fetchall())
`
	// A statement with parameters: the client's EXECUTE IMMEDIATE, or PREPARE, EXECUTE and
	// DEALLOCATE, each answered in its POST.
	params := script + `
cur.execute("SELECT ?", [3])
print(cur.fetchall())
`
	out, err := exec.Command(python, "-c", script, host, port).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "[[1], [2], [3]]" {
		t.Fatalf("the Python client on a quick statement: %v\n%s", err, out)
	}
	if polls := ts.polls.Load(); polls != 0 {
		t.Errorf("the Python client sent %d GETs for a statement answered in its POST", polls)
	}
	out, err = exec.Command(python, "-c", params, host, port).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "[[1], [2], [3]]\n[[1], [2], [3]]" {
		t.Fatalf("the Python client with parameters: %v\n%s", err, out)
	}
	if polls := ts.polls.Load(); polls != 0 {
		t.Errorf("the Python client sent %d GETs for statements answered in their POSTs", polls)
	}

	waiting, release := backend.Hold()
	defer release()
	go func() {
		<-waiting
		time.Sleep(100 * time.Millisecond) // past PostWait: the POST is answered QUEUED
		release()
	}()
	out, err = exec.Command(python, "-c", script, host, port).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "[[1], [2], [3]]" {
		t.Fatalf("the Python client on a statement held past PostWait: %v\n%s", err, out)
	}
	if ts.polls.Load() == 0 {
		t.Errorf("the Python client read a statement held past PostWait without a GET")
	}
}

// TestAHeldPageIsItsOwnSize: the page a query keeps for a retry of its token (up to
// lastPageKeptMax, thousands of them on a busy port) is a copy of its own size, not the buffer
// it was encoded in; and the page a retry gets is the one first sent.
func TestAHeldPageIsItsOwnSize(t *testing.T) {
	ts := startServerOn(t, frontendtest.NewBackend(countingEngine(3)), Options{PostWait: 10 * time.Second}, false)
	pages := map[string][]byte{}
	for range 3 { // the encoding buffer is reused from the second on
		_, qr := postAs(t, ts.addr, "Go-http-client/1.1", "SELECT 3")
		_, qr = get(t, qr.NextURI)
		ts.Server.mu.Lock()
		held := ts.queries[qr.ID]
		ts.Server.mu.Unlock()
		if held == nil || qr.NextURI != "" {
			t.Fatalf("the query whose last page was served is not held: %+v", qr)
		}
		held.mu.Lock()
		page := held.lastPage
		held.mu.Unlock()
		var kept QueryResults
		if err := json.Unmarshal(page, &kept); err != nil || kept.ID != qr.ID || fmt.Sprint(kept.Data) != "[[1] [2] [3]]" {
			t.Fatalf("the held page %q (%v) is not the answer sent", page, err)
		}
		if slack := cap(page) - len(page); slack > len(page)/8+16 {
			t.Fatalf("a held page of %d bytes keeps %d: more than its size class", len(page), cap(page))
		}
		pages[qr.ID] = page
	}
	for id, page := range pages { // none shares the buffer a later page was encoded in
		var kept QueryResults
		if err := json.Unmarshal(page, &kept); err != nil || kept.ID != id {
			t.Fatalf("the page held for %s now reads %q (%v)", id, page, err)
		}
	}
}

// closeHeldRows are rows whose Close waits for release: the clean-up after a statement's rows
// (the engine connection's release, the slot's, the history record, in the core).
type closeHeldRows struct {
	query.Rows
	closing chan<- struct{}
	release <-chan struct{}
}

func (r closeHeldRows) Close() error {
	r.closing <- struct{}{}
	<-r.release
	return r.Rows.Close()
}

// A statement answered whole in its POST is answered before its rows close: their clean-up is
// not on the client's wait. The connection's next request is served once it is done.
func TestWholeAnswerWaitsNotForTheRowsClose(t *testing.T) {
	closing, release := make(chan struct{}, 2), make(chan struct{})
	rowsOf := countingEngine(2)
	engine := frontendtest.FuncEngine(func(ctx context.Context, q *query.Request) (query.Rows, error) {
		rows, err := rowsOf(ctx, q)
		return closeHeldRows{Rows: rows, closing: closing, release: release}, err
	})
	ts := startServer(t, frontendtest.NewBackend(engine), Options{PostWait: 10 * time.Second})
	answered := make(chan QueryResults, 1)
	go func() { // postAs without its t.Fatal, off the test's goroutine
		req, _ := http.NewRequest(http.MethodPost, "http://"+ts.addr+"/v1/statement", strings.NewReader("SELECT 2"))
		req.Header.Set("X-Trino-User", "carol")
		req.Header.Set("User-Agent", pythonAgent)
		var qr QueryResults
		if resp, err := postClient.Do(req); err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&qr)
			resp.Body.Close()
		}
		answered <- qr
	}()
	<-closing
	select {
	case qr := <-answered:
		if qr.Stats.State != stateFinished || fmt.Sprint(qr.Data) != "[[1] [2]]" || qr.NextURI != "" {
			t.Fatalf("the POST answered before the rows closed: %+v", qr)
		}
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("the POST was not answered while its rows closed")
	}
	close(release)
}

// A statement answered QUEUED after PostWait is held for its client's polls, up to a minute
// past its last page: held, it keeps neither its POST's request nor that request's answer
// (runThenAnswer's state lives in the query, and is let go once its answer is settled), nor
// the request its statement ran (runStarted).
func TestAQueryHeldForItsPollsKeepsNotItsPOST(t *testing.T) {
	backend := frontendtest.NewBackend(countingEngine(2))
	waiting, release := backend.Hold()
	defer release()
	ts := startServer(t, backend, Options{PostWait: 30 * time.Millisecond, PollWait: 10 * time.Millisecond})
	_, qr := postAs(t, ts.addr, pythonAgent, "SELECT 2")
	<-waiting
	release()
	if data, last := readAll(t, qr); fmt.Sprint(data) != "[[1] [2]]" || last.Stats.State != stateFinished {
		t.Fatalf("rows %v, last page %+v", data, last)
	}
	kept := func() (bool, bool) {
		ts.mu.Lock()
		q, held := ts.queries[qr.ID]
		ts.mu.Unlock()
		if !held {
			t.Fatalf("query %s is not held after its last page", qr.ID)
		}
		q.mu.Lock() // its statement's goroutine lets go of them after its rows closed
		defer q.mu.Unlock()
		keeps := q.post.w != nil || q.post.r != nil
		if q.post.settled { // its statement returned before: what it ran with is read after that
			keeps = keeps || q.runCtx != nil || q.runReq != nil
		}
		return keeps, q.post.settled
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		keeps, settled := kept()
		if !keeps && settled {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the held query still keeps its POST's request or answer, or its statement's request (settled %v)", settled)
		}
	}
}
