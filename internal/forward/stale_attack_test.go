package forward

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/proxy"
)

// What a client asked that only the owner may read: the statement's text, its user, a
// prepared statement's text (a Trino client sends them as headers), a query id, slug and token
// (enough to read the query's rows from the owner, a poll needing no password).
const (
	staleQueryID = "20261206_091500_00042_qwerty_"
	staleSlug    = "ySLUGx9f"
	staleToken   = "17"
)

var staleNeedles = []string{"payroll", "salary", "alice", "qwerty", staleSlug, "PreparedPay"}

// fakeOwner answers at an address the peer list still gives to w2, as w2 would: it keeps every
// request, answers a follow-up 200 with made-up rows and a made-up owner proof, and a whole
// query with a made-up Arrow result.
type fakeOwner struct {
	mu   sync.Mutex
	seen []captured
	srv  *httptest.Server
}

func newFakeOwner(t *testing.T) *fakeOwner {
	o := &fakeOwner{}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		o.mu.Lock()
		o.seen = append(o.seen, captured{r.Method, r.URL.RequestURI(), r.Header.Clone(), body})
		o.mu.Unlock()
		w.Header().Set(HeaderOwnerProof, strings.Repeat("cd", 32))
		if r.URL.Path == PathQuery {
			w.Header().Set("Content-Type", mediaArrow)
			_, _ = w.Write(fakeArrow(t))
			return
		}
		_, _ = io.WriteString(w, `{"data":[["made-up rows"]]}`)
	}))
	t.Cleanup(o.srv.Close)
	return o
}

// leaked is each part of each request the fake owner got that names what only the owner may read.
func (o *fakeOwner) leaked() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, c := range o.seen {
		parts := map[string]string{"method": c.method, "path": c.uri, "body": string(c.body)}
		for name, values := range c.header {
			parts["header "+name] = strings.Join(values, ",")
		}
		for part, text := range parts { //determinism:ok a test's report
			for _, needle := range staleNeedles {
				if strings.Contains(strings.ToLower(text), strings.ToLower(needle)) {
					out = append(out, c.method+" "+part+" names "+needle)
				}
			}
		}
	}
	return out
}

func fakeArrow(t *testing.T) []byte {
	schema := arrow.NewSchema([]arrow.Field{{Name: "salary", Type: arrow.BinaryTypes.String}}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer bld.Release()
	bld.Field(0).(*array.StringBuilder).Append("made-up rows")
	rec := bld.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	iw := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	if err := iw.Write(rec); err != nil {
		t.Fatal(err)
	}
	_ = iw.Close()
	return buf.Bytes()
}

// seenRequest is a forwarded request as the genuine owner's handler got it.
type seenRequest struct {
	method, uri, prepared, body string
}

// staleFollowUps forwards through f, as a client of w1 that w2's query belongs to: a poll (with
// a prepared statement's header), a statement of a transaction w2 holds (its body), and a whole
// query whose cache key w2 owns. What the client of each got.
func staleFollowUps(f *Forwarder) (poll, txn *httptest.ResponseRecorder, rows query.Rows, err error) {
	r := httptest.NewRequest(http.MethodGet, "/v1/statement/executing/"+staleQueryID+OwnerID("w2")+"/"+staleSlug+"/"+staleToken+"?maxWait=1s", nil)
	r.RemoteAddr = "203.0.113.9:4000"
	r.Header.Set("X-Trino-Prepared-Statement", "PreparedPay=select+salary+from+payroll")
	poll = httptest.NewRecorder()
	_ = f.ProxyHTTP(poll, r, Trino, OwnerID("w2"))

	body := "insert into payroll values ('alice', 1000000)"
	r = httptest.NewRequest(http.MethodPost, "/v1/statement", strings.NewReader(body))
	r.RemoteAddr = "203.0.113.9:4001"
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil }
	txn = httptest.NewRecorder()
	_ = f.ProxyHTTP(txn, r, Trino, OwnerID("w2"))

	rows, err = f.Locality().Run(context.Background(), &query.Request{SQL: "select salary from payroll", User: "alice", Protocol: "trino",
		ClientAddr: "203.0.113.9:4002"}, "key", func(map[string]string) bool { return true }, 5*time.Second)
	return poll, txn, rows, err
}

