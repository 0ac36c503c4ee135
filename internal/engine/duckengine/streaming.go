package duckengine

// A SELECT runs as a DuckDB streaming result: DuckDB produces the rows chunk by chunk as the
// client reads them, so the first row leaves before the last is computed and memory holds a few
// chunks whatever the result's size. go-duckdb only runs statements to a materialized result
// (all of it in memory before the first row is read), so this file starts the statement that
// go-duckdb prepared and bound through DuckDB's C API, and reads each chunk with go-duckdb's own
// value conversion: rows come out exactly as on the materialized path.
//
// go-duckdb keeps what this needs unexported: the C handles (the connection first in Conn, the
// prepared statement second in Stmt; handlesLayoutOK checks the layout by reflection, and nothing
// streams if it differs) and the chunk reader (linked by name below: a go-duckdb without it fails
// to build, it cannot misbehave). The DuckDB functions are declared weak: go-duckdb links the
// library, whose C API is one object, and streamingAvailable checks that each one resolved.

/*
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t idx_t;
typedef void *duckdb_connection;
typedef void *duckdb_prepared_statement;
typedef void *duckdb_pending_result;
typedef void *duckdb_data_chunk;
typedef void *duckdb_logical_type;
typedef struct {
	idx_t deprecated_column_count;
	idx_t deprecated_row_count;
	idx_t deprecated_rows_changed;
	void *deprecated_columns;
	char *deprecated_error_message;
	void *internal_data;
} duckdb_result;

extern int duckdb_pending_prepared_streaming(duckdb_prepared_statement, duckdb_pending_result *) __attribute__((weak));
extern int duckdb_execute_pending(duckdb_pending_result, duckdb_result *) __attribute__((weak));
extern const char *duckdb_pending_error(duckdb_pending_result) __attribute__((weak));
extern void duckdb_destroy_pending(duckdb_pending_result *) __attribute__((weak));
extern const char *duckdb_result_error(duckdb_result *) __attribute__((weak));
extern void duckdb_destroy_result(duckdb_result *) __attribute__((weak));
extern bool duckdb_result_is_streaming(duckdb_result) __attribute__((weak));
extern idx_t duckdb_column_count(duckdb_result *) __attribute__((weak));
extern const char *duckdb_column_name(duckdb_result *, idx_t) __attribute__((weak));
extern duckdb_logical_type duckdb_column_logical_type(duckdb_result *, idx_t) __attribute__((weak));
extern void duckdb_destroy_logical_type(duckdb_logical_type *) __attribute__((weak));
extern duckdb_data_chunk duckdb_fetch_chunk(duckdb_result) __attribute__((weak));
extern void duckdb_interrupt(duckdb_connection) __attribute__((weak));
extern idx_t duckdb_union_type_member_count(duckdb_logical_type) __attribute__((weak));
extern char *duckdb_union_type_member_name(duckdb_logical_type, idx_t) __attribute__((weak));
extern duckdb_logical_type duckdb_union_type_member_type(duckdb_logical_type, idx_t) __attribute__((weak));
extern void duckdb_free(void *) __attribute__((weak));
extern char *duckdb_logical_type_get_alias(duckdb_logical_type) __attribute__((weak));

static bool qf_unions_available(void) {
	return duckdb_union_type_member_count && duckdb_union_type_member_name && duckdb_union_type_member_type && duckdb_free;
}
static idx_t qf_union_members(duckdb_logical_type t) { return duckdb_union_type_member_count(t); }
static char *qf_union_member_name(duckdb_logical_type t, idx_t i) { return duckdb_union_type_member_name(t, i); }
static duckdb_logical_type qf_union_member_type(duckdb_logical_type t, idx_t i) { return duckdb_union_type_member_type(t, i); }
static void qf_free(void *p) { duckdb_free(p); }

// qf_is_json reports whether t is DuckDB's JSON type (an alias of VARCHAR).
static bool qf_is_json(duckdb_logical_type t) {
	if (!duckdb_logical_type_get_alias || !duckdb_free) return false;
	char *alias = duckdb_logical_type_get_alias(t);
	bool json = alias && strcmp(alias, "JSON") == 0;
	if (alias) duckdb_free(alias);
	return json;
}

static bool qf_available(void) {
	return duckdb_pending_prepared_streaming && duckdb_execute_pending && duckdb_pending_error &&
		duckdb_destroy_pending && duckdb_result_error && duckdb_destroy_result && duckdb_result_is_streaming &&
		duckdb_column_count && duckdb_column_name && duckdb_column_logical_type &&
		duckdb_destroy_logical_type && duckdb_fetch_chunk && duckdb_interrupt;
}

// qf_execute starts stmt as a streaming result; on failure it returns NULL and the error text
// (to free) in *err.
static duckdb_result *qf_execute(duckdb_prepared_statement stmt, char **err) {
	duckdb_pending_result pending = NULL;
	if (duckdb_pending_prepared_streaming(stmt, &pending) != 0) {
		const char *msg = duckdb_pending_error(pending);
		*err = strdup(msg ? msg : "DuckDB could not start the query");
		duckdb_destroy_pending(&pending);
		return NULL;
	}
	duckdb_result *res = calloc(1, sizeof(duckdb_result));
	int state = duckdb_execute_pending(pending, res);
	duckdb_destroy_pending(&pending);
	if (state != 0 || !duckdb_result_is_streaming(*res)) {
		const char *msg = duckdb_result_error(res);
		*err = strdup(msg ? msg : "DuckDB did not stream the result");
		duckdb_destroy_result(res);
		free(res);
		return NULL;
	}
	return res;
}

// qf_fetch returns the next chunk (to destroy), or NULL at the end or on an error (its text,
// to free, in *err).
static duckdb_data_chunk qf_fetch(duckdb_result *res, char **err) {
	duckdb_data_chunk chunk = duckdb_fetch_chunk(*res);
	if (!chunk) {
		const char *msg = duckdb_result_error(res);
		if (msg) *err = strdup(msg);
	}
	return chunk;
}

static idx_t qf_columns(duckdb_result *res) { return duckdb_column_count(res); }
static const char *qf_column_name(duckdb_result *res, idx_t i) { return duckdb_column_name(res, i); }
static duckdb_logical_type qf_column_type(duckdb_result *res, idx_t i) { return duckdb_column_logical_type(res, i); }
static void qf_free_type(duckdb_logical_type t) { duckdb_destroy_logical_type(&t); }

static void qf_close(duckdb_result *res) {
	duckdb_destroy_result(res);
	free(res);
}

static void qf_interrupt(duckdb_connection c) { duckdb_interrupt(c); }
*/
import "C"

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/mapping"

	"github.com/queryflux/queryflux/internal/query"
)

