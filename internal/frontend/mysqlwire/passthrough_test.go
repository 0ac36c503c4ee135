package mysqlwire

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/netlimit"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

type coreSetup struct {
	noPassthrough bool
	noLoop        bool        // every statement on its session's goroutine (Options.NoEventLoop)
	tls           *tls.Config // the frontend's TLS for its clients (Options.TLS), if any
	cacheTTL      time.Duration
	check         func(req *query.Request, group string) error
	onFinish      func(proxy.Record) // called as each statement is reported, its slot free
	noRecords     bool               // the core keeps no records (a benchmark's allocations are the proxy's own)
	guard         capacity.Guard     // the core's capacity guard (nil: a local one)
	limits        netlimit.Limits    // the frontend's (Options.Limits)
	queryTimeout  time.Duration      // the group's (GroupSpec.QueryTimeout)
}

type coreFixture struct {
	addr   string // the proxy's MySQL listener
	dbName string
	dsn    string  // the MariaDB database's, for clients of the test's own
	direct *sql.DB // go-sql-driver straight to MariaDB, session time zone UTC like the engine's
	core   *proxy.Core
	hist   *frontendtest.Records
}

// coreServer serves a real proxy core over a fresh MariaDB database through this frontend.
func coreServer(t testing.TB, s coreSetup) *coreFixture {
	t.Helper()
	eng, dsn, name := frontendtest.MariaDB(t)
	// As a daemon's first health check does: the engine then knows that its server offers
	// extended metadata, and the frontend offers it to its clients (metadata.go).
	if err := eng.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	f := serveCore(t, "maria", eng, s)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Params = map[string]string{"time_zone": "'+00:00'"}
	direct, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	f.dbName, f.dsn, f.direct = name, dsn, direct
	return f
}

// serveCore serves a real proxy core over eng (its only cluster, named cluster) through this
// frontend.
func serveCore(t testing.TB, cluster string, eng query.Engine, s coreSetup) *coreFixture {
	t.Helper()
	h := &frontendtest.Records{}
	onFinish := func(r *proxy.Record) {
		h.Add(r)
		if s.onFinish != nil {
			s.onFinish(*r)
		}
	}
	if s.noRecords {
		onFinish = nil
	}
	core := proxy.New(proxy.Options{
		Env: env.Real(slog.New(slog.DiscardHandler)), Registerer: prometheus.NewRegistry(),
		OnFinish: onFinish, Check: s.check, Guard: s.guard,
	})
	rt, err := proxy.NewRuntime(proxy.RuntimeSpec{
		Clusters:      []proxy.ClusterSpec{{Name: cluster, Enabled: true, MaxRunningQueries: 8, Engine: eng}},
		Groups:        []proxy.GroupSpec{{Name: "main", Members: []proxy.MemberSpec{{Cluster: cluster}}, MaxQueuedQueries: 100, QueryTimeout: s.queryTimeout, Cache: proxy.CacheSpec{TTL: s.cacheTTL}}},
		Fallback:      "main",
		NoPassthrough: s.noPassthrough,
	})
	if err != nil {
		t.Fatal(err)
	}
	core.Activate(rt)
	opts := Options{NoEventLoop: s.noLoop, Limits: s.limits}
	if s.tls != nil {
		opts.TLS = frontendtest.Static(s.tls)
	}
	return &coreFixture{addr: startServer(t, core, opts), core: core, hist: h}
}

// answer is everything a text-protocol client sees of a statement.
type answer struct {
	cols     []string // name, type name, nullable, length, precision/scale
	rows     [][]string
	affected int64
	insertID int64
	errNum   uint16
	errState string
	errMsg   string
}

func textAnswer(t *testing.T, d *sql.DB, q string) answer {
	t.Helper()
	var a answer
	rows, err := d.Query(q)
	if err != nil {
		return errAnswer(t, err)
	}
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	if err != nil {
		t.Fatal(err)
	}
	for _, ct := range cts {
		nullable, _ := ct.Nullable()
		length, _ := ct.Length()
		prec, scale, _ := ct.DecimalSize()
		a.cols = append(a.cols, fmt.Sprintf("%s %s null=%v len=%d dec=%d,%d %v", ct.Name(), ct.DatabaseTypeName(), nullable, length, prec, scale, ct.ScanType()))
	}
	for rows.Next() {
		vals := make([]sql.RawBytes, len(cts))
		ptrs := make([]any, len(cts))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(vals))
		for i, v := range vals {
			row[i] = strconv.Quote(string(v))
			if v == nil {
				row[i] = "NULL"
			}
		}
		a.rows = append(a.rows, row)
	}
	if err := rows.Err(); err != nil {
		return errAnswer(t, err)
	}
	return a
}

