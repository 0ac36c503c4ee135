package flightsql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	_ "github.com/jackc/pgx/v5/stdlib"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/engine"
)

// ingestSchema is a table of the types ADBC clients load most.
var ingestSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
}, nil)

var ingestAt = time.Date(2024, 2, 29, 13, 14, 15, 123456000, time.UTC)

// ingestBatch is rows rows of ingestSchema with ids from first; every third row's nullable
// columns are null.
func ingestBatch(first, rows int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, ingestSchema)
	defer b.Release()
	for i := range rows {
		id := int64(first + i)
		b.Field(0).(*array.Int64Builder).Append(id)
		if id%3 == 0 {
			for c := 1; c < len(ingestSchema.Fields()); c++ {
				b.Field(c).AppendNull()
			}
			continue
		}
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("O'Brien \"%d\"", id))
		b.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64(id*100 + 50))
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(ingestAt.Add(time.Duration(id) * time.Second).UnixMicro()))
		b.Field(4).(*array.Date32Builder).Append(arrow.Date32FromTime(ingestAt.AddDate(0, 0, int(id))))
		b.Field(5).(*array.BinaryBuilder).Append([]byte{0, byte(id), 0xff})
		b.Field(6).(*array.Float64Builder).Append(float64(id) + 0.5)
		b.Field(7).(*array.BooleanBuilder).Append(id%2 == 0)
	}
	return b.NewRecordBatch()
}

// wantIngested is the text readBack reads for row id.
func wantIngested(id int) []string {
	if id%3 == 0 {
		return []string{fmt.Sprint(id), "(null)", "(null)", "(null)", "(null)", "(null)", "(null)", "(null)"}
	}
	return []string{fmt.Sprint(id), fmt.Sprintf("O'Brien \"%d\"", id), fmt.Sprintf("%d.50", id),
		ingestAt.Add(time.Duration(id) * time.Second).Format("2006-01-02 15:04:05.000000"),
		ingestAt.AddDate(0, 0, id).Format(time.DateOnly), fmt.Sprintf("00%02xff", id), fmt.Sprintf("%d.5", id),
		fmt.Sprint(id%2 == 0)}
}

// readBackSQL reads table as text the engine itself writes, the same on every engine.
func readBackSQL(spec engine.Spec, table string) string {
	flag := "CASE WHEN flag THEN 'true' WHEN NOT flag THEN 'false' END"
	switch spec.Kind {
	case "postgres":
		return "SELECT id, name, amount::text, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'), day::text, encode(bin, 'hex'), score::text, " + flag + " FROM " + table + " ORDER BY id"
	case "mysql":
		return "SELECT id, name, CAST(amount AS CHAR), DATE_FORMAT(at, '%Y-%m-%d %H:%i:%s.%f'), CAST(day AS CHAR), LOWER(HEX(bin)), CAST(score AS CHAR), " + flag + " FROM " + table + " ORDER BY id"
	}
	return "SELECT id, name, CAST(amount AS VARCHAR), strftime(at AT TIME ZONE 'UTC', '%Y-%m-%d %H:%M:%S.%f'), CAST(day AS VARCHAR), lower(hex(bin)), CAST(score AS VARCHAR), " + flag + " FROM " + table + " ORDER BY id"
}

// ingest streams batches into table through arrow-go's client.
func ingest(ctx context.Context, c *fsql.Client, opts *fsql.ExecuteIngestOpts, batches ...arrow.RecordBatch) (int64, error) {
	schema := ingestSchema
	if len(batches) > 0 {
		schema = batches[0].Schema()
	}
	rdr, err := array.NewRecordReader(schema, batches)
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	return c.ExecuteIngest(ctx, rdr, opts)
}

func ingestOpts(table string, ifNotExist fsql.TableDefinitionOptionsTableNotExistOption, ifExists fsql.TableDefinitionOptionsTableExistsOption) *fsql.ExecuteIngestOpts {
	return &fsql.ExecuteIngestOpts{Table: table, TableDefinitionOptions: &fsql.TableDefinitionOptions{IfNotExist: ifNotExist, IfExists: ifExists}}
}

var (
	create  = fsql.TableDefinitionOptionsTableNotExistOptionCreate
	noTable = fsql.TableDefinitionOptionsTableNotExistOptionFail
	fail    = fsql.TableDefinitionOptionsTableExistsOptionFail
	appends = fsql.TableDefinitionOptionsTableExistsOptionAppend
	replace = fsql.TableDefinitionOptionsTableExistsOptionReplace
)

