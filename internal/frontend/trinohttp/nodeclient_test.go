package trinohttp

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// npmStep is one statement the npm trino-client probe runs (nodeclients/trino_probe.js).
type npmStep struct {
	Name   string `json:"name"`
	SQL    string `json:"sql"`
	Cancel bool   `json:"cancel,omitempty"`
	Exit   bool   `json:"exit,omitempty"`
}

// npmOutcome is what the probe printed for a step.
type npmOutcome struct {
	Probe string `json:"probe"`
	OK    *struct {
		Rows      [][]any  `json:"rows"`
		Names     []string `json:"names"`
		Types     []string `json:"types"`
		Pages     int      `json:"pages"`
		Cancelled string   `json:"cancelled"`
		Read      int      `json:"read"`
	} `json:"ok"`
	Error *QueryError `json:"error"`
}

// runNPM runs steps in order through one npm trino-client (the library make test-deps installs)
// against addr as user, and returns each step's outcome by name.
func runNPM(t *testing.T, addr, user string, steps ...npmStep) map[string]npmOutcome {
	t.Helper()
	return runNPMIn(t, addr, user, "", "", steps...)
}

// runNPMIn is runNPM with the client's catalog and schema set (none where "").
func runNPMIn(t *testing.T, addr, user, catalog, schema string, steps ...npmStep) map[string]npmOutcome {
	t.Helper()
	return runNPMWith(t, addr, user, catalog, schema, nil, steps...)
}

// runNPMWith is runNPMIn with fields the client sends with every request (its extraHeaders).
func runNPMWith(t *testing.T, addr, user, catalog, schema string, headers map[string]string, steps ...npmStep) map[string]npmOutcome {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "frontendtest", "nodeclients")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "trino-client")); err != nil {
		t.Skipf("node module trino-client is not installed (make test-deps installs it; its install failed): %v", err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed (make test-deps installs it; its install failed)")
	}
	spec, err := json.Marshal(steps)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "trino_probe.js")
	cmd.Dir = dir
	extra, err := json.Marshal(headers)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "TRINO_SERVER=http://"+addr, "TRINO_USER="+user, "TRINO_STEPS="+string(spec),
		"TRINO_CATALOG="+catalog, "TRINO_SCHEMA="+schema, "TRINO_HEADERS="+string(extra))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("npm trino-client against %s: %v\n%s\n%s", addr, err, out, stderr.String())
	}
	got := map[string]npmOutcome{}
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var o npmOutcome
		if err := json.Unmarshal(line, &o); err != nil {
			t.Fatalf("probe printed %q: %v", line, err)
		}
		got[o.Probe] = o
	}
	for _, s := range steps {
		if _, ok := got[s.Name]; !ok {
			t.Fatalf("probe printed nothing for %s:\n%s\n%s", s.Name, out, stderr.String())
		}
	}
	return got
}

// The npm trino-client against PostgreSQL, statement after statement on one client as an
// application runs them: Trino's types and values, errors by name, a prepared statement and a
// session property the client keeps and sends back, and a result paged without being held.
func TestNPMTrinoClientOnPostgres(t *testing.T) {
	backend := postgresBackend(t)
	ts := startServer(t, backend, Options{PageRows: 100, BufferedRowsMax: 200})
	got := runNPM(t, ts.addr, "alice",
		npmStep{Name: "types", SQL: `select 1.25::numeric(8,2) d, date '2024-01-02' dt, time '03:04:05.123' tm,
			timestamp '2024-01-02 03:04:05.678' ts, timestamptz '2024-01-02 03:04:05.678+02' tz, '\x0102ff'::bytea b,
			array[1, null, 3]::int4[] a, null::int4 n, 'x'::text s, true bo, 2.5::float8 f`},
		npmStep{Name: "syntax", SQL: "selec 1"},
		npmStep{Name: "missing", SQL: "select *\n  from no_such_table"},
		npmStep{Name: "prepare", SQL: "PREPARE p1 FROM SELECT ? + 1, ?"},
		npmStep{Name: "execute", SQL: "EXECUTE p1 USING 41, 'it''s'"},
		npmStep{Name: "set", SQL: "SET SESSION query_max_run_time = '10m'"},
		npmStep{Name: "after-set", SQL: "select 2"},
		npmStep{Name: "paging", SQL: "select g from generate_series(1, 5000) g"},
	)

	types := got["types"]
	// The timestamp and time literals are Trino's timestamp(3) and time(3), their digits' precision (declared.go).
	wantTypes := `["decimal(8,2)","date","time(3)","timestamp(3)","timestamp(6) with time zone","varbinary","array(integer)","integer","varchar","boolean","double"]`
	wantRow := `[["1.25","2024-01-02","03:04:05.123","2024-01-02 03:04:05.678","2024-01-02 01:04:05.678000 UTC","AQL/",[1,null,3],null,"x",true,2.5]]`
	if types.OK == nil || jsonText(t, types.OK.Types) != wantTypes || jsonText(t, types.OK.Rows) != wantRow {
		t.Errorf("types: %+v\nwant types %s\nwant rows  %s", types, wantTypes, wantRow)
	}
	for name, want := range map[string]struct {
		name string
		at   ErrorLocation
	}{"syntax": {"SYNTAX_ERROR", ErrorLocation{1, 1}}, "missing": {"TABLE_NOT_FOUND", ErrorLocation{2, 8}}} {
		e := got[name].Error
		if e == nil || e.ErrorName != want.name || e.ErrorType != "USER_ERROR" || e.Message == "" || e.ErrorLocation == nil || *e.ErrorLocation != want.at {
			t.Errorf("%s: error %+v, want %s (USER_ERROR) at %+v", name, e, want.name, want.at)
		}
	}
	if o := got["execute"]; o.OK == nil || jsonText(t, o.OK.Rows) != `[[42,"it's"]]` {
		t.Errorf("EXECUTE of the statement the client kept: %+v %+v", o.OK, o.Error)
	}
	if o := got["set"]; o.Error != nil {
		t.Errorf("SET SESSION: %+v", o.Error)
	}
	var session string
	for _, r := range backend.Requests() {
		if r.SQL == "select 2" {
			session = r.Headers["X-Trino-Session"]
		}
	}
	if session != "query_max_run_time=10m" {
		t.Errorf("the statement after SET SESSION carried X-Trino-Session %q", session)
	}
	if o := got["paging"]; o.OK == nil || len(o.OK.Rows) != 5000 || o.OK.Rows[4999][0] != float64(5000) || o.OK.Pages < 50 {
		t.Errorf("paging: %d rows in %d pages, error %+v", len(o.OK.Rows), o.OK.Pages, o.Error)
	}
}