func execAnswer(t *testing.T, d *sql.DB, q string) answer {
	t.Helper()
	res, err := d.Exec(q)
	if err != nil {
		return errAnswer(t, err)
	}
	var a answer
	a.affected, _ = res.RowsAffected()
	a.insertID, _ = res.LastInsertId()
	return a
}

func errAnswer(t *testing.T, err error) answer {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		t.Fatalf("not a MySQL error: %v", err)
	}
	return answer{errNum: me.Number, errState: string(me.SQLState[:]), errMsg: me.Message}
}

// allTypesTable holds every MySQL column type the engine maps, and a row of NULLs.
const allTypesTable = `CREATE TABLE alltypes (
	id INT AUTO_INCREMENT PRIMARY KEY,
	i8 TINYINT, u8 TINYINT UNSIGNED, i16 SMALLINT, u16 SMALLINT UNSIGNED, i24 MEDIUMINT, u24 MEDIUMINT UNSIGNED,
	i32 INT, u32 INT UNSIGNED, i64 BIGINT, u64 BIGINT UNSIGNED, b1 BOOLEAN, bits BIT(12),
	f FLOAT, d DOUBLE, dec1 DECIMAL(10,2), dec2 DECIMAL(50,5), yr YEAR,
	ch CHAR(5), vc VARCHAR(20), tt TINYTEXT, tx TEXT, mt MEDIUMTEXT, lt LONGTEXT,
	bn BINARY(3), vb VARBINARY(8), tb TINYBLOB, bl BLOB, mb MEDIUMBLOB, lb LONGBLOB,
	en ENUM('a','b'), st SET('x','y'), dt DATE, dtt DATETIME(6), dt0 DATETIME, ts TIMESTAMP NULL, ts3 TIMESTAMP(3) NULL,
	tm TIME, tm6 TIME(6), js JSON, geo POINT NULL)`

const allTypesRow = `INSERT INTO alltypes (i8,u8,i16,u16,i24,u24,i32,u32,i64,u64,b1,bits,f,d,dec1,dec2,yr,ch,vc,tt,tx,mt,lt,bn,vb,tb,bl,mb,lb,en,st,dt,dtt,dt0,ts,ts3,tm,tm6,js,geo)
	VALUES (-8, 250, -16000, 65000, -8000000, 16000000, -2000000000, 4000000000, -9000000000000000000, 18000000000000000000,
	TRUE, b'101010101010', 1.5, 2.25, 12345678.91, 123456789012345678901234567890123456789012345.12345, 2024,
	'ab', 'héllo', 'tiny', 'long text', 'medium', 'longest', X'00FF01', X'0102', X'03', X'00FF', X'AABB', X'CC',
	'b', 'x,y', '2024-02-29', '2024-02-29 13:14:15.123456', '1999-12-31 23:59:59', '2024-03-01 00:00:01', '2024-03-01 00:00:01.250',
	'-838:59:59', '12:34:56.000001', '{"a": [1, "two", null]}', POINT(1.5, -2))`