//go:linkname chunkInit github.com/duckdb/duckdb-go/v2.(*DataChunk).initFromDuckDataChunk
func chunkInit(chunk *duckdb.DataChunk, data mapping.DataChunk, writable bool) error

//go:linkname chunkClose github.com/duckdb/duckdb-go/v2.(*DataChunk).close
func chunkClose(chunk *duckdb.DataChunk)

//go:linkname logicalTypeName github.com/duckdb/duckdb-go/v2.logicalTypeName
func logicalTypeName(t mapping.LogicalType) string

type (
	connLayout struct{ con C.duckdb_connection }
	stmtLayout struct {
		conn unsafe.Pointer
		stmt *C.duckdb_prepared_statement
	}
)

var streamingAvailable = bool(C.qf_available()) && handlesLayoutOK()

func handlesLayoutOK() bool {
	ct, st := reflect.TypeOf(duckdb.Conn{}), reflect.TypeOf(duckdb.Stmt{})
	return ct.NumField() > 0 && ct.Field(0).Name == "conn" && ct.Field(0).Offset == 0 &&
		ct.Field(0).Type.Size() == unsafe.Sizeof(connLayout{}) &&
		st.NumField() > 1 && st.Field(0).Name == "conn" && st.Field(1).Name == "preparedStmt" &&
		st.Field(1).Offset == unsafe.Offsetof(stmtLayout{}.stmt) && st.Field(1).Type.Kind() == reflect.Pointer
}

