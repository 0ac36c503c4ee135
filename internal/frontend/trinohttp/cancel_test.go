package trinohttp

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// A query killed by a DELETE of /v1/query/{id} (as an operator or another of the user's clients
// sends it) ends, for the client still reading it, as Trino ends it: its next page is FAILED with
// USER_CANCELED (3, USER_ERROR) "Query was canceled", whatever the client. trino-go-client,
// which takes only the spelling USER_CANCELLED for its trino.ErrQueryCancelled, reports it as a
// failed query carrying that error, as it does against Trino. The query stops on PostgreSQL.
func TestKilledQueryFailsAsTrinoCancelsIt(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	ts := startServer(t, postgresBackendAt(t, dbURL), Options{PageRows: 10, BufferedRowsMax: 20})
	const slow = "select g, pg_sleep(0.001) /* %s */ from generate_series(1, 1000000) g"

	db := openTrino(t, trino.Config{ServerURI: "http://bob@" + ts.addr})
	rows, err := db.Query(fmt.Sprintf(slow, "qf-go-killed"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 15 && rows.Next(); i++ {
	}
	read := make(chan struct{})
	close(read) // the client has read its rows: the query is reading now, or never will be
	if err := killWhenReading(ts, "bob", "qf-go-killed", read); err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	var te *trino.ErrTrino
	if err := rows.Err(); !errors.As(err, &te) || te.ErrorName != "USER_CANCELED" || te.ErrorCode != 3 ||
		te.ErrorType != "USER_ERROR" || te.Message != "Query was canceled" {
		t.Errorf("trino-go-client's killed query ended with %v, want Trino's USER_CANCELED (3, USER_ERROR) \"Query was canceled\"", err)
	}
	rows.Close()
	waitEngineIdle(t, dbURL, "qf-go-killed")

	// node's start and the client's first pages take what the host gives them: the kill waits
	// for the client to read, for as long as it runs.
	npmEnded, killed := make(chan struct{}), make(chan error, 1)
	go func() { killed <- killWhenReading(ts, "alice", "qf-npm-killed", npmEnded) }()
	o := func() npmOutcome {
		defer close(npmEnded)
		return runNPM(t, ts.addr, "alice", npmStep{Name: "killed", SQL: fmt.Sprintf(slow, "qf-npm-killed")})["killed"]
	}()
	if err := <-killed; err != nil {
		t.Fatal(err)
	}
	if e := o.Error; e == nil || e.ErrorName != "USER_CANCELED" || e.ErrorType != "USER_ERROR" || e.ErrorCode != 3 || e.Message != "Query was canceled" {
		t.Errorf("the npm trino-client's killed query: rows %+v, error %+v; want USER_CANCELED (3, USER_ERROR) \"Query was canceled\"", o.OK, e)
	}
	waitEngineIdle(t, dbURL, "qf-npm-killed")
}

// killWhenReading waits for the held query whose SQL holds marker to have sent rows, then kills
// it as user with a DELETE of /v1/query/{id}. It gives up when clientEnded is closed before (the
// client went away without reading). It may run off the test's goroutine.
func killWhenReading(ts *testServer, user, marker string, clientEnded <-chan struct{}) error {
	for {
		if id := readingQuery(ts.Server, marker); id != "" {
			req, _ := http.NewRequest(http.MethodDelete, "http://"+ts.addr+"/v1/query/"+id, nil)
			req.Header.Set("X-Trino-User", user)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				return fmt.Errorf("DELETE /v1/query/%s: %s", id, resp.Status)
			}
			return nil
		}
		select {
		case <-clientEnded:
			return fmt.Errorf("the client ended before the query marked %s sent it rows", marker)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// readingQuery is the id of the held query whose SQL holds marker once its client has read a
// page of rows, else "".
func readingQuery(s *Server, marker string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, q := range s.queries {
		q.mu.Lock()
		reading := strings.Contains(q.sql, marker) && q.nextToken > 1 && !q.done
		q.mu.Unlock()
		if reading {
			return id
		}
	}
	return ""
}

// A killed query is held only to tell a client still polling it: at QueriesMax it gives way to a
// new statement, which is not refused with QUERY_QUEUE_FULL.
func TestKilledQueriesGiveWayAtQueriesMax(t *testing.T) {
	backend := frontendtest.NewBackend(frontendtest.AllTypesEngine())
	_, release := backend.Hold()
	defer release()
	ts := startServer(t, backend, Options{QueriesMax: 2})
	for range 2 {
		_, qr := post(t, ts.addr, "SELECT 1")
		req, _ := http.NewRequest(http.MethodDelete, "http://"+ts.addr+"/v1/query/"+qr.ID, nil)
		req.Header.Set("X-Trino-User", "carol")
		if resp, _ := do(t, req); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE /v1/query/%s: %s", qr.ID, resp.Status)
		}
	}
	if _, qr := post(t, ts.addr, "SELECT 1"); qr.Error != nil || qr.NextURI == "" {
		t.Fatalf("a statement after two killed queries at QueriesMax 2: %+v", qr)
	}
}