// TestPassthroughSameAsDirect: every mapped type, expressions, empty results, statements
// without rows and errors look the same through the passthrough path as straight from
// MariaDB (go-sql-driver, text protocol), and every query took the passthrough path.
func TestPassthroughSameAsDirect(t *testing.T) {
	f := coreServer(t, coreSetup{})
	proxied := openDB(t, f.addr, testUser, "", f.dbName, "")
	for _, ddl := range []string{allTypesTable, "CREATE TABLE alltypes_direct LIKE alltypes"} {
		if _, err := f.direct.Exec(ddl); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		exec bool
		sql  string
	}{
		{true, allTypesRow},
		{true, "INSERT INTO alltypes (id) VALUES (NULL)"},
		{false, "SELECT * FROM alltypes ORDER BY id"},
		{false, "SELECT 1, -1.5e300, 'x', NULL, 18446744073709551615, CAST(2.5 AS DECIMAL(4,2)), DATE '2020-01-02', X'DEADBEEF', 1=1"},
		{false, "SELECT * FROM alltypes WHERE id < 0"},
		{false, "SELECT REPEAT('z', 70000) AS big, CONCAT('a', NULL)"},
		{true, "UPDATE alltypes SET vc = 'changed' WHERE id > 0"},
		{false, "SELECT vc FROM alltypes"},
		{false, "SELECT * FROM no_such_table"},
		{false, "SELEKT 1"},
		{true, "DELETE FROM alltypes WHERE b1 IS NULL"},
	}
	for i, s := range steps {
		// Writes go through the proxy to alltypes and directly to its twin (same affected
		// rows and insert ids); reads compare alltypes from both sides.
		before := f.core.Paths()
		var want, got answer
		if s.exec {
			want = execAnswer(t, f.direct, strings.Replace(s.sql, "alltypes", "alltypes_direct", 1))
			got = execAnswer(t, proxied, s.sql)
		} else {
			want = textAnswer(t, f.direct, s.sql)
			got = textAnswer(t, proxied, s.sql)
		}
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
			t.Errorf("step %d %q differs\n got %+v\nwant %+v", i, s.sql, got, want)
		}
		if os.Getenv("QF_DEBUG") != "" {
			t.Logf("step %d: %+v", i, got)
		}
		after := f.core.Paths()
		if after.Passthrough != before.Passthrough+1 || after.Arrow != before.Arrow {
			t.Errorf("step %d: paths before %+v after %+v: want one passthrough query", i, before, after)
		}
	}
}

// TestArrowPathForcedAndCache: settings.passthrough false and a cached group take the Arrow
// path, and prepared statements stay on it too.
func TestArrowPathForcedAndCache(t *testing.T) {
	for _, s := range []coreSetup{{noPassthrough: true}, {cacheTTL: time.Minute}} {
		f := coreServer(t, s)
		proxied := openDB(t, f.addr, testUser, "", f.dbName, "")
		q := "SELECT 1 AS one, 'x' AS x"
		if got, want := textAnswer(t, proxied, q), textAnswer(t, f.direct, q); fmt.Sprint(got.rows) != fmt.Sprint(want.rows) {
			t.Fatalf("%+v: rows %v, want %v", s, got.rows, want.rows)
		}
		if p := f.core.Paths(); p.Passthrough != 0 || p.Arrow+p.Cache == 0 {
			t.Fatalf("%+v: paths %+v, want no passthrough", s, p)
		}
	}
	f := coreServer(t, coreSetup{})
	proxied := openDB(t, f.addr, testUser, "", f.dbName, "")
	var n int
	if err := proxied.QueryRow("SELECT ? + 1", 41).Scan(&n); err != nil || n != 42 {
		t.Fatalf("prepared: %d, %v", n, err)
	}
	if p := f.core.Paths(); p.Passthrough != 1 || p.Arrow != 0 {
		t.Fatalf("prepared statement paths %+v, want a relay", p)
	}
}

// TestPassthroughHistoryAndChecks: history gets the relayed rows and their wire bytes (the
// text-protocol row payloads), and Check still refuses on the passthrough path.
func TestPassthroughHistoryAndChecks(t *testing.T) {
	denied := &query.Error{Code: query.CodeAccessDenied, Message: "no secrets"}
	f := coreServer(t, coreSetup{check: func(req *query.Request, group string) error {
		if strings.Contains(req.SQL, "secret") {
			return denied
		}
		return nil
	}})
	proxied := openDB(t, f.addr, testUser, "", f.dbName, "")
	if _, err := f.direct.Exec("CREATE TABLE n (i INT, s VARCHAR(20))"); err != nil {
		t.Fatal(err)
	}
	var wantBytes int64
	for i := 1; i <= 300; i++ {
		s := "row-" + strconv.Itoa(i)
		if _, err := f.direct.Exec("INSERT INTO n VALUES (?, ?)", i, s); err != nil {
			t.Fatal(err)
		}
		wantBytes += int64(1 + len(strconv.Itoa(i)) + 1 + len(s)) // length-encoded values
	}
	q := "SELECT i, s FROM n ORDER BY i"
	if got := textAnswer(t, proxied, q); len(got.rows) != 300 {
		t.Fatalf("%d rows", len(got.rows))
	}
	recs := f.hist.Find(q)
	if len(recs) != 1 {
		t.Fatalf("history: %d records for %q", len(recs), q)
	}
	if r := recs[0]; r.Rows != 300 || r.Bytes != wantBytes || r.Status != proxy.StatusSucceeded || r.Cluster != "maria" {
		t.Fatalf("history record %+v: want 300 rows, %d bytes, succeeded on maria", r, wantBytes)
	}
	got := textAnswer(t, proxied, "SELECT 'secret'")
	if got.errNum != 1227 || !strings.Contains(got.errMsg, "no secrets") {
		t.Fatalf("refused query: %+v", got)
	}
	if p := f.core.Paths(); p.Passthrough != 1 || p.Arrow != 0 {
		t.Fatalf("paths %+v", p)
	}
}

