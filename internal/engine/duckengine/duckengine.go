// Package duckengine runs queries on an embedded DuckDB database (in memory or in a file)
// through github.com/marcboeker/go-duckdb, and streams the rows as Arrow record batches of at most
// engine.BatchRowsMax rows, with each column's DuckDB type in the field metadata (duckdb.type).
//
// determinism: outside the simulator (real engine adapter: embedded DuckDB through cgo)
package duckengine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/marcboeker/go-duckdb"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

// Kind is the registry key of this engine.
const Kind = "duckdb"

func init() { engine.Register(Kind, Open) }

// Engine is one DuckDB database shared by a pool of connections.
type Engine struct {
	name string
	db   *sql.DB
}

var _ engine.Describer = (*Engine)(nil)

// Open opens the database at spec.Endpoint: a file path, or "" / ":memory:" for an in-memory
// database that lives as long as the engine. Options become DuckDB settings (threads,
// access_mode, ...). MaxConns bounds concurrent connections (default 4).
func Open(spec engine.Spec) (query.Engine, error) {
	path := spec.Endpoint
	if path == ":memory:" {
		path = ""
	}
	keys := make([]string, 0, len(spec.Options))
	for k := range spec.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	q := url.Values{}
	for _, k := range keys {
		q.Set(k, spec.Options[k])
	}
	dsn := path
	if len(q) > 0 {
		dsn += "?" + q.Encode()
	}
	connector, err := duckdb.NewConnector(dsn, nil)
	if err != nil {
		return nil, fmt.Errorf("duckengine %q: open %q: %w", spec.Name, spec.Endpoint, err)
	}
	db := sql.OpenDB(connector)
	conns := spec.MaxConns
	if conns <= 0 {
		conns = 4
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	return &Engine{name: spec.Name, db: db}, nil
}

// DB exposes the database, for loading data (demo) and tests.
func (e *Engine) DB() *sql.DB { return e.db }

func (e *Engine) Ping(ctx context.Context) error { return e.db.PingContext(ctx) }

func (e *Engine) Close() error { return e.db.Close() }

// prepared is what DuckDB tells about a statement before it runs.
type prepared struct {
	kind   duckdb.StmtType
	params []duckdb.Type
}

func prepare(ctx context.Context, conn *sql.Conn, sqlText string) (*prepared, error) {
	var p prepared
	err := conn.Raw(func(dc any) error {
		pc, ok := dc.(driver.ConnPrepareContext)
		if !ok {
			return errors.New("duckengine: driver connection cannot prepare")
		}
		st, err := pc.PrepareContext(ctx, sqlText)
		if err != nil {
			return err
		}
		defer st.Close()
		ds, ok := st.(*duckdb.Stmt)
		if !ok {
			return fmt.Errorf("duckengine: unexpected statement type %T", st)
		}
		if p.kind, err = ds.StatementType(); err != nil {
			return err
		}
		for i := 1; i <= ds.NumInput(); i++ {
			t, err := ds.ParamType(i)
			if err != nil {
				return err
			}
			p.params = append(p.params, t)
		}
		return nil
	})
	return &p, err
}

// Describe reports the parameter types DuckDB infers; columns are described when it runs.
func (e *Engine) Describe(ctx context.Context, q *query.Request) (*engine.Description, error) {
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return nil, wrapErr(err)
	}
	defer conn.Close()
	p, err := prepare(ctx, conn, q.SQL)
	if err != nil {
		return nil, wrapErr(err)
	}
	d := &engine.Description{}
	for i, t := range p.params {
		d.Params = append(d.Params, fieldFor(fmt.Sprintf("$%d", i+1), paramTypeName(t)))
	}
	return d, nil
}

func paramTypeName(t duckdb.Type) string {
	switch t {
	case duckdb.TYPE_BOOLEAN:
		return "BOOLEAN"
	case duckdb.TYPE_TINYINT:
		return "TINYINT"
	case duckdb.TYPE_SMALLINT:
		return "SMALLINT"
	case duckdb.TYPE_INTEGER:
		return "INTEGER"
	case duckdb.TYPE_BIGINT:
		return "BIGINT"
	case duckdb.TYPE_FLOAT:
		return "FLOAT"
	case duckdb.TYPE_DOUBLE:
		return "DOUBLE"
	case duckdb.TYPE_DATE:
		return "DATE"
	case duckdb.TYPE_TIMESTAMP:
		return "TIMESTAMP"
	case duckdb.TYPE_TIMESTAMP_TZ:
		return "TIMESTAMPTZ"
	case duckdb.TYPE_BLOB:
		return "BLOB"
	}
	return "VARCHAR" // unknown or textual: the client sends text, DuckDB casts it
}