// column is what a result says of one of its columns.
type column struct {
	name     string
	dbType   string       // as go-duckdb names it: INTEGER, DECIMAL(18,3), VARCHAR[], ...
	declared string       // the Trino type the client's statement gives it (trinoDeclared), if any
	key      string       // what its table says of it (engine.MetaColumnKey, mysqlkeys.go), if anything
	pg       pgColumnType // its declared varchar(n) or char(n) to a PostgreSQL client (pgtypmod.go), if any
}

// streamSelect runs a SELECT as a streaming result. ok is false, with nothing run, when
// streaming is unavailable or the statement does not prepare or bind here; the caller then runs
// it the materialized way (which reports any error). done is called once conn is free again:
// by the rows' Close when ok and err is nil.
func streamSelect(ctx context.Context, conn *sql.Conn, sqlText string, args []any, kind duckdb.StmtType, names, declared, keys []string, pgTypes []pgColumnType, done func()) (query.Rows, bool, error) {
	if !streamingAvailable {
		return nil, false, nil
	}
	var (
		src *chunkSource
		ok  bool
		err error
	)
	if rawErr := conn.Raw(func(dc any) error {
		if c, isDuck := driverDuckConn(dc); isDuck {
			src, ok, err = startStream(ctx, c, takePrepared(dc, sqlText), sqlText, args)
		}
		return nil
	}); rawErr != nil || !ok {
		return nil, false, nil
	}
	if err != nil {
		done()
		return nil, true, err
	}
	cols := src.columns()
	if wrapped := asText(sqlText, cols); wrapped != "" {
		// Run again with those columns as text: nothing was read yet, and a SELECT changes nothing.
		_ = src.close()
		_ = conn.Raw(func(dc any) error {
			c, _ := driverDuckConn(dc)
			src, ok, err = startStream(ctx, c, nil, wrapped, args)
			return nil
		})
		if !ok || err != nil {
			done()
			return nil, true, cmp.Or(err, error(&query.Error{Code: query.CodeEngine, Message: "duckengine: the query could not run with its columns read as text"}))
		}
	}
	rename(cols, names) // after asText, which reads the columns by DuckDB's names
	declare(cols, declared)
	keyed(cols, keys)
	pgTyped(cols, pgTypes)
	closeAll := func() error {
		err := src.close()
		done()
		return err
	}
	return newStream(src, cols, kind, closeAll), true, nil
}

// startStream binds sqlText on c, as prepared (kept, which it closes) or prepared here, and
// starts it as a streaming result.
func startStream(ctx context.Context, c *duckdb.Conn, kept *duckdb.Stmt, sqlText string, args []any) (*chunkSource, bool, error) {
	named, err := namedArgs(args)
	if err != nil {
		if kept != nil {
			_ = kept.Close()
		}
		return nil, false, nil
	}
	st := kept
	if st == nil {
		ds, err := c.PrepareContext(ctx, sqlText)
		if err != nil {
			return nil, false, nil
		}
		st = ds.(*duckdb.Stmt)
	}
	if err := st.Bind(named); err != nil {
		_ = st.Close()
		return nil, false, nil
	}
	s := &chunkSource{ctx: ctx, stmt: st, con: (*connLayout)(unsafe.Pointer(c)).con, interrupted: make(chan struct{})}
	executed := make(chan struct{})
	s.stopInterrupt = context.AfterFunc(ctx, func() {
		interruptUntil(s.con, executed)
		close(s.interrupted)
	})
	startingHook()
	var cerr *C.char
	s.res = C.qf_execute(*(*stmtLayout)(unsafe.Pointer(st)).stmt, &cerr)
	close(executed)
	if s.res == nil {
		err := s.cError(cerr)
		s.stopInterrupts()
		_ = st.Close()
		return nil, true, err
	}
	return s, true, nil
}

// startingHook runs right before a streaming statement starts; tests widen the window there.
var startingHook = func() {}

// interruptRepeat is how often an interrupt is sent again while the statement is starting.
const interruptRepeat = 5 * time.Millisecond