func checkReadBack(t *testing.T, ctx context.Context, c *fsql.Client, spec engine.Spec, table string, ids ...int) {
	t.Helper()
	got := query1(t, ctx, c, readBackSQL(spec, table))
	if len(got) != len(ids) {
		t.Fatalf("%s holds %d rows, want %d: %v", table, len(got), len(ids), got)
	}
	for i, id := range ids {
		if want := wantIngested(id); fmt.Sprint(got[i]) != fmt.Sprint(want) {
			t.Fatalf("%s row %d:\n got %q\nwant %q", table, i, got[i], want)
		}
	}
}

func seq(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// TestIngestAsArrowGoUsesIt: arrow-go's ExecuteIngest (what ADBC's adbc_ingest sends) creates,
// appends to, replaces and refuses tables as the table definition options say, on PostgreSQL,
// DuckDB and MariaDB, and what the engine then holds, read back by the engine itself, is what
// was sent: NULLs, quotes, decimals, instants, dates, bytes, floats and booleans.
func TestIngestAsArrowGoUsesIt(t *testing.T) {
	for _, spec := range txEngines(t) {
		t.Run(spec.Kind, func(t *testing.T) {
			c := startServer(t, engineCore(t, spec), Options{Auth: passwords{"alice": "pw"}})
			ctx := login(t, c, "alice", "pw")

			n, err := ingest(ctx, c, ingestOpts("loaded", create, fail), ingestBatch(1, 4), ingestBatch(5, 3))
			if err != nil || n != 7 {
				t.Fatalf("create: %d, %v", n, err)
			}
			checkReadBack(t, ctx, c, spec, "loaded", seq(1, 7)...)

			_, err = ingest(ctx, c, ingestOpts("loaded", create, fail), ingestBatch(8, 1))
			wantCode(t, "create over a table that exists", err, codes.AlreadyExists)

			if n, err := ingest(ctx, c, ingestOpts("loaded", noTable, appends), ingestBatch(8, 2)); err != nil || n != 2 {
				t.Fatalf("append: %d, %v", n, err)
			}
			checkReadBack(t, ctx, c, spec, "loaded", seq(1, 9)...)

			if n, err := ingest(ctx, c, ingestOpts("loaded", create, replace), ingestBatch(20, 2)); err != nil || n != 2 {
				t.Fatalf("replace: %d, %v", n, err)
			}
			checkReadBack(t, ctx, c, spec, "loaded", 20, 21)

			_, err = ingest(ctx, c, ingestOpts("missing", noTable, appends), ingestBatch(1, 1))
			wantCode(t, "append to a missing table", err, codes.NotFound)
			_, err = ingest(ctx, c, ingestOpts("missing", noTable, replace), ingestBatch(1, 1))
			wantCode(t, "replace a missing table", err, codes.NotFound)
			_, err = ingest(ctx, c, ingestOpts("missing", noTable, fail), ingestBatch(1, 1))
			wantCode(t, "fail either way, missing", err, codes.NotFound)
			_, err = ingest(ctx, c, ingestOpts("loaded", noTable, fail), ingestBatch(1, 1))
			wantCode(t, "fail either way, existing", err, codes.AlreadyExists)

			if n, err := ingest(ctx, c, ingestOpts("fresh", create, appends), ingestBatch(1, 2)); err != nil || n != 2 {
				t.Fatalf("create or append, new: %d, %v", n, err)
			}
			if n, err := ingest(ctx, c, ingestOpts("fresh", create, appends), ingestBatch(3, 1)); err != nil || n != 1 {
				t.Fatalf("create or append, existing: %d, %v", n, err)
			}
			checkReadBack(t, ctx, c, spec, "fresh", 1, 2, 3)

			if n, err := ingest(ctx, c, ingestOpts("empty", create, fail), ingestBatch(1, 0)); err != nil || n != 0 {
				t.Fatalf("no rows: %d, %v", n, err)
			}
			checkReadBack(t, ctx, c, spec, "empty")
		})
	}
}

// TestIngestIntoACatalogAndSchema: the command's catalog and schema name where the table goes.
func TestIngestIntoACatalogAndSchema(t *testing.T) {
	for _, spec := range txEngines(t) {
		t.Run(spec.Kind, func(t *testing.T) {
			c := startServer(t, engineCore(t, spec), Options{Auth: passwords{"alice": "pw"}})
			ctx := login(t, c, "alice", "pw")
			catalog, schema := "", "ingest_s"
			switch spec.Kind {
			case "mysql": // a database is a schema; its catalog is def
				catalog, schema = "def", spec.Database
			case "postgres":
				catalog = query1(t, ctx, c, "SELECT current_database()")[0][0]
				mustUpdate(t, ctx, c, "CREATE SCHEMA ingest_s")
			case "duckdb":
				catalog = query1(t, ctx, c, "SELECT current_database()")[0][0]
				mustUpdate(t, ctx, c, "CREATE SCHEMA ingest_s")
			}
			opts := ingestOpts("placed", create, fail)
			opts.Catalog, opts.Schema = &catalog, &schema
			if n, err := ingest(ctx, c, opts, ingestBatch(1, 2)); err != nil || n != 2 {
				t.Fatalf("ingest into %s.%s: %d, %v", catalog, schema, n, err)
			}
			checkReadBack(t, ctx, c, spec, schema+".placed", 1, 2)

			other := "no_such_catalog"
			opts.Catalog = &other
			if _, err := ingest(ctx, c, opts, ingestBatch(1, 1)); err == nil {
				t.Fatal("ingest into a catalog that does not exist succeeded")
			}
		})
	}
}

// TestIngestInATransaction: an ingest in the client's transaction is seen by others only once
// committed, never once rolled back; a temporary table lives in its transaction only, and one
// outside a transaction is refused.
func TestIngestInATransaction(t *testing.T) {
	for _, spec := range txEngines(t) {
		t.Run(spec.Kind, func(t *testing.T) {
			c := startServer(t, engineCore(t, spec), Options{Auth: passwords{"alice": "pw"}})
			ctx := login(t, c, "alice", "pw")
			if _, err := ingest(ctx, c, ingestOpts("loaded", create, fail), ingestBatch(1, 0)); err != nil {
				t.Fatal(err)
			}
			for _, commit := range []bool{false, true} {
				tx, err := c.BeginTransaction(ctx)
				if err != nil {
					t.Fatal(err)
				}
				opts := ingestOpts("loaded", noTable, appends)
				opts.TransactionId = tx.ID()
				n, err := ingest(ctx, c, opts, ingestBatch(1, 3))
				if err != nil || n != 3 {
					t.Fatalf("ingest in a transaction: %d, %v", n, err)
				}
				if got := count(t, ctx, c, "loaded"); got != "0" {
					t.Fatalf("outside the transaction before its end: %s rows", got)
				}
				info, err := tx.Execute(ctx, "SELECT count(*) FROM loaded")
				if err != nil {
					t.Fatal(err)
				}
				if _, rows := fetch(t, ctx, c, info); rows[0][0] != "3" {
					t.Fatalf("inside: %v", rows)
				}
				if commit {
					err = tx.Commit(ctx)
				} else {
					err = tx.Rollback(ctx)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			checkReadBack(t, ctx, c, spec, "loaded", 1, 2, 3)

			temp := ingestOpts("scratch", create, fail)
			temp.Temporary = true
			_, err := ingest(ctx, c, temp, ingestBatch(1, 1))
			wantCode(t, "temporary outside a transaction", err, codes.InvalidArgument)
			tx, err := c.BeginTransaction(ctx)
			if err != nil {
				t.Fatal(err)
			}
			temp.TransactionId = tx.ID()
			if n, err := ingest(ctx, c, temp, ingestBatch(1, 2)); err != nil || n != 2 {
				t.Fatalf("temporary in a transaction: %d, %v", n, err)
			}
			info, err := tx.Execute(ctx, "SELECT count(*) FROM scratch")
			if err != nil {
				t.Fatal(err)
			}
			if _, rows := fetch(t, ctx, c, info); rows[0][0] != "2" {
				t.Fatalf("temporary table inside: %v", rows)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			for range 3 { // whichever pooled connection answers, the table is gone
				if _, err := c.Execute(ctx, "SELECT count(*) FROM scratch"); err == nil {
					t.Fatal("a temporary table outlived its transaction")
				}
			}

			// A temporary table replaced never reaches a permanent one of its name.
			tx, err = c.BeginTransaction(ctx)
			if err != nil {
				t.Fatal(err)
			}
			temp = ingestOpts("loaded", create, replace)
			temp.Temporary, temp.TransactionId = true, tx.ID()
			if n, err := ingest(ctx, c, temp, ingestBatch(1, 1)); err != nil || n != 1 {
				t.Fatalf("temporary replace in a transaction: %d, %v", n, err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			checkReadBack(t, ctx, c, spec, "loaded", 1, 2, 3)
		})
	}
}

// TestIngestFailingHalfWayLeavesNothing: a batch the engine refuses (a duplicate key) after
// one it took rolls the whole ingest back, and the count says nothing was ingested.
func TestIngestFailingHalfWayLeavesNothing(t *testing.T) {
	for _, spec := range txEngines(t) {
		t.Run(spec.Kind, func(t *testing.T) {
			c := startServer(t, engineCore(t, spec), Options{Auth: passwords{"alice": "pw"}})
			ctx := login(t, c, "alice", "pw")
			mustUpdate(t, ctx, c, "CREATE TABLE keyed (id BIGINT PRIMARY KEY, name TEXT, amount DECIMAL(10,2), at "+
				map[string]string{"postgres": "timestamptz", "mysql": "DATETIME(6)", "duckdb": "TIMESTAMPTZ"}[spec.Kind]+
				", day DATE, bin "+map[string]string{"postgres": "bytea", "mysql": "BLOB", "duckdb": "BLOB"}[spec.Kind]+
				", score DOUBLE PRECISION, flag BOOLEAN)")
			n, err := ingest(ctx, c, ingestOpts("keyed", noTable, appends), ingestBatch(1, 3), ingestBatch(3, 2))
			if err == nil || n != 0 {
				t.Fatalf("a duplicate key: %d, %v", n, err)
			}
			if got := count(t, ctx, c, "keyed"); got != "0" {
				t.Fatalf("after a failed ingest the table holds %s rows", got)
			}
		})
	}
}

// TestIngestRefusesTypesTheEngineCannotStore: a column no engine type fits is refused before
// anything runs, with the column named.
func TestIngestRefusesTypesTheEngineCannotStore(t *testing.T) {
	for _, spec := range txEngines(t) {
		t.Run(spec.Kind, func(t *testing.T) {
			c := startServer(t, engineCore(t, spec), Options{Auth: passwords{"alice": "pw"}})
			ctx := login(t, c, "alice", "pw")
			bad := []arrow.Field{
				{Name: "shape", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32})},
				{Name: "lookup", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32)},
				{Name: "wide", Type: &arrow.Decimal256Type{Precision: 76, Scale: 2}},
				{Name: "nothing", Type: arrow.Null},
			}
			if spec.Kind == "mysql" {
				bad = append(bad, arrow.Field{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String)})
			}
			for _, f := range bad {
				schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, f}, nil)
				b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
				b.Field(0).(*array.Int64Builder).Append(1)
				b.Field(1).AppendNull()
				rec := b.NewRecordBatch()
				b.Release()
				_, err := ingest(ctx, c, ingestOpts("typed", create, fail), rec)
				if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `column "`+f.Name+`"`) {
					t.Fatalf("%s %s: %v", f.Name, f.Type, err)
				}
			}
			if _, err := c.Execute(ctx, "SELECT * FROM typed"); err == nil {
				t.Fatal("a refused ingest created its table")
			}
		})
	}
}

