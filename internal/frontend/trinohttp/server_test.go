package trinohttp

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/query"
)

type testServer struct {
	*Server
	addr  string
	polls atomic.Int64 // GETs of nextUri
}

func startServer(t testing.TB, backend query.Backend, opts Options) *testServer {
	t.Helper()
	return startServerOn(t, backend, opts, false)
}

// startServerOn is startServer, its handler served by net/http's server with netHTTP (where a
// query never runs on the goroutine of its POST: httplite.Detach) instead of the server's own.
func startServerOn(t testing.TB, backend query.Backend, opts Options, netHTTP bool) *testServer {
	t.Helper()
	s, err := NewServer(backend, opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{Server: s}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.addr = l.Addr().String()
	h := s.Handler()
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			ts.polls.Add(1)
		}
		h.ServeHTTP(w, r)
	})
	var hs interface {
		Serve(net.Listener) error
		Close() error
	} = s.httpServer(counted)
	if netHTTP {
		hs = &http.Server{Handler: counted}
	}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close(); s.Close() })
	return ts
}

// openTrino is frontendtest.OpenTrino (bench_test.go uses it too).
func openTrino(t testing.TB, cfg trino.Config) *sql.DB { return frontendtest.OpenTrino(t, cfg) }

func scanAll(t testing.TB, rows *sql.Rows) [][]any {
	t.Helper()
	out, err := frontendtest.ScanAll(rows)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitNoQueries waits up to 10s until the server holds no query, failing t with what otherwise.
func waitNoQueries(t *testing.T, ts *testServer, what string) {
	t.Helper()
	waitHeld(t, ts, what, func(*runningQuery) bool { return true })
}

// waitOnlyKilled waits up to 10s until the server holds no query but killed ones (held only to
// tell a client still polling it), failing t with what otherwise.
func waitOnlyKilled(t *testing.T, ts *testServer, what string) {
	t.Helper()
	waitHeld(t, ts, what, func(q *runningQuery) bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return !q.killed
	})
}

// waitHeld waits up to 10s until the server holds no query that counts, failing t with what
// otherwise.
func waitHeld(t *testing.T, ts *testServer, what string, counts func(*runningQuery) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := 0
		ts.Server.mu.Lock()
		for _, q := range ts.Server.queries {
			if counts(q) {
				n++
			}
		}
		ts.Server.mu.Unlock()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestTrinoGoClientOnMariaDB(t *testing.T) {
	eng, _, dbName := frontendtest.MariaDB(t)
	backend := frontendtest.NewBackend(eng)
	ts := startServer(t, backend, Options{PageRows: 100})
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr, Source: "go-test", Catalog: "mariadb",
		Schema: dbName, ClientTags: []string{"team-a", "batch"}})

	var n int64
	if err := db.QueryRow("SELECT 40+2").Scan(&n); err != nil || n != 42 {
		t.Fatalf("select 40+2: %v %d", err, n)
	}
	req := backend.LastRequest(t)
	if req.User != "alice" || req.Database != "mariadb" || req.Schema != dbName || req.Protocol != query.ProtocolTrino ||
		req.Headers["X-Trino-Source"] != "go-test" || strings.Join(req.Tags, ",") != "team-a,batch" {
		t.Fatalf("request %+v", req)
	}
	if _, err := db.Exec("CREATE TABLE t (id INT, name VARCHAR(20), price DECIMAL(8,2), d DATE, ts DATETIME(3))"); err != nil {
		t.Fatal(err)
	}
	res, err := db.Exec("INSERT INTO t VALUES (1, 'one', 1.25, '2024-01-02', '2024-01-02 03:04:05.678'), (2, NULL, NULL, NULL, NULL)")
	if err != nil {
		t.Fatal(err)
	}
	if affected, _ := res.RowsAffected(); affected != 2 {
		t.Fatalf("rows affected %d", affected)
	}
	rows, err := db.Query("SELECT id, name, price, d, ts FROM t ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	got := scanAll(t, rows)
	want := "[[1 one 1.25 2024-01-02 00:00:00 +0000 UTC 2024-01-02 03:04:05.678 +0000 UTC] [2 <nil> <nil> <nil> <nil>]]"
	if fmt.Sprint(got) != want {
		t.Fatalf("rows\n got %v\nwant %s", got, want)
	}
	// Bound parameters arrive as EXECUTE IMMEDIATE ... USING and reach the engine as Args.
	if err := db.QueryRow("SELECT name FROM t WHERE id = ? AND name = ?", 1, "one").Scan(new(string)); err != nil {
		t.Fatal(err)
	}
	if req := backend.LastRequest(t); req.SQL != "SELECT name FROM t WHERE id = ? AND name = ?" || fmt.Sprint(req.Args) != "[1 one]" {
		t.Fatalf("parameters: %q %v", req.SQL, req.Args)
	}
}

