package trinoengine

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

func collect(t testing.TB, rows query.Rows) [][]string {
	t.Helper()
	defer rows.Close()
	var out [][]string
	for {
		b, err := rows.Next(context.Background())
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < int(b.NumRows()); i++ {
			var row []string
			for c := 0; c < int(b.NumCols()); c++ {
				row = append(row, b.Column(c).ValueStr(i))
			}
			out = append(out, row)
		}
	}
}

func run(t testing.TB, e *Engine, sql string, args ...any) query.Rows {
	t.Helper()
	rows, err := e.Execute(context.Background(), &query.Request{SQL: sql, Args: args})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return rows
}

func TestAgainstTrinoProtocolServer(t *testing.T) {
	url, dbName := startHelper(t, 0)
	e, err := Open(Config{Name: "helper", URL: url, User: "svc", Schema: dbName})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows := run(t, e, "CREATE TABLE t (id INT, s VARCHAR(10), d DECIMAL(6,2), dt DATE, ts DATETIME(6), b BLOB)")
	collect(t, rows)
	if rows.Schema() != nil || rows.Tag() != "CREATE" {
		t.Fatalf("DDL: schema %v tag %q", rows.Schema(), rows.Tag())
	}
	rows = run(t, e, "INSERT INTO t VALUES (1, 'a''b', 12.5, '2024-02-29', '2024-02-29 01:02:03.456789', X'0001'), (2, NULL, NULL, NULL, NULL, NULL)")
	collect(t, rows)
	if rows.Tag() != "INSERT 0 2" {
		t.Fatalf("insert tag %q", rows.Tag())
	}
	rows = run(t, e, "SELECT id, s, d, dt, ts, b FROM t WHERE id >= ? ORDER BY id", 1)
	wantTypes := []arrow.DataType{arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String, &arrow.Decimal128Type{Precision: 6, Scale: 2},
		arrow.FixedWidthTypes.Date32, &arrow.TimestampType{Unit: arrow.Microsecond}, arrow.BinaryTypes.Binary}
	for i, w := range wantTypes {
		if got := rows.Schema().Field(i).Type; !arrow.TypeEqual(got, w) {
			t.Errorf("column %d: %s, want %s", i, got, w)
		}
	}
	got := collect(t, rows)
	want := [][]string{{"1", "a'b", "12.5", "2024-02-29", "2024-02-29T01:02:03.456789", "AAE="},
		{"2", "(null)", "(null)", "(null)", "(null)", "(null)"}}
	if len(got) != 2 || strings.Join(got[0], "|") != strings.Join(want[0], "|") || strings.Join(got[1], "|") != strings.Join(want[1], "|") {
		t.Fatalf("rows\n got %q\nwant %q", got, want)
	}
	if rows.Tag() != "SELECT 2" {
		t.Fatalf("tag %q", rows.Tag())
	}
	// Many pages (the helper sends 500 rows a page).
	n := 0
	for _, r := range collect(t, run(t, e, "SELECT seq FROM seq_1_to_3000")) {
		n += len(r)
	}
	if n != 3000 {
		t.Fatalf("rows %d", n)
	}
	// Errors keep their SQLSTATE and Trino name.
	_, err = e.Execute(context.Background(), &query.Request{SQL: "SELECT * FROM missing"})
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != "42S02" || !strings.Contains(qe.Message, "[trino TABLE_NOT_FOUND 46 USER_ERROR]") {
		t.Fatalf("missing table: %v", err)
	}
}

func TestCancelDeletesQuery(t *testing.T) {
	url, _ := startHelper(t, 0)
	e, _ := Open(Config{Name: "helper", URL: url, User: "svc"})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	rows, err := e.Execute(ctx, &query.Request{SQL: "SELECT SLEEP(60)"})
	if err == nil {
		_, err = rows.Next(ctx)
		rows.Close()
	}
	if err == nil || time.Since(start) > 10*time.Second {
		t.Fatalf("cancel: %v after %s", err, time.Since(start))
	}
	// The server is free for the next query at once.
	if got := collect(t, run(t, e, "SELECT 1")); got[0][0] != "1" {
		t.Fatal(got)
	}
}

func TestRetriesUntilConfigured(t *testing.T) {
	url, _ := startHelper(t, 500*time.Millisecond)
	e, _ := Open(Config{Name: "helper", URL: url, User: "svc"})
	start := time.Now()
	if got := collect(t, run(t, e, "SELECT 3")); got[0][0] != "3" {
		t.Fatal(got)
	}
	if time.Since(start) < 300*time.Millisecond {
		t.Fatalf("answered after %s, before the helper was configured", time.Since(start))
	}
}

