// Package query holds what a query is as it passes through the proxy: the request a frontend
// builds, the Arrow result stream an engine returns, the errors both sides speak, and the two
// interfaces that join them (Engine below the proxy core, Backend above it).
//
// It is plain data and interfaces: it touches nothing.
package query

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Protocols a frontend can speak.
const (
	ProtocolPostgres  = "postgres"
	ProtocolMySQL     = "mysql"
	ProtocolTrino     = "trino"
	ProtocolFlightSQL = "flightsql"
)

// Request is one statement as a frontend hands it to the proxy core.
type Request struct {
	SQL string
	// ClientSQL is the statement as its client wrote it, where an engine runs SQL rewritten
	// from it ("" when SQL is the client's): a MySQL result column without an alias is named by
	// its text as written.
	ClientSQL  string
	Args       []any // bound parameters (extended protocol / prepared statements); nil for none
	User       string
	Protocol   string
	Database   string // database, or catalog for Trino
	Schema     string
	Headers    map[string]string // protocol headers (Trino's X-Trino-*, ...), for routing
	Tags       []string          // client tags, for routing
	ClientAddr string
	// SessionID is the client connection's id as its protocol shows it (a PostgreSQL client's
	// BackendKeyData pid, a MySQL client's connection id), for an engine that answers the
	// session's own views itself (DuckDB's pg_stat_activity, PROCESSLIST); 0 when none.
	SessionID uint32
	// SessionStart is when the client's connection started (pg_stat_activity.backend_start on
	// an engine that answers it itself); zero when the frontend does not say.
	SessionStart time.Time
	// CopyIn is the client's data for a COPY ... FROM STDIN, for an engine that loads it
	// itself (DuckDB); nil for every other statement and wherever the protocol has no COPY.
	CopyIn CopySource
	// CopyOut: the client reads the result of a COPY ... TO STDOUT as COPY data, which the
	// frontend writes; an engine that cannot write COPY itself returns the rows.
	CopyOut bool
	// LastInsertID is a MySQL client's session's LAST_INSERT_ID(): the first AUTO_INCREMENT
	// value its last INSERT generated (the insert id of its OK packet), for an engine that
	// answers LAST_INSERT_ID() itself (DuckDB).
	LastInsertID uint64
	// FoundRows is a MySQL client's CLIENT_FOUND_ROWS: its affected rows count a row an
	// upsert found and left as it was, for an engine that counts them itself (DuckDB), and a
	// MySQL engine runs the statement on a connection opened with the flag.
	FoundRows bool
	// IgnoreSpace is a MySQL client's CLIENT_IGNORE_SPACE (sql_mode IGNORE_SPACE): a MySQL
	// engine runs the statement on a connection opened with the flag.
	IgnoreSpace bool
	// ExtendedMetadata is a MariaDB client's MARIADB_CLIENT_EXTENDED_METADATA: every column
	// definition it is sent carries MariaDB's extended type info (format=json, type=uuid), and
	// a MariaDB engine relays the statement's from a connection opened with the flag.
	ExtendedMetadata bool
	// MultiResults and PSMultiResults are a MySQL client's CLIENT_MULTI_RESULTS and
	// CLIENT_PS_MULTI_RESULTS: a stored procedure's CALL may answer it with several result
	// sets (by text, by prepared statement), and a MySQL engine runs the statement on a
	// connection opened with the same flags, so that the server refuses (1312) what it would
	// refuse the client.
	MultiResults, PSMultiResults bool
	// LocalFiles is a MySQL client's CLIENT_LOCAL_FILES: a relayed LOAD DATA LOCAL INFILE runs
	// on a MySQL engine connection opened with it, and the file the server asks for is asked
	// of the client.
	LocalFiles bool
	// Collation is a MySQL client's collation (MariaDB's id; its character_set_client,
	// _connection and _results are its set), 0 for the default, utf8mb4_general_ci: a MySQL
	// engine runs the statement on a connection in it, so it reads the client's bytes, writes
	// its results and compares as the client's server would.
	Collation uint8
	// ArgOIDs are the PostgreSQL types (OIDs) a PostgreSQL client declared, or was told at
	// Describe, for its parameters (0: unspecified), for an engine that types a parameter its
	// SQL leaves untyped (DuckDB's SELECT $1) as PostgreSQL does; nil from other protocols.
	ArgOIDs []uint32
	// Shape is the Shape a frontend found SQL to have (sqltok.Shape: the texts alike but for
	// their digits), so that the core's checks and the history find what they learned of its
	// kin; it vouches for SQL only while SQL is the very string it was given with
	// (ShapedText.Of), so a rewrite of SQL needs no care. Zero: none known.
	Shape sqltok.ShapedText
	// Sequences is a PostgreSQL client's session's currval and lastval (its connection's), for
	// an engine whose own are not a session's (DuckDB); nil from other protocols.
	Sequences *SessionSequences
	// TimeZone is the TimeZone a PostgreSQL client was last told (ParameterStatus: at login, and
	// after each SET TIME ZONE) where the frontend writes timestamps itself, for an engine that
	// answers SHOW timezone and current_setting('TimeZone') itself (DuckDB) with the name the
	// client set, as PostgreSQL does; "" when the frontend says nothing.
	TimeZone string

	analysis *sqltok.Analysis // SQL as Analysis read it; see Analysis
}