// Execute runs q. Cancelling ctx interrupts the query in DuckDB.
func (e *Engine) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return nil, wrapErr(err)
	}
	rows, _, err := run(ctx, conn, q, func() { conn.Close() })
	return rows, err
}

// run executes q on conn; release is called once conn is no longer needed by the result.
func run(ctx context.Context, conn *sql.Conn, q *query.Request, release func()) (query.Rows, *prepared, error) {
	p, err := prepare(ctx, conn, q.SQL)
	if err != nil {
		release()
		return nil, p, wrapErr(err)
	}
	args, err := coerceArgs(p.params, q.Args)
	if err != nil {
		release()
		return nil, p, err
	}
	rows, err := conn.QueryContext(ctx, q.SQL, args...)
	if err != nil {
		release()
		return nil, p, wrapErr(err)
	}
	closeAll := func() error {
		err := rows.Close()
		release()
		return err
	}
	cols, err := rows.ColumnTypes()
	if err != nil {
		closeAll()
		return nil, p, wrapErr(err)
	}
	if tag, counted := countTag(p.kind, cols); counted {
		// INSERT/UPDATE/DELETE without RETURNING: one row holding the count.
		var n int64
		for rows.Next() {
			if err := rows.Scan(&n); err != nil {
				closeAll()
				return nil, p, wrapErr(err)
			}
		}
		err := rows.Err()
		closeAll()
		if err != nil {
			return nil, p, wrapErr(err)
		}
		return engine.TagRows(tag + strconv.FormatInt(n, 10)), p, nil
	}
	if !returnsRows(p.kind) {
		for rows.Next() {
		}
		err := rows.Err()
		closeAll()
		if err != nil {
			return nil, p, wrapErr(err)
		}
		return engine.TagRows(tagFromSQL(q.SQL)), p, nil
	}
	return newStream(rows, cols, p.kind, closeAll), p, nil
}

func returnsRows(k duckdb.StmtType) bool {
	switch k {
	case duckdb.STATEMENT_TYPE_SELECT, duckdb.STATEMENT_TYPE_EXPLAIN, duckdb.STATEMENT_TYPE_PRAGMA,
		duckdb.STATEMENT_TYPE_CALL, duckdb.STATEMENT_TYPE_RELATION, duckdb.STATEMENT_TYPE_LOGICAL_PLAN,
		duckdb.STATEMENT_TYPE_INSERT, duckdb.STATEMENT_TYPE_UPDATE, duckdb.STATEMENT_TYPE_DELETE,
		duckdb.STATEMENT_TYPE_EXECUTE:
		return true
	}
	return false
}

// countTag says whether a DML result is DuckDB's single "Count" column, and the tag prefix.
func countTag(k duckdb.StmtType, cols []*sql.ColumnType) (string, bool) {
	if len(cols) != 1 || cols[0].Name() != "Count" {
		return "", false
	}
	switch k {
	case duckdb.STATEMENT_TYPE_INSERT:
		return "INSERT 0 ", true
	case duckdb.STATEMENT_TYPE_UPDATE:
		return "UPDATE ", true
	case duckdb.STATEMENT_TYPE_DELETE:
		return "DELETE ", true
	}
	return "", false
}

func dmlTagPrefix(k duckdb.StmtType) string {
	switch k {
	case duckdb.STATEMENT_TYPE_INSERT:
		return "INSERT 0 "
	case duckdb.STATEMENT_TYPE_UPDATE:
		return "UPDATE "
	case duckdb.STATEMENT_TYPE_DELETE:
		return "DELETE "
	}
	return "SELECT "
}

// tagFromSQL builds a PostgreSQL-style tag ("CREATE TABLE", "DROP VIEW", "SET") from the
// statement's leading keywords.
func tagFromSQL(sqlText string) string {
	words := strings.Fields(strings.ToUpper(sqlText))
	if len(words) == 0 {
		return ""
	}
	first := strings.TrimRight(words[0], ";")
	switch first {
	case "CREATE", "DROP", "ALTER":
		objects := map[string]bool{"TABLE": true, "VIEW": true, "SCHEMA": true, "SEQUENCE": true, "INDEX": true,
			"FUNCTION": true, "MACRO": true, "TYPE": true, "DATABASE": true}
		for _, w := range words[1:min(len(words), 6)] {
			if objects[w] {
				return first + " " + w
			}
		}
	case "BEGIN", "START":
		return "BEGIN"
	case "END":
		return "COMMIT"
	}
	return first
}