// The npm trino-client's cancel (a DELETE of /v1/query/{id}) in the middle of a result stops the
// query on PostgreSQL and in the server, which holds it only to tell a client still polling.
func TestNPMTrinoClientCancelStopsTheEngine(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	backend := postgresBackendAt(t, dbURL)
	ts := startServer(t, backend, Options{PageRows: 10, BufferedRowsMax: 20})
	got := runNPM(t, ts.addr, "alice",
		npmStep{Name: "cancel", SQL: "select g, pg_sleep(0.001) /* qf-npm-cancel */ from generate_series(1, 1000000) g", Cancel: true})
	if o := got["cancel"]; o.OK == nil || o.OK.Cancelled == "" {
		t.Fatalf("cancel: %+v %+v", o.OK, o.Error)
	}
	waitOnlyKilled(t, ts, "the cancelled query still runs")
	waitEngineIdle(t, dbURL, "qf-npm-cancel")
}

// waitEngineIdle waits up to 10s until no statement containing marker runs on the PostgreSQL
// database at dbURL, failing t otherwise.
func waitEngineIdle(t *testing.T, dbURL, marker string) {
	t.Helper()
	admin, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := admin.QueryRow(context.Background(), `select count(*) from pg_stat_activity
			where query like '%' || $1 || '%' and state = 'active' and pid <> pg_backend_pid()`, marker).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the query marked %s still runs on PostgreSQL (%d)", marker, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A client that goes away in the middle of a result: the npm trino-client's process exits after
// its first rows, without a word to the server. The query is abandoned once it has not been
// polled for AbandonAfter (Trino's query.client.timeout), which stops it on PostgreSQL and frees
// the server's hold on it.
func TestNPMTrinoClientGoneMidResult(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	ts := startServer(t, postgresBackendAt(t, dbURL), Options{PageRows: 10, BufferedRowsMax: 20, AbandonAfter: 5 * time.Second})
	got := runNPM(t, ts.addr, "alice",
		npmStep{Name: "exit", SQL: "select g, pg_sleep(0.001) /* qf-npm-gone */ from generate_series(1, 1000000) g", Exit: true})
	if o := got["exit"]; o.OK == nil || o.OK.Read == 0 {
		t.Fatalf("exit: %+v %+v", o.OK, o.Error)
	}
	waitNoQueries(t, ts, "the abandoned query is still held")
	waitEngineIdle(t, dbURL, "qf-npm-gone")
}

// trino-go-client's rows.Close before the end of a result (a DELETE of /v1/query/{id}) stops the
// query on PostgreSQL at once.
func TestTrinoGoClientCloseMidResult(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	ts := startServer(t, postgresBackendAt(t, dbURL), Options{PageRows: 10, BufferedRowsMax: 20})
	db := openTrino(t, trino.Config{ServerURI: "http://bob@" + ts.addr})
	rows, err := db.Query("select g, pg_sleep(0.001) /* qf-go-close */ from generate_series(1, 1000000) g")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 15 && rows.Next(); i++ {
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	waitOnlyKilled(t, ts, "the closed query still runs")
	waitEngineIdle(t, dbURL, "qf-go-close")
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