// ResultSets is Rows of a statement that may answer with several results, one after the other
// (a MySQL CALL: each result set its procedure selects, then an OK). Once Next said io.EOF,
// MoreResults tells whether another result follows, and NextResult moves on to it: Schema,
// Next and Tag are then the new result's.
type ResultSets interface {
	MoreResults() bool
	NextResult(ctx context.Context) error
}

// Analysis is the request's SQL read once with its protocol's lexical rules (tokens,
// statements, their kinds, parameters, fingerprint). The core's checks, its cache key and the
// engines read this one value; it is read again only if SQL or Protocol changed since. A
// request is handled by one task at a time, so the memo needs no lock.
func (r *Request) Analysis() *sqltok.Analysis {
	d := sqltok.DialectForProtocol(r.Protocol)
	if a := r.analysis; a != nil && a.SQL == r.SQL && a.Dialect == d {
		return a
	}
	r.analysis = sqltok.Analyze(r.SQL, d)
	return r.analysis
}

// ClientAnalysis is the Analysis of the statement as its client wrote it: ClientSQL's when an
// engine rewrote SQL (a rewritten copy of a request keeps its client's memo, so the client's
// text is not read again), SQL's otherwise.
func (r *Request) ClientAnalysis() *sqltok.Analysis {
	if r.ClientSQL == "" {
		return r.Analysis()
	}
	d := sqltok.DialectForProtocol(r.Protocol)
	if a := r.analysis; a != nil && a.SQL == r.ClientSQL && a.Dialect == d {
		return a
	}
	return sqltok.Analyze(r.ClientSQL, d)
}

// CopySource is the data a client sends for COPY ... FROM STDIN. The engine calls Start once it
// knows the statement can run, with the columns each row holds: only then is the client told
// to send (as PostgreSQL does, so a bad table name fails before any data moves). It then reads
// to io.EOF; any other error from Read ends the COPY (the client failed it, sent something
// else, or went away). Data in the binary format is read as the text format's default (tab,
// \N): the source reads each value's binary form by its column's type.
type CopySource interface {
	Start(columns *arrow.Schema) error
	io.Reader
}

// Rows is a streamed result. The caller must call Close, even after an error.
// A statement without a result set (INSERT, SET, ...) has a nil Schema and only a Tag.
type Rows interface {
	// Schema describes the columns; nil when the statement returns no rows.
	Schema() *arrow.Schema
	// Next returns the next batch, or (nil, io.EOF) at the end. The batch is valid until the
	// next call to Next or Close; Retain it to keep it longer.
	Next(ctx context.Context) (arrow.RecordBatch, error)
	// Tag is the command tag once the stream is drained ("SELECT 3", "INSERT 0 1", ...).
	Tag() string
	Close() error
}

// PlainRows is an optional extension of Rows: a result whose columns all have plain values
// (Arrow booleans, 16-, 32- and 64-bit integers, and strings) may be read as Go values instead
// of batches: the values Arrow's arrays of Schema hold (bool, int16, int32, int64, string; nil
// for NULL). A frontend that writes rows as such values (Trino's JSON) then skips building a
// batch only to take it apart. A reader uses either Next or NextPlain, never both.
type PlainRows interface {
	Rows
	// Plain reports whether NextPlain may be used: every column has plain values.
	Plain() bool
	// NextPlain returns the next rows, or (nil, io.EOF) at the end. They are the caller's.
	NextPlain(ctx context.Context) ([][]any, error)
}

// Engine runs SQL on one cluster.
type Engine interface {
	// Execute starts q. Cancelling ctx cancels the query on the engine.
	Execute(ctx context.Context, q *Request) (Rows, error)
	// Ping checks the engine is reachable, for health checks.
	Ping(ctx context.Context) error
	Close() error
}