func TestPagingStreamsLargeResults(t *testing.T) {
	eng, _, _ := frontendtest.MariaDB(t)
	ts := startServer(t, frontendtest.NewBackend(eng), Options{PageRows: 100, BufferedRowsMax: 200})
	db := openTrino(t, trino.Config{ServerURI: "http://bob@" + ts.addr})
	before := ts.polls.Load()
	rows, err := db.Query("SELECT seq FROM seq_1_to_5000")
	if err != nil {
		t.Fatal(err)
	}
	var count, sum int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		count++
		sum += v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if count != 5000 || sum != 5000*5001/2 {
		t.Fatalf("count %d sum %d", count, sum)
	}
	if polls := ts.polls.Load() - before; polls < 50 {
		t.Fatalf("%d polls for 5000 rows at 100 a page", polls)
	}
}

func TestErrorsInTrinoForm(t *testing.T) {
	eng, _, dbName := frontendtest.MariaDB(t)
	ts := startServer(t, frontendtest.NewBackend(eng), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://bob@" + ts.addr, Schema: dbName})
	for _, c := range []struct{ sql, name, kind, state string }{
		{"SELEC 1", "SYNTAX_ERROR", "USER_ERROR", "42000"},
		{"SELECT * FROM missing", "TABLE_NOT_FOUND", "USER_ERROR", "42S02"},
	} {
		_, err := db.Query(c.sql)
		var qf *trino.ErrQueryFailed
		if !errors.As(err, &qf) {
			t.Fatalf("%s: %v", c.sql, err)
		}
		var et *trino.ErrTrino
		if !errors.As(qf.Reason, &et) || et.ErrorName != c.name || et.ErrorType != c.kind || et.SqlState != c.state {
			t.Fatalf("%s: %#v", c.sql, qf.Reason)
		}
	}
}

// post sends a statement by hand and decodes the answer.
func post(t *testing.T, addr, sql string) (*http.Response, QueryResults) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/statement", strings.NewReader(sql))
	req.Header.Set("X-Trino-User", "carol")
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (*http.Response, QueryResults) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var qr QueryResults
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &qr); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
	}
	return resp, qr
}

func get(t *testing.T, uri string) (*http.Response, QueryResults) {
	req, _ := http.NewRequest(http.MethodGet, uri, nil)
	return do(t, req)
}

func TestQueuedUntilTheBackendRuns(t *testing.T) {
	eng, _, _ := frontendtest.MariaDB(t)
	backend := frontendtest.NewBackend(eng)
	waiting, release := backend.Hold()
	defer release()
	ts := startServer(t, backend, Options{PollWait: 50 * time.Millisecond})
	_, qr := post(t, ts.addr, "SELECT 7")
	<-waiting
	if qr.Stats.State != stateQueued || !qr.Stats.Queued || qr.NextURI == "" {
		t.Fatalf("POST: %+v", qr)
	}
	for i := 0; i < 3; i++ {
		_, qr = get(t, qr.NextURI)
		if qr.Stats.State != stateQueued || qr.NextURI == "" {
			t.Fatalf("poll %d while held: %+v", i, qr)
		}
	}
	// A repeated token returns the same page (a client's retry).
	_, again := get(t, strings.TrimSuffix(qr.NextURI, "/4")+"/3")
	if again.Stats.State != stateQueued {
		t.Fatalf("retry: %+v", again)
	}
	release()
	var data [][]any
	for qr.NextURI != "" {
		_, qr = get(t, qr.NextURI)
		data = append(data, qr.Data...)
	}
	if qr.Stats.State != stateFinished || fmt.Sprint(data) != "[[7]]" || qr.Columns[0].Type != "integer" {
		t.Fatalf("after release: %+v data %v", qr, data)
	}
}