// interruptUntil interrupts con, again and again until executed is closed. DuckDB clears a
// connection's interrupt when a query starts, so one that lands while qf_execute is starting
// the statement is lost, and the statement would run to its end with its slot already given up.
// Once qf_execute has returned, the reads check the context before each chunk.
func interruptUntil(con C.duckdb_connection, executed <-chan struct{}) {
	C.qf_interrupt(con)
	t := time.NewTicker(interruptRepeat)
	defer t.Stop()
	for {
		select {
		case <-executed:
			return
		case <-t.C:
			C.qf_interrupt(con)
		}
	}
}

// namedArgs converts args as database/sql does before handing them to go-duckdb.
func namedArgs(args []any) ([]driver.NamedValue, error) {
	out := make([]driver.NamedValue, len(args))
	for i, a := range args {
		v := a
		switch a.(type) {
		case *big.Int, duckdb.Interval: // go-duckdb binds these itself
		default:
			var err error
			if v, err = driver.DefaultParameterConverter.ConvertValue(a); err != nil {
				return nil, err
			}
		}
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out, nil
}

// chunkSource reads a streaming result row by row (newStream's rowSource), a chunk at a time.
type chunkSource struct {
	ctx  context.Context
	stmt *duckdb.Stmt
	con  C.duckdb_connection
	res  *C.duckdb_result

	stopInterrupt func() bool
	interrupted   chan struct{}

	chunk  duckdb.DataChunk
	loaded bool // chunk holds a DuckDB chunk (to close)
	size   int
	row    int // the row Scan reads; -1 before the chunk's first Next
	err    error
	ended  bool
	closed bool
}

func (s *chunkSource) columns() []column {
	cols := make([]column, int(C.qf_columns(s.res)))
	for i := range cols {
		t := C.qf_column_type(s.res, C.idx_t(i))
		cols[i] = column{name: C.GoString(C.qf_column_name(s.res, C.idx_t(i))), dbType: typeName(t)}
		C.qf_free_type(t)
	}
	return cols
}

func (s *chunkSource) Next() bool {
	if s.loaded && s.row+1 < s.size {
		s.row++
		return true
	}
	for !s.ended && s.err == nil {
		s.unload()
		if s.err = s.ctx.Err(); s.err != nil {
			return false
		}
		var cerr *C.char
		data := C.qf_fetch(s.res, &cerr)
		if data == nil {
			if cerr != nil {
				s.err = s.cError(cerr)
			}
			s.ended = true
			return false
		}
		s.loaded = true
		if s.err = chunkInit(&s.chunk, mapping.DataChunk{Ptr: unsafe.Pointer(data)}, false); s.err != nil {
			return false
		}
		if s.size = s.chunk.GetSize(); s.size > 0 {
			s.row = 0
			return true
		}
	}
	return false
}

func (s *chunkSource) Scan(dest ...any) error {
	for i, d := range dest {
		v, err := s.chunk.GetValue(i, s.row)
		if err != nil {
			return err
		}
		*d.(*any) = v
	}
	return nil
}

func (s *chunkSource) Err() error { return s.err }

func (s *chunkSource) unload() {
	if s.loaded {
		chunkClose(&s.chunk)
		s.loaded = false
	}
}

func (s *chunkSource) close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.unload()
	C.qf_close(s.res)
	s.stopInterrupts()
	return s.stmt.Close()
}

// stopInterrupts makes sure no interrupt reaches the connection once the result is over: the
// statement interrupted would be the next one on the connection.
func (s *chunkSource) stopInterrupts() {
	if !s.stopInterrupt() {
		<-s.interrupted
	}
}

// cError turns DuckDB's error text (freed here) into the error the materialized path gives.
func (s *chunkSource) cError(cerr *C.char) error {
	msg := C.GoString(cerr)
	C.free(unsafe.Pointer(cerr))
	if err := s.ctx.Err(); err != nil {
		return err
	}
	prefix, _, _ := strings.Cut(msg, ": ")
	t, ok := errorClasses[prefix]
	if !ok {
		t = duckdb.ErrorTypeInvalid
	}
	return duckError(t, msg)
}