// exchange is a recorded client-protocol conversation (testdata/exchange_*.json).
type exchange struct {
	Request struct {
		Method, Path, Body string
	}
	Responses []json.RawMessage
}

// replay serves a recorded exchange: the POST gets the first document, each GET of a
// nextUri the next one.
func replay(t *testing.T, file string) (*httptest.Server, *[]string) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var ex exchange
	if err := json.Unmarshal(raw, &ex); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	step := 0
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		seen = append(seen, r.Method+" "+r.URL.Path+" "+string(body))
		if step == 0 && (r.Method != ex.Request.Method || r.URL.Path != ex.Request.Path || string(body) != ex.Request.Body ||
			r.Header.Get("X-Trino-User") == "") {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		if r.Method == http.MethodDelete || step >= len(ex.Responses) {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		doc := strings.ReplaceAll(string(ex.Responses[step]), "${BASE}", srv.URL)
		step++
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, doc)
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func TestRecordedExchange(t *testing.T) {
	srv, seen := replay(t, "testdata/exchange_select.json")
	e, _ := Open(Config{Name: "recorded", URL: srv.URL, User: "svc", Catalog: "tpch", Schema: "tiny"})
	rows := run(t, e, "SELECT a, b, c, d, e, f, g FROM t")
	var types []string
	for _, f := range rows.Schema().Fields() {
		types = append(types, f.Type.String())
	}
	if got := strings.Join(types, " "); got != "utf8 int32 bool utf8 decimal(10, 2) timestamp[ms] float64" {
		t.Fatalf("types %s", got)
	}
	if meta := rows.Schema().Field(3).Metadata; meta.Values()[meta.FindKey(MetaTrinoType)] != "array(integer)" {
		t.Fatalf("array metadata %v", meta)
	}
	got := collect(t, rows)
	want := "abc|1|true|[1,2]|12.5|2024-05-15T14:30:22.123|0.5 (null)|(null)|(null)|(null)|(null)|(null)|NaN"
	if s := strings.Join(got[0], "|") + " " + strings.Join(got[1], "|"); s != want {
		t.Fatalf("rows\n got %s\nwant %s", s, want)
	}
	if len(*seen) != 3 || !strings.HasPrefix((*seen)[1], "GET /v1/statement/queued/") || !strings.HasPrefix((*seen)[2], "GET /v1/statement/executing/") {
		t.Fatalf("requests %q", *seen)
	}

	srv, _ = replay(t, "testdata/exchange_error.json")
	e, _ = Open(Config{Name: "recorded", URL: srv.URL, User: "svc"})
	_, err := e.Execute(context.Background(), &query.Request{SQL: "SELECT * FROM nation_typo"})
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != "42S02" || !strings.HasPrefix(qe.Message, "line 1:15: Table 'tpch.tiny.nation_typo' does not exist") {
		t.Fatalf("error: %v", err)
	}
}

// TestCanceledOnTheClusterIsNotATimeout: a query Trino fails with USER_CANCELED (someone else
// cancelled it there: a DELETE of the query, the control plane's engine fence) or
// ADMINISTRATIVELY_KILLED (kill_query) is a cancelled query, SQLSTATE 57014, with Trino's name
// kept in the message (the Trino frontend answers it to Trino clients), not a query timeout,
// which a Trino client would read as EXCEEDED_TIME_LIMIT.
func TestCanceledOnTheClusterIsNotATimeout(t *testing.T) {
	srv, _ := replay(t, "testdata/exchange_canceled.json")
	e, _ := Open(Config{Name: "recorded", URL: srv.URL, User: "svc"})
	_, err := e.Execute(context.Background(), &query.Request{SQL: "SELECT count(*) FROM lineitem"})
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != sqlstate.QueryCanceled || qe.Retryable ||
		qe.Message != "Query was canceled [trino USER_CANCELED 3 USER_ERROR]" {
		t.Fatalf("cancelled on the cluster: %#v", err)
	}
	killed := toError(&trinoError{Message: "Query killed. Message: runaway", ErrorCode: 38, ErrorName: "ADMINISTRATIVELY_KILLED", ErrorType: "USER_ERROR"})
	if !errors.As(killed, &qe) || qe.Code != sqlstate.QueryCanceled || !strings.HasSuffix(qe.Message, "[trino ADMINISTRATIVELY_KILLED 38 USER_ERROR]") {
		t.Fatalf("killed by an operator: %#v", killed)
	}
}

func TestRegistered(t *testing.T) {
	e, err := OpenSpec(engine.Spec{Name: "t", Kind: "trino", Endpoint: "http://127.0.0.1:1", User: "u"})
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	if _, err := OpenSpec(engine.Spec{Name: "t", Kind: "trino", Endpoint: "not a url", User: "u"}); err == nil {
		t.Fatal("bad endpoint accepted")
	}
}