func TestDeleteCancelsQuery(t *testing.T) {
	eng, _, _ := frontendtest.MariaDB(t)
	ts := startServer(t, frontendtest.NewBackend(eng), Options{PollWait: 50 * time.Millisecond})
	_, qr := post(t, ts.addr, "SELECT SLEEP(60)")
	start := time.Now()
	req, _ := http.NewRequest(http.MethodDelete, qr.NextURI, nil)
	resp, _ := do(t, req)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	if resp, _ := get(t, qr.NextURI); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET after DELETE: %d", resp.StatusCode)
	}
	// The engine query was killed: the server's queries drain quickly.
	waitNoQueries(t, ts, "query still registered")
	// And the client driver cancels through DELETE when its context ends.
	db := openTrino(t, trino.Config{ServerURI: "http://bob@" + ts.addr})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := db.QueryContext(ctx, "SELECT SLEEP(60)")
	if err == nil {
		rows, _ := db.QueryContext(ctx, "SELECT SLEEP(60)")
		if rows != nil {
			rows.Next()
			err = rows.Err()
		}
	}
	if err == nil || time.Since(start) > 20*time.Second {
		t.Fatalf("cancelled query: %v after %s", err, time.Since(start))
	}
}

func TestNotConfigured503(t *testing.T) {
	eng, _, _ := frontendtest.MariaDB(t)
	backend := frontendtest.NewBackend(eng)
	backend.SetReady(false)
	ts := startServer(t, backend, Options{})
	resp, _ := post(t, ts.addr, "SELECT 1")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("status %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// The driver retries 503s: once the node is configured its query goes through.
	go func() { time.Sleep(300 * time.Millisecond); backend.SetReady(true) }()
	db := openTrino(t, trino.Config{ServerURI: "http://bob@" + ts.addr})
	var n int64
	if err := db.QueryRow("SELECT 5").Scan(&n); err != nil || n != 5 {
		t.Fatalf("after configuring: %v %d", err, n)
	}
}

type passwords map[string]string

func (p passwords) Authenticate(_ context.Context, c Credentials) (string, error) {
	if c.Token != "" && c.Token == p["token:"+c.Token] {
		return "token-user", nil
	}
	if want, ok := p[c.User]; ok && want == c.Password {
		return c.User, nil
	}
	return "", errors.New("bad credentials")
}

func TestAuthHook(t *testing.T) {
	eng, _, _ := frontendtest.MariaDB(t)
	backend := frontendtest.NewBackend(eng)
	ts := startServer(t, backend, Options{Auth: passwords{"alice": "pw", "token:t0k": "t0k"}})
	send := func(set func(r *http.Request)) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+ts.addr+"/v1/statement", strings.NewReader("SELECT 1"))
		set(req)
		resp, _ := do(t, req)
		return resp.StatusCode
	}
	if got := send(func(r *http.Request) { r.Header.Set("X-Trino-User", "alice") }); got != http.StatusUnauthorized {
		t.Fatalf("no credentials: %d", got)
	}
	if got := send(func(r *http.Request) { r.SetBasicAuth("alice", "nope") }); got != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d", got)
	}
	if got := send(func(r *http.Request) { r.SetBasicAuth("alice", "pw"); r.Header.Set("X-Trino-User", "root") }); got != http.StatusForbidden {
		t.Fatalf("impersonation: %d", got)
	}
	if got := send(func(r *http.Request) { r.SetBasicAuth("alice", "pw") }); got != http.StatusOK {
		t.Fatalf("good password: %d", got)
	}
	if got := send(func(r *http.Request) { r.Header.Set("Authorization", "Bearer t0k") }); got != http.StatusOK {
		t.Fatalf("token: %d", got)
	}
	// A POST is answered before its query reaches the backend: wait for both accepted ones.
	for deadline := time.Now().Add(10 * time.Second); len(backend.Requests()) < 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if req := backend.LastRequest(t); req.User != "token-user" {
		t.Fatalf("token user %q", req.User)
	}
}