// runningSession waits for a session of the server at addr to run a statement and returns its
// proxy connection id.
func runningSession(t *testing.T, addr string) uint32 {
	t.Helper()
	s := serverOf(t, addr)
	running := func() uint32 {
		s.mu.Lock()
		defer s.mu.Unlock()
		for cid, h := range s.sessions {
			h.mu.Lock()
			busy := h.cancel != nil
			h.mu.Unlock()
			if busy {
				return cid
			}
		}
		return 0
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cid := running(); cid != 0 {
			return cid
		}
	}
	t.Fatal("no session runs a statement")
	return 0
}

// waitEngineIdle waits until MariaDB runs no statement containing marker.
func waitEngineIdle(t *testing.T, direct *sql.DB, marker string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); engineRuns(t, direct, marker) != 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the engine still runs %q", marker)
		}
	}
}

// TestPassthroughKillQuery: KILL QUERY from another client stops a relayed statement on the
// engine; the client gets 1317 and history a cancelled query.
func TestPassthroughKillQuery(t *testing.T) {
	f := coreServer(t, coreSetup{})
	proxied := openDB(t, f.addr, testUser, "", f.dbName, "")
	proxied.SetMaxOpenConns(2)
	q := "SELECT SLEEP(30) AS kill_me"
	done := make(chan error, 1)
	go func() {
		_, err := proxied.Exec(q)
		done <- err
	}()
	if _, err := proxied.Exec(fmt.Sprintf("KILL QUERY %d", runningSession(t, f.addr))); err != nil {
		t.Fatal(err)
	}
	waitKilled(t, done)
	waitEngineIdle(t, f.direct, "kill_me")
	if p := f.core.Paths(); p.Passthrough < 1 || p.Arrow != 0 {
		t.Fatalf("paths %+v", p)
	}
	if recs := f.hist.Find(q); len(recs) != 1 || recs[0].Status != proxy.StatusCancelled {
		t.Fatalf("history %+v", recs)
	}
	// The pool still serves.
	if got := textAnswer(t, proxied, "SELECT 7"); fmt.Sprint(got.rows) != `[["7"]]` {
		t.Fatalf("after kill: %+v", got)
	}
}

// TestPassthroughHangupStopsEngine: a client that hangs up mid-statement (go-sql-driver closes
// the connection when the context ends) stops the statement on the engine.
func TestPassthroughHangupStopsEngine(t *testing.T) {
	f := coreServer(t, coreSetup{})
	proxied := openDB(t, f.addr, testUser, "", f.dbName, "")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := proxied.ExecContext(ctx, "SELECT SLEEP(30) AS hang_up"); err == nil {
		t.Fatal("statement outlived its context")
	}
	waitEngineIdle(t, f.direct, "hang_up")
	if p := f.core.Paths(); p.Passthrough != 1 {
		t.Fatalf("paths %+v", p)
	}
}

// TestPassthroughRowLargerThanAPacket: a row over 16 MiB arrives from the engine in several
// packets and is relayed as one row.
func TestPassthroughRowLargerThanAPacket(t *testing.T) {
	f := coreServer(t, coreSetup{})
	proxied := openDB(t, f.addr, testUser, "", f.dbName, "")
	var a, b string
	if err := proxied.QueryRow("SELECT REPEAT('a', 9000000), REPEAT('b', 9000000)").Scan(&a, &b); err != nil {
		t.Fatal(err)
	}
	if a != strings.Repeat("a", 9_000_000) || b != strings.Repeat("b", 9_000_000) {
		t.Fatalf("got %d and %d bytes", len(a), len(b))
	}
	if p := f.core.Paths(); p.Passthrough != 1 {
		t.Fatalf("paths %+v", p)
	}
	if recs := f.hist.Find("SELECT REPEAT('a', 9000000), REPEAT('b', 9000000)"); len(recs) != 1 || recs[0].Bytes < 18_000_000 {
		t.Fatalf("history %+v", recs)
	}
}