// TestAHostAtAStalePeerAddressReadsNothingOfAQuery: w1's peer list still names w2 at an address a
// host now answers, as w2 would (200, a made-up owner proof, made-up rows). A poll, a statement of
// a transaction w2 holds and a whole query w1 forwards there carry nothing that host can read:
// no SQL, no user, no query id, slug or token (with which it could read the rows from w2 itself),
// no prepared statement. Its answers are not the owner's, so none reaches a client: the poll and
// the statement get 502, the whole query runs on w1. Forwarded to the genuine w2, the same
// requests arrive there as the client sent them.
func TestAHostAtAStalePeerAddressReadsNothingOfAQuery(t *testing.T) {
	const secret = "stale-secret-0123456789"
	fake := newFakeOwner(t)
	through := func(ep string) *Forwarder {
		f, err := New(Options{Env: testEnv, Name: "w1", Secret: secret, Client: NewClient(nil),
			Directory: peers{{Name: "w2", Healthy: true, Endpoints: map[string]string{Trino: ep}}}})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	poll, txn, rows, err := staleFollowUps(through(fake.srv.URL))
	if got := fake.leaked(); len(got) != 0 {
		t.Errorf("the host at w2's old address read: %v", got)
	}
	if n := len(fake.seen); n != 3 {
		t.Errorf("the host at w2's old address got %d requests, want the poll, the statement and the query", n)
	}
	for name, rec := range map[string]*httptest.ResponseRecorder{"the poll": poll, "the statement": txn} { //determinism:ok a test's cases
		if rec.Code != http.StatusBadGateway || strings.Contains(rec.Body.String(), "made-up") {
			t.Errorf("%s: the client got %d %q from the host at w2's old address; want 502, not its answer", name, rec.Code, rec.Body)
		}
	}
	if rows != nil {
		rows.Close()
		t.Error("the whole query took the made-up rows of the host at w2's old address")
	}
	if !errors.Is(err, proxy.ErrRunHere) {
		t.Errorf("the whole query: %v; want it run here", err)
	}

	// The genuine w2: the same requests, opened there as the client sent them.
	w2, advertised := testOwner(testEnv, "w2", secret)
	var mu sync.Mutex
	var got []seenRequest
	ran := &sqlBackend{}
	mux := http.NewServeMux()
	mux.Handle("POST "+PathQuery, w2.QueryHandler(ran))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if _, err := w2.Inbound(r.Header.Get, BindTrino); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seenRequest{r.Method, r.URL.RequestURI(), r.Header.Get("X-Trino-Prepared-Statement"), string(body)})
		mu.Unlock()
		_, _ = io.WriteString(w, "owner's rows")
	})
	srv := httptest.NewServer(w2.Unsealing(w2.Vouching(BindTrino, mux)))
	t.Cleanup(srv.Close)
	advertised.add(srv.URL)
	poll, txn, rows, err = staleFollowUps(through(srv.URL))
	if poll.Code != http.StatusOK || txn.Code != http.StatusOK || poll.Body.String() != "owner's rows" {
		t.Fatalf("at the genuine w2: the poll %d %q, the statement %d %q", poll.Code, poll.Body, txn.Code, txn.Body)
	}
	if rows != nil {
		rows.Close()
	}
	if errors.Is(err, proxy.ErrRunHere) || ran.sql != "select salary from payroll" || ran.user != "alice" {
		t.Fatalf("the whole query at the genuine w2: %v, it ran %q as %q", err, ran.sql, ran.user)
	}
	want := []seenRequest{
		{http.MethodGet, "/v1/statement/executing/" + staleQueryID + OwnerID("w2") + "/" + staleSlug + "/" + staleToken + "?maxWait=1s",
			"PreparedPay=select+salary+from+payroll", ""},
		{http.MethodPost, "/v1/statement", "", "insert into payroll values ('alice', 1000000)"},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("the genuine w2 got %+v, want %+v", got, want)
	}
}

// sqlBackend keeps the last query it is given and answers it with an engine error.
type sqlBackend struct {
	mu        sync.Mutex
	sql, user string
}

func (*sqlBackend) Ready() bool { return true }

func (b *sqlBackend) Execute(_ context.Context, req *query.Request) (query.Rows, error) {
	b.mu.Lock()
	b.sql, b.user = req.SQL, req.User
	b.mu.Unlock()
	return nil, &query.Error{Code: query.CodeEngine, Message: "ran on the owner"}
}