func TestArrowTypesToTrino(t *testing.T) {
	ts := startServer(t, frontendtest.NewBackend(frontendtest.AllTypesEngine()), Options{})
	_, qr := post(t, ts.addr, "types")
	var data [][]any
	for {
		data = append(data, qr.Data...)
		if qr.NextURI == "" {
			break
		}
		_, qr = get(t, qr.NextURI)
	}
	var types []string
	for _, c := range qr.Columns {
		types = append(types, c.Type)
	}
	wantTypes := "boolean tinyint smallint integer bigint smallint integer bigint decimal(20,0) real double decimal(10,2) " +
		"varchar varbinary date timestamp(6) timestamp(0) with time zone time(6) unknown"
	if strings.Join(types, " ") != wantTypes {
		t.Fatalf("types\n got %s\nwant %s", strings.Join(types, " "), wantTypes)
	}
	wantRow := `[true,-8,-1600,-320000,-6400000000,250,65000,4000000000,"18000000000000000000",1.5,-2.25,"12345.67","héllo","AP8Q","2024-02-29","2024-02-29 13:14:15.123456","2024-02-29 13:14:15 UTC","13:14:15.000000",null]`
	row0, _ := json.Marshal(data[0])
	if string(row0) != wantRow {
		t.Fatalf("row\n got %s\nwant %s", row0, wantRow)
	}
	for i, v := range data[1] {
		if v != nil {
			t.Fatalf("null row column %d = %v", i, v)
		}
	}
	// The Go driver decodes every column of both rows.
	db := openTrino(t, trino.Config{ServerURI: "http://bob@" + ts.addr})
	rows, err := db.Query("types")
	if err != nil {
		t.Fatal(err)
	}
	got := scanAll(t, rows)
	if len(got) != 2 || fmt.Sprintf("%v %v %v", got[0][0], got[0][4], got[0][12]) != "true -6400000000 héllo" {
		t.Fatalf("driver rows %v", got)
	}
}

func TestAbandonedQueryIsCancelled(t *testing.T) {
	eng, _, _ := frontendtest.MariaDB(t)
	backend := frontendtest.NewBackend(eng)
	ts := startServer(t, backend, Options{AbandonAfter: 300 * time.Millisecond, PollWait: 50 * time.Millisecond})
	_, qr := post(t, ts.addr, "SELECT SLEEP(30)")
	waitNoQueries(t, ts, "abandoned query still registered")
	if resp, _ := get(t, qr.NextURI); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("poll after abandon: %d", resp.StatusCode)
	}
}

