package mysqlengine

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/query"
)

// testDatabase creates a fresh MariaDB database and returns how to reach it, and its name.
func testDatabase(t testing.TB) (*mysql.Config, string) {
	t.Helper()
	dsn, name := mytest.NewDatabase(t)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, name
}

// openTestEngine opens an engine on a fresh MariaDB database.
func openTestEngine(t *testing.T) (*Engine, string) {
	t.Helper()
	cfg, name := testDatabase(t)
	e, err := Open(Config{Name: "test", Addr: cfg.Addr, User: cfg.User, Password: cfg.Passwd, Database: name, BatchRows: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, name
}

func exec(t *testing.T, e *Engine, sql string, args ...any) string {
	t.Helper()
	rows, err := e.Execute(context.Background(), &query.Request{SQL: sql, Args: args})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	for {
		if _, err := rows.Next(context.Background()); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	return rows.Tag()
}

// collect reads every batch into strings per column value (arrow ValueStr), row-major.
func collect(t *testing.T, rows query.Rows) [][]string {
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

func TestTypesMapToArrow(t *testing.T) {
	e, _ := openTestEngine(t)
	exec(t, e, `CREATE TABLE t (
		i8 TINYINT, u8 TINYINT UNSIGNED, i16 SMALLINT, i32 INT, u32 INT UNSIGNED, i64 BIGINT, u64 BIGINT UNSIGNED,
		f FLOAT, d DOUBLE, dec1 DECIMAL(10,2), dec2 DECIMAL(50,5), vc VARCHAR(20), tx TEXT, bl BLOB, vb VARBINARY(8),
		dt DATE, dtt DATETIME(6), ts TIMESTAMP NULL, tm TIME, js JSON, n INT)`)
	if tag := exec(t, e, `INSERT INTO t VALUES (-8, 250, -16000, -2000000000, 4000000000, -9000000000000000000, 18000000000000000000,
		1.5, 2.25, 12345678.91, 123456789012345678901234567890123456789012345.12345, 'héllo', 'long text', X'00FF', X'0102',
		'2024-02-29', '2024-02-29 13:14:15.123456', '2024-03-01 00:00:01', '12:34:56', '{"a": 1}', NULL)`); tag != "INSERT 0 1" {
		t.Fatalf("insert tag %q", tag)
	}
	rows, err := e.Execute(context.Background(), &query.Request{SQL: "SELECT * FROM t"})
	if err != nil {
		t.Fatal(err)
	}
	wantTypes := []arrow.DataType{
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32,
		arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Uint64,
		arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64,
		&arrow.Decimal128Type{Precision: 10, Scale: 2}, &arrow.Decimal256Type{Precision: 50, Scale: 5},
		arrow.BinaryTypes.String, arrow.BinaryTypes.String, arrow.BinaryTypes.Binary, arrow.BinaryTypes.Binary,
		arrow.FixedWidthTypes.Date32, &arrow.TimestampType{Unit: arrow.Microsecond},
		&arrow.TimestampType{Unit: arrow.Second, TimeZone: "UTC"}, arrow.FixedWidthTypes.Time32s,
		arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32,
	}
	s := rows.Schema()
	for i, want := range wantTypes {
		if got := s.Field(i).Type; !arrow.TypeEqual(got, want) {
			t.Errorf("column %s: type %s, want %s", s.Field(i).Name, got, want)
		}
	}
	got := collect(t, rows)
	want := []string{"-8", "250", "-16000", "-2000000000", "4000000000", "-9000000000000000000", "18000000000000000000",
		"1.5", "2.25", "12345678.91", "123456789012345678901234567890123456789012345.12345", "héllo", "long text",
		"AP8=", "AQI=", "2024-02-29", "2024-02-29T13:14:15.123456", "2024-03-01T00:00:01Z", "12:34:56", `{"a": 1}`, "(null)"}
	if len(got) != 1 {
		t.Fatalf("rows: %v", got)
	}
	for i := range want {
		if got[0][i] != want[i] {
			t.Errorf("column %s: %q, want %q", s.Field(i).Name, got[0][i], want[i])
		}
	}
}

func TestBatchesAndPreparedArgs(t *testing.T) {
	e, _ := openTestEngine(t)
	exec(t, e, "CREATE TABLE n (i INT PRIMARY KEY, s VARCHAR(10))")
	for i := 0; i < 5; i++ {
		exec(t, e, "INSERT INTO n VALUES (?, ?)", i, strings.Repeat("x", i))
	}
	rows, err := e.Execute(context.Background(), &query.Request{SQL: "SELECT i, s FROM n WHERE i >= ? ORDER BY i", Args: []any{1}})
	if err != nil {
		t.Fatal(err)
	}
	batches := 0
	var got []string
	for {
		b, err := rows.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		batches++
		for i := 0; i < int(b.NumRows()); i++ {
			got = append(got, b.Column(0).ValueStr(i)+":"+b.Column(1).ValueStr(i))
		}
	}
	rows.Close()
	if strings.Join(got, ",") != "1:x,2:xx,3:xxx,4:xxxx" {
		t.Fatalf("got %v", got)
	}
	if batches != 2 { // BatchRows is 2
		t.Fatalf("batches = %d, want 2", batches)
	}
	if rows.Tag() != "SELECT 4" {
		t.Fatalf("tag %q", rows.Tag())
	}
}

func TestErrorsCarrySQLSTATE(t *testing.T) {
	e, _ := openTestEngine(t)
	_, err := e.Execute(context.Background(), &query.Request{SQL: "SELEC 1"})
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != "42000" {
		t.Fatalf("syntax error: %v", err)
	}
	_, err = e.Execute(context.Background(), &query.Request{SQL: "SELECT * FROM missing_table"})
	if !errors.As(err, &qe) || qe.Code != "42S02" || !strings.Contains(qe.Message, "1146") {
		t.Fatalf("missing table: %v", err)
	}
	// The connection survives errors: the next query works.
	if got := collect(t, mustExec(t, e, "SELECT 40+2")); got[0][0] != "42" {
		t.Fatalf("after error: %v", got)
	}
}

func mustExec(t *testing.T, e *Engine, sql string) query.Rows {
	t.Helper()
	rows, err := e.Execute(context.Background(), &query.Request{SQL: sql})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestCancelStopsQuery(t *testing.T) {
	e, _ := openTestEngine(t)
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	rows, err := e.Execute(ctx, &query.Request{SQL: "SELECT SLEEP(30)"})
	if err == nil {
		_, err = rows.Next(ctx)
		rows.Close()
	}
	if err == nil {
		t.Fatal("cancelled query succeeded")
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("cancel took %s", time.Since(start))
	}
	// Early Close of a large result frees the connection for the next query.
	rows = mustExec(t, e, "SELECT seq FROM seq_1_to_100000")
	if _, err := rows.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if got := collect(t, mustExec(t, e, "SELECT 1")); got[0][0] != "1" {
		t.Fatalf("after close: %v", got)
	}
}

func TestOpenSpec(t *testing.T) {
	cfg, name := testDatabase(t)
	eng, err := OpenSpec(engine.Spec{Name: "m", Kind: "mysql", Endpoint: cfg.Addr, User: cfg.User, Database: name})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if err := eng.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestMaxConnsCapsConcurrency runs 6 queries of 200ms on an engine capped at 2 connections:
// they run in 3 waves, so they cannot all be done in under 600ms.
func TestMaxConnsCapsConcurrency(t *testing.T) {
	cfg, name := testDatabase(t)
	e, err := Open(Config{Name: "capped", Addr: cfg.Addr, User: cfg.User, Password: cfg.Passwd, Database: name, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	start := time.Now()
	errs := make(chan error, 6)
	for i := 0; i < 6; i++ {
		go func() {
			rows, err := e.Execute(context.Background(), &query.Request{SQL: "SELECT SLEEP(0.2)"})
			if err == nil {
				_, err = rows.Next(context.Background())
				rows.Close()
			}
			errs <- err
		}()
	}
	for i := 0; i < 6; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if elapsed := time.Since(start); elapsed < 600*time.Millisecond {
		t.Fatalf("6 × 200ms on 2 connections took %s: the cap did not hold", elapsed)
	}
}

// TestOpenTransactionIsNotReused: a BEGIN with no COMMIT must not leak into the next request
// on the pooled connection.
func TestOpenTransactionIsNotReused(t *testing.T) {
	e, _ := openTestEngine(t)
	exec(t, e, "CREATE TABLE x (i INT) ENGINE=InnoDB")
	exec(t, e, "BEGIN")
	exec(t, e, "INSERT INTO x VALUES (1)")
	// The BEGIN's connection was dropped (rolling back nothing), so the INSERT autocommitted on
	// another one, and no connection is left inside a transaction.
	got := collect(t, mustExec(t, e, "SELECT COUNT(*), @@in_transaction FROM x"))
	if got[0][0] != "1" || got[0][1] != "0" {
		t.Fatalf("count %s in_transaction %s: a transaction leaked across requests", got[0][0], got[0][1])
	}
}

func TestSessionStateDoesNotLeak(t *testing.T) {
	e, _ := openTestEngine(t)
	exec(t, e, "SET @leak = 42")
	if got := collect(t, mustExec(t, e, "SELECT @leak IS NULL")); got[0][0] != "1" {
		t.Fatalf("a session variable leaked to the next request: %v", got)
	}
}

func TestSessionPinsATransaction(t *testing.T) {
	e, _ := openTestEngine(t)
	exec(t, e, "CREATE TABLE acct (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
	ctx := context.Background()
	run := func(s engine.Session, sql string) {
		t.Helper()
		rows, err := s.Execute(ctx, &query.Request{SQL: sql})
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		collect(t, rows)
	}
	count := func() string { return collect(t, mustExec(t, e, "SELECT COUNT(*) FROM acct"))[0][0] }

	s, err := e.OpenSession(ctx, &query.Request{SQL: "BEGIN"})
	if err != nil {
		t.Fatal(err)
	}
	run(s, "BEGIN")
	if s.TxStatus() != 'T' {
		t.Fatalf("after BEGIN: %c", s.TxStatus())
	}
	run(s, "INSERT INTO acct VALUES (1, 10)")
	if count() != "0" { // other connections do not see it yet
		t.Fatal("uncommitted row visible outside the session")
	}
	run(s, "ROLLBACK")
	if s.TxStatus() != 'I' || count() != "0" {
		t.Fatalf("after ROLLBACK: %c, %s rows", s.TxStatus(), count())
	}
	run(s, "START TRANSACTION")
	run(s, "INSERT INTO acct VALUES (2, 20)")
	run(s, "COMMIT")
	if s.TxStatus() != 'I' || count() != "1" {
		t.Fatalf("after COMMIT: %c, %s rows", s.TxStatus(), count())
	}
	// Closing inside a transaction rolls it back.
	run(s, "BEGIN")
	run(s, "INSERT INTO acct VALUES (3, 30)")
	s.Close()
	if count() != "1" {
		t.Fatalf("after Close inside a transaction: %s rows", count())
	}
}

// TestFailedStatementKeepsItsTransaction: a statement the server refuses inside a pinned
// transaction (a duplicate key) leaves the transaction open, as on a direct connection: the
// next statements run in it, and COMMIT keeps them.
func TestFailedStatementKeepsItsTransaction(t *testing.T) {
	e, _ := openTestEngine(t)
	exec(t, e, "CREATE TABLE acct (id INT PRIMARY KEY) ENGINE=InnoDB")
	ctx := context.Background()
	s, err := e.OpenSession(ctx, &query.Request{SQL: "BEGIN"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := func(sql string) error {
		rows, err := s.Execute(ctx, &query.Request{SQL: sql})
		if err != nil {
			return err
		}
		collect(t, rows)
		return nil
	}
	for _, sql := range []string{"BEGIN", "INSERT INTO acct VALUES (1)"} {
		if err := run(sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	var qe *query.Error
	if err := run("INSERT INTO acct VALUES (1)"); !errors.As(err, &qe) || qe.Code != "23000" {
		t.Fatalf("a duplicate key: %v", err)
	}
	if st := s.TxStatus(); st != 'T' {
		t.Fatalf("after a refused statement: %c, want T (the transaction goes on)", st)
	}
	for _, sql := range []string{"INSERT INTO acct VALUES (2)", "COMMIT"} {
		if err := run(sql); err != nil {
			t.Fatalf("%s after a refused statement: %v", sql, err)
		}
	}
	if got := collect(t, mustExec(t, e, "SELECT COUNT(*) FROM acct")); got[0][0] != "2" {
		t.Fatalf("committed %s rows, want 2", got[0][0])
	}
}