// errorClasses are the message prefixes of the DuckDB error classes stateOf maps, as go-duckdb
// reads them.
var errorClasses = map[string]duckdb.ErrorType{
	"Parser Error": duckdb.ErrorTypeParser, "Syntax Error": duckdb.ErrorTypeSyntax,
	"Catalog Error": duckdb.ErrorTypeCatalog, "Binder Error": duckdb.ErrorTypeBinder,
	"Constraint Error": duckdb.ErrorTypeConstraint, "Divide by Zero Error": duckdb.ErrorTypeDivideByZero,
	"Out of Range Error": duckdb.ErrorTypeOutOfRange, "Conversion Error": duckdb.ErrorTypeConversion,
	"Mismatch Type Error": duckdb.ErrorTypeMismatchType, "Invalid Input Error": duckdb.ErrorTypeInvalidInput,
	"INTERRUPT Error": duckdb.ErrorTypeInterrupt, "TransactionContext Error": duckdb.ErrorTypeTransaction,
	"Permission Error": duckdb.ErrorTypePermission, "Not implemented Error": duckdb.ErrorTypeNotImplemented,
	"Out of Memory Error": duckdb.ErrorTypeOutOfMemory, "FATAL Error": duckdb.ErrorTypeFatal,
}

var unionsAvailable = bool(C.qf_unions_available())

// typeName is t's name as go-duckdb gives it, except a UNION: go-duckdb names it UNION alone,
// here it is named in full, UNION("n" INTEGER, "s" VARCHAR), so frontends know its members
// (internal/frontend/structured gives them to Flight SQL clients as an Arrow union); and JSON,
// which go-duckdb names VARCHAR.
func typeName(t C.duckdb_logical_type) string {
	if C.qf_is_json(t) {
		return "JSON"
	}
	name := logicalTypeName(mapping.LogicalType{Ptr: unsafe.Pointer(t)})
	if name != "UNION" || !unionsAvailable {
		return name
	}
	members := make([]string, int(C.qf_union_members(t)))
	for i := range members {
		tag := C.qf_union_member_name(t, C.idx_t(i))
		mt := C.qf_union_member_type(t, C.idx_t(i))
		members[i] = quoteIdent(C.GoString(tag)) + " " + typeName(mt)
		C.qf_free(unsafe.Pointer(tag))
		C.qf_free_type(mt)
	}
	return "UNION(" + strings.Join(members, ", ") + ")"
}

// readsAsText reports a DuckDB type go-duckdb cannot read (UNION, UHUGEINT, BIT, BIGNUM,
// anywhere inside the type) or reads losing part of it (TIME WITH TIME ZONE comes back in UTC,
// without its offset; JSON decoded into Go values, its key order and big numbers lost). Such a
// column is read as DuckDB's own text of it; its field keeps the type's name (duckdb.type), so
// frontends still know what it is.
func readsAsText(dbType string) bool {
	t := strings.ToUpper(dbType)
	if t == "JSON" || strings.Contains(t, "TIME WITH TIME ZONE") {
		return true
	}
	for _, w := range strings.FieldsFunc(t, func(r rune) bool { return !('A' <= r && r <= 'Z' || r == '_') }) {
		switch w { // as go-duckdb names them; DESCRIBE writes UNION(...) and TIME WITH TIME ZONE
		case "UNION", "UHUGEINT", "BIT", "BITSTRING", "BIGNUM", "TIMETZ":
			return true
		}
	}
	return false
}

// asText is sqlText with the columns readsAsText names cast to VARCHAR (the rest as they are,
// every column under its own name), or "" when none needs it.
func asText(sqlText string, cols []column) string {
	var sel, names []string
	cast := false
	for i, c := range cols {
		ref := "q." + quoteIdent("c"+strconv.Itoa(i))
		names = append(names, quoteIdent("c"+strconv.Itoa(i)))
		if readsAsText(c.dbType) {
			ref, cast = "CAST("+ref+" AS VARCHAR)", true
		}
		sel = append(sel, ref+" AS "+quoteIdent(c.name))
	}
	if !cast {
		return ""
	}
	// The newline ends a trailing line comment before the subquery's parenthesis closes.
	body := strings.TrimRight(strings.TrimSpace(sqlText), ";")
	return "SELECT " + strings.Join(sel, ", ") + " FROM (" + body + "\n) AS q(" + strings.Join(names, ", ") + ")"
}