// TestConcurrentRetriesOfAPollAgree: a client that retries a poll while the first is still
// waiting gets the same page from both, and can go on with the next token.
func TestConcurrentRetriesOfAPollAgree(t *testing.T) {
	eng, _, _ := frontendtest.MariaDB(t)
	backend := frontendtest.NewBackend(eng)
	waiting, release := backend.Hold()
	defer release()
	ts := startServer(t, backend, Options{PollWait: 2 * time.Second})
	_, qr := post(t, ts.addr, "SELECT 5")
	<-waiting
	bodies := make(chan string, 2)
	for i := 0; i < 2; i++ {
		go func() {
			resp, err := http.Get(qr.NextURI)
			if err != nil {
				bodies <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			bodies <- string(b)
		}()
	}
	time.Sleep(100 * time.Millisecond)
	release()
	a, b := <-bodies, <-bodies
	if a != b {
		t.Fatalf("two answers for one token:\n%s\n%s", a, b)
	}
	var page QueryResults
	if err := json.Unmarshal([]byte(a), &page); err != nil {
		t.Fatal(err)
	}
	var data [][]any
	data = append(data, page.Data...)
	for page.NextURI != "" {
		_, page = get(t, page.NextURI)
		data = append(data, page.Data...)
	}
	if page.Stats.State != stateFinished || fmt.Sprint(data) != "[[5]]" {
		t.Fatalf("after concurrent retries: %+v %v", page, data)
	}
}

// A poll of a query with nothing new answers after its PollWait, never sooner, also when its
// timer is one an earlier poll used: one that expired, and one stopped early by the end of
// another query.
func TestPollsWaitTheirPollWaitOnReusedTimers(t *testing.T) {
	const wait = 60 * time.Millisecond
	backend := frontendtest.NewBackend(frontendtest.AllTypesEngine())
	ts := startServer(t, backend, Options{PollWait: wait})
	waiting, release := backend.Hold()
	_, held := post(t, ts.addr, "SELECT 1")
	<-waiting
	pollHeld := func(what, uri string) string {
		t.Helper()
		start := time.Now()
		_, qr := get(t, uri)
		if took := time.Since(start); took < wait || qr.Stats.State != stateQueued || qr.NextURI == "" {
			t.Fatalf("%s: answered after %s (PollWait %s): %+v", what, took, wait, qr)
		}
		return qr.NextURI
	}
	next := pollHeld("first poll", held.NextURI)
	next = pollHeld("second poll", next)
	// A poll that ends early, as its query ends: its timer goes back unexpired.
	go func() { time.Sleep(wait / 4); release() }()
	for uri := next; uri != ""; {
		_, qr := get(t, uri)
		uri = qr.NextURI
	}
	waiting, release = backend.Hold()
	defer release()
	_, held = post(t, ts.addr, "SELECT 1")
	<-waiting
	next = pollHeld("a poll after one stopped early", held.NextURI)
	pollHeld("and after that", next)
}

// The links of every page (nextUri, infoUri) are at the Host of the request it answers, though
// the server keeps the latest Host's base URL and each query its latest infoUri: a query posted
// at one name and polled at another, and queries posted at each, all get their own.
func TestLinksFollowEachRequestsHost(t *testing.T) {
	ts := startServer(t, frontendtest.NewBackend(frontendtest.AllTypesEngine()), Options{})
	_, port, _ := net.SplitHostPort(ts.addr)
	exchange := func(method, uri, host string) QueryResults {
		t.Helper()
		req, _ := http.NewRequest(method, uri, strings.NewReader("SELECT 1"))
		req.Host = host
		req.Header.Set("X-Trino-User", "carol")
		resp, qr := do(t, req)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s at %s: %s", method, uri, host, resp.Status)
		}
		base := "http://" + host + "/"
		if qr.NextURI != "" && !strings.HasPrefix(qr.NextURI, base) || !strings.HasPrefix(qr.InfoURI, base) {
			t.Fatalf("%s at %s: nextUri %q, infoUri %q", method, host, qr.NextURI, qr.InfoURI)
		}
		return qr
	}
	hosts := []string{"127.0.0.1:" + port, "localhost:" + port}
	for i := range 4 {
		posted, polled := hosts[i%2], hosts[i/2%2]
		qr := exchange(http.MethodPost, "http://"+ts.addr+"/v1/statement", posted)
		for qr.NextURI != "" {
			u, err := url.Parse(qr.NextURI)
			if err != nil {
				t.Fatal(err)
			}
			u.Host = ts.addr // the request goes to the server whatever Host it names
			qr = exchange(http.MethodGet, u.String(), polled)
		}
	}
}