// Backend is what every frontend talks to: the proxy core (routing, leases, queue, cache, history).
type Backend interface {
	// Ready is false until the node has activated its first config; frontends then answer their
	// protocol's retryable "not configured yet" error (ErrNotConfigured).
	Ready() bool
	Execute(ctx context.Context, q *Request) (Rows, error)
}

// ReadyAwaiter is an optional extension of Backend: a node that is starting holds a login or
// a query briefly for its first configuration instead of refusing it (proxy.Core.AwaitReady),
// and answers false once it gives up.
type ReadyAwaiter interface {
	AwaitReady(ctx context.Context) bool
}

// AwaitReady reports whether b is ready, waiting while it is starting when b can (ReadyAwaiter).
// Frontends ask it where they would answer ErrNotConfigured.
func AwaitReady(ctx context.Context, b Backend) bool {
	if b.Ready() {
		return true
	}
	w, ok := b.(ReadyAwaiter)
	return ok && w.AwaitReady(ctx)
}

// DatabaseChecker is an optional extension of Backend: whether the database a client names
// at login means anything, checked once the client is authenticated (so that unauthenticated
// clients learn nothing). A refusal is an *Error with its code.
type DatabaseChecker interface {
	CheckDatabase(protocol, database string) error
}

// Error is an error a frontend can show in its protocol's own form. Code is a SQLSTATE.
type Error struct {
	Code      string
	Message   string
	Retryable bool
	// TimedOut marks a CodeQueryTimeout (57014) that is a time limit (the group's query timeout,
	// an engine's statement timeout) rather than a cancel by someone (an operator, the engine
	// fence): PostgreSQL answers both 57014, the MySQL, Flight SQL and Trino forms differ.
	TimedOut bool
	// Catalog is, on a CodeAccessDenied, the catalog (database) the access rules refused the
	// user, when it was a catalog they refused: a MySQL client's USE or login answers it as a
	// database that does not exist.
	Catalog string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// SQLSTATE codes the proxy itself raises, each mapped to every protocol's own form in
// docs/errors.md: a client can tell "retry later" from "my statement is wrong" from "I
// cancelled it" by the code alone.
const (
	CodeNotConfigured = sqlstate.CannotConnectNow   // no configuration active yet
	CodeQueueFull     = sqlstate.TooManyConnections // the group's queue is full
	// CodeCapacityTimeout: no capacity within the group's wait timeout. Never 57014, which
	// clients take for their own cancel.
	CodeCapacityTimeout = sqlstate.InsufficientResources
	// CodeLeaseLost: the query ran, and was stopped because the capacity lease it ran under
	// was lost (not renewed within its term, or taken back by the control plane): the
	// statement did not take effect and a transaction it was in is aborted (ROLLBACK, then
	// retry it). Class 40 (transaction_rollback) is what retry logic keyed on a code's class
	// retries (Spring's ConcurrencyFailureException, JDBC's SQLTransactionRollbackException,
	// psycopg's TransactionRollback), as PostgreSQL's own cancels for causes outside the
	// statement (a standby's recovery conflict) are class 40. Not 40001, which an engine's own
	// serialization failure keeps: the history and the metrics tell the two apart by the code.
	// Not 53000, which says the query never started, nor 57014, the client's own cancel or
	// time limit.
	CodeLeaseLost = sqlstate.TransactionRollback
	// CodeQueryTimeout: the group's query timeout, like statement_timeout.
	CodeQueryTimeout = sqlstate.QueryCanceled
	// CodeCoordinationUnavailable: the capacity coordinator (the control plane) cannot be
	// reached; the query did not run.
	CodeCoordinationUnavailable = sqlstate.ConnectionFailure
	// CodeEngineUnavailable: the routed cluster's engine cannot be reached or refused our login.
	CodeEngineUnavailable = sqlstate.SQLClientUnableToEstablishSQLConnection
	CodeAccessDenied      = sqlstate.InsufficientPrivilege
	CodeNoRoute           = sqlstate.InvalidCatalogName
	CodeEngine            = sqlstate.SystemError
	CodeSyntax            = sqlstate.SyntaxError
	CodeLimitExceeded     = sqlstate.ProgramLimitExceeded
	// CodeNotEligible: the query was routed to a cluster group this worker's labels do not
	// satisfy (its workerSelector), so the worker does not hold that group's clusters.
	CodeNotEligible = sqlstate.SQLServerRejectedEstablishmentOfSQLConnection
)

// ErrNotConfigured is returned before the first config is active.
var ErrNotConfigured = &Error{Code: CodeNotConfigured, Message: "queryflux is not configured yet; retry shortly", Retryable: true}