// genReader makes batches as the client sends them (nothing holds the whole stream), calling
// before(i) ahead of batch i.
type genReader struct {
	schema  *arrow.Schema
	batches int
	make    func(i int) arrow.RecordBatch
	before  func(i int)
	at      int
	cur     arrow.RecordBatch
}

func (g *genReader) Retain()                        {}
func (g *genReader) Release()                       { g.drop() }
func (g *genReader) Schema() *arrow.Schema          { return g.schema }
func (g *genReader) RecordBatch() arrow.RecordBatch { return g.cur }
func (g *genReader) Record() arrow.RecordBatch      { return g.cur }
func (g *genReader) Err() error                     { return nil }
func (g *genReader) drop() {
	if g.cur != nil {
		g.cur.Release()
		g.cur = nil
	}
}

func (g *genReader) Next() bool {
	g.drop()
	if g.at >= g.batches {
		return false
	}
	if g.before != nil {
		g.before(g.at)
	}
	g.cur = g.make(g.at)
	g.at++
	return true
}

// TestIngestHoldsOneSlotAndStreams: an ingest holds one capacity slot of its cluster from its
// first statement to its end, and inserts each batch as it comes: while the client waits
// before its second batch the slot is held and (PostgreSQL) the engine has run the first
// batch's INSERT. A large ingest then goes through whole.
func TestIngestHoldsOneSlotAndStreams(t *testing.T) {
	for _, spec := range txEngines(t) {
		t.Run(spec.Kind, func(t *testing.T) {
			core := engineCoreCap(t, spec, 1)
			c := startServer(t, core, Options{Auth: passwords{"alice": "pw"}})
			ctx := login(t, c, "alice", "pw")
			paused, resume := make(chan struct{}), make(chan struct{})
			g := &genReader{schema: ingestSchema, batches: 3, make: func(i int) arrow.RecordBatch { return ingestBatch(i*10+1, 10) },
				before: func(i int) {
					if i == 1 {
						close(paused)
						<-resume
					}
				}}
			done := make(chan error, 1)
			var n int64
			go func() {
				var err error
				n, err = c.ExecuteIngest(ctx, g, &fsql.ExecuteIngestOpts{Table: "streamed", TableDefinitionOptions: &fsql.TableDefinitionOptions{IfNotExist: create, IfExists: fail}})
				done <- err
			}()
			<-paused
			// The first batch's rows are in the ingest's open transaction on the engine (so it
			// was inserted before the next was sent), and its slot is held meanwhile.
			switch spec.Kind {
			case "postgres":
				waitFor(t, "the first batch's INSERT on the engine", engineSays(t, "pgx", spec.Endpoint,
					"SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'idle in transaction' AND query LIKE 'INSERT INTO%'"))
			default:
				waitFor(t, "the ingest's slot", func() bool { return core.Running(spec.Name) == 1 })
			}
			if got := core.Running(spec.Name); got != 1 {
				t.Fatalf("between batches the ingest holds %d slots, want 1", got)
			}
			close(resume)
			if err := <-done; err != nil || n != 30 {
				t.Fatalf("ingest: %d, %v", n, err)
			}
			if got := core.Running(spec.Name); got != 0 {
				t.Fatalf("after the ingest %d slots are held", got)
			}
			checkReadBack(t, ctx, c, spec, "streamed", seq(1, 30)...)

			// Large: batches far past what one INSERT takes, made as they are sent.
			const batches, rows = 40, 2_500
			big := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String}}, nil)
			g = &genReader{schema: big, batches: batches, make: func(i int) arrow.RecordBatch {
				b := array.NewRecordBuilder(memory.DefaultAllocator, big)
				defer b.Release()
				for r := range rows {
					b.Field(0).(*array.Int64Builder).Append(int64(i*rows + r))
					b.Field(1).(*array.StringBuilder).Append(strings.Repeat("x", r%17))
				}
				return b.NewRecordBatch()
			}}
			n, err := c.ExecuteIngest(ctx, g, &fsql.ExecuteIngestOpts{Table: "big", TableDefinitionOptions: &fsql.TableDefinitionOptions{IfNotExist: create, IfExists: fail}})
			if err != nil || n != batches*rows {
				t.Fatalf("large ingest: %d, %v", n, err)
			}
			got := query1(t, ctx, c, "SELECT count(*), sum(id), count(DISTINCT id) FROM big")
			if want := fmt.Sprint([][]string{{fmt.Sprint(batches * rows), fmt.Sprint(batches * rows * (batches*rows - 1) / 2), fmt.Sprint(batches * rows)}}); fmt.Sprint(got) != want {
				t.Fatalf("large ingest holds %v, want %v", got, want)
			}
		})
	}
}

// waitFor polls cond (the ingest runs on other goroutines) for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 1000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("never saw %s", what)
}

// engineSays is a condition for waitFor: the count sql answers on a connection of the engine
// itself (database/sql's driver name, dsn) is not zero.
func engineSays(t *testing.T, driver, dsn, sqlText string) func() bool {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return func() bool {
		var n int
		if err := db.QueryRow(sqlText).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
}