func wrapErr(err error) error {
	if err == nil {
		return nil
	}
	var de *duckdb.Error
	if errors.As(err, &de) {
		return &query.Error{Code: sqlstate(de.Type), Message: de.Msg}
	}
	return err
}

// sqlstate maps DuckDB's error classes to the nearest SQLSTATE.
func sqlstate(t duckdb.ErrorType) string {
	switch t {
	case duckdb.ErrorTypeParser, duckdb.ErrorTypeSyntax:
		return query.CodeSyntax
	case duckdb.ErrorTypeCatalog:
		return "42P01"
	case duckdb.ErrorTypeBinder:
		return "42703"
	case duckdb.ErrorTypeConstraint:
		return "23000"
	case duckdb.ErrorTypeDivideByZero:
		return "22012"
	case duckdb.ErrorTypeOutOfRange:
		return "22003"
	case duckdb.ErrorTypeConversion, duckdb.ErrorTypeMismatchType, duckdb.ErrorTypeInvalidInput:
		return "22P02"
	case duckdb.ErrorTypeInterrupt:
		return "57014"
	case duckdb.ErrorTypeTransaction:
		return "25000"
	case duckdb.ErrorTypePermission:
		return query.CodeAccessDenied
	case duckdb.ErrorTypeNotImplemented:
		return "0A000"
	case duckdb.ErrorTypeOutOfMemory:
		return "53200"
	}
	return query.CodeEngine
}

// coerceArgs parses text arguments (what PostgreSQL-wire clients send) into the type DuckDB
// inferred for the parameter: DuckDB does not cast VARCHAR parameters implicitly.
func coerceArgs(types []duckdb.Type, args []any) ([]any, error) {
	if len(args) == 0 {
		return nil, nil
	}
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
		s, isText := a.(string)
		if !isText || i >= len(types) {
			continue
		}
		v, err := parseAs(types[i], s)
		if err != nil {
			return nil, &query.Error{Code: "22P02", Message: fmt.Sprintf("parameter $%d: %v", i+1, err)}
		}
		out[i] = v
	}
	return out, nil
}

func parseAs(t duckdb.Type, s string) (any, error) {
	switch t {
	case duckdb.TYPE_BOOLEAN:
		return strconv.ParseBool(strings.ToLower(strings.TrimSpace(s)))
	case duckdb.TYPE_TINYINT, duckdb.TYPE_SMALLINT, duckdb.TYPE_INTEGER, duckdb.TYPE_BIGINT:
		return strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	case duckdb.TYPE_UTINYINT, duckdb.TYPE_USMALLINT, duckdb.TYPE_UINTEGER, duckdb.TYPE_UBIGINT:
		return strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	case duckdb.TYPE_FLOAT, duckdb.TYPE_DOUBLE:
		return strconv.ParseFloat(strings.TrimSpace(s), 64)
	case duckdb.TYPE_DATE:
		return time.Parse("2006-01-02", strings.TrimSpace(s))
	case duckdb.TYPE_TIMESTAMP, duckdb.TYPE_TIMESTAMP_TZ:
		for _, layout := range []string{"2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999Z07", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999Z07:00", "2006-01-02"} {
			if ts, err := time.Parse(layout, strings.TrimSpace(s)); err == nil {
				return ts, nil
			}
		}
		return nil, fmt.Errorf("invalid timestamp %q", s)
	}
	return s, nil
}

var _ engine.SessionOpener = (*Engine)(nil)

// OpenSession pins one connection for a client's transaction.
func (e *Engine) OpenSession(ctx context.Context, q *query.Request) (engine.Session, error) {
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return nil, wrapErr(err)
	}
	return &session{conn: conn, status: 'I'}, nil
}

// session tracks the transaction status itself (DuckDB does not report one): BEGIN opens,
// COMMIT/ROLLBACK closes, an error inside a transaction fails it until ROLLBACK.
type session struct {
	conn   *sql.Conn
	status byte
}

func (s *session) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	rows, p, err := run(ctx, s.conn, q, func() {})
	switch {
	case err != nil:
		if s.status == 'T' {
			s.status = 'E'
		}
	case p != nil && p.kind == duckdb.STATEMENT_TYPE_TRANSACTION:
		switch strings.ToUpper(strings.Fields(q.SQL)[0]) {
		case "BEGIN", "START":
			s.status = 'T'
		default: // COMMIT, END, ROLLBACK, ABORT
			s.status = 'I'
		}
	}
	return rows, err
}

func (s *session) TxStatus() byte { return s.status }

// Close rolls back an open transaction and returns the connection to the pool.
func (s *session) Close() error {
	if s.status != 'I' {
		_, _ = s.conn.ExecContext(context.Background(), "ROLLBACK")
	}
	return s.conn.Close()
}
