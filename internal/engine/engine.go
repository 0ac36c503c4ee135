// Package engine holds what every engine adapter shares: the Spec that names one engine
// instance, the Openers table that opens a Spec by its Kind (the daemon builds its table of the
// kinds it ships and hands it to the roles it builds; nothing registers itself), the optional
// Describer interface, and the Arrow helpers that turn engine rows into record batches in
// bounded chunks.
//
// determinism: outside the simulator (real engine adapters touch the network)
package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/queryflux/queryflux/internal/query"
)

// Spec names one engine instance (one cluster) and how to reach it.
type Spec struct {
	Name     string            // cluster name, for errors and logs
	Kind     string            // "postgres", "duckdb", ...: the Openers key
	Endpoint string            // host:port, a URL, or for DuckDB a file path or ":memory:"
	Database string            // database to use (Postgres), ignored where meaningless
	User     string            //
	Password string            // never logged, never in errors
	Options  map[string]string // engine-specific knobs (sslmode, exec_mode, ...)
	MaxConns int               // connection pool size; 0 means the engine's default
}

// String shows the spec without its password.
func (s Spec) String() string {
	return fmt.Sprintf("%s(%s %s db=%s user=%s)", s.Kind, s.Name, s.Endpoint, s.Database, s.User)
}

// Opener builds an engine from a spec.
type Opener func(Spec) (query.Engine, error)

// Openers are the engine kinds a program can open, each with its opener.
type Openers map[string]Opener

// Kinds lists the kinds, sorted.
func (o Openers) Kinds() []string { return slices.Sorted(maps.Keys(o)) }

// Open opens spec with the opener of spec.Kind.
func (o Openers) Open(spec Spec) (query.Engine, error) {
	open, ok := o[spec.Kind]
	if !ok {
		return nil, fmt.Errorf("engine %q: unknown kind %q (known: %v)", spec.Name, spec.Kind, o.Kinds())
	}
	return open(spec)
}

// Description says what a statement takes and returns, without running it.
type Description struct {
	// Params has one field per placeholder ($1, $2, ...), its type as the engine inferred it
	// (with MetaPGOID metadata when the engine knows a PostgreSQL type).
	Params []arrow.Field
	// Schema is the result's columns; nil when the statement returns no rows.
	Schema *arrow.Schema
}

// Describer is implemented by engines (and by backends that forward to one) that can describe a
// statement without running it. The PostgreSQL wire frontend uses it to answer Describe for a
// prepared statement with exact parameter and column types; without it, it answers from the
// client's declared parameter types and describes the columns when the statement runs.
type Describer interface {
	Describe(ctx context.Context, q *query.Request) (*Description, error)
}

// UserNamer is implemented by engines that log in to their server as a user: EngineUser is its
// name ("" when unknown). The proxy refuses statements of clients that would change that user,
// which every client of the cluster shares (node/proxy/engineuser.go).
type UserNamer interface {
	EngineUser() string
}

// SessionOpener is implemented by engines (and by backends that forward to one) that can keep
// one client's statements on one engine connection. The PostgreSQL wire frontend opens a
// session when a client starts a transaction (BEGIN / START TRANSACTION) and keeps sending that
// client's statements to it until the engine reports the transaction over, so transactions
// behave as on a direct connection. Without it, each statement runs on any pooled connection.
type SessionOpener interface {
	OpenSession(ctx context.Context, q *query.Request) (Session, error)
}

// ClientCollationTaker is implemented by engines that take a MySQL client's bytes in the
// client's collation (query.Request.Collation): a MySQL engine opens its connection in it. The
// core converts a latin1 client's statement to UTF-8 for any other engine (mysqlcharset).
type ClientCollationTaker interface {
	TakesClientCollation()
}

// SettingIgnorer is implemented by engines (and by backends that forward to one) on which a
// PostgreSQL client's session-level SET name = value changes nothing the client could tell:
// the embedded DuckDB has no server-side statement timeout, row security or synchronized
// scans, so pg_dump's SET statement_timeout = 0 or SET row_security = off are true there as
// they are said. The PostgreSQL wire frontend answers such a SET itself, where in transaction
// pool mode it would refuse it (a session setting would not outlive the statement).
type SettingIgnorer interface {
	SetChangesNothing(q *query.Request, name, value string) bool
}

// ClientCloser is implemented by engines (and by backends that forward to them) that keep
// something for a client across its statements (DuckDB's advisory locks): a frontend tells
// it when the client's connection ends. client is the connection's query.Request.ClientAddr,
// protocol its query.Request.Protocol.
type ClientCloser interface {
	ClientClosed(protocol, client string)
}

// Session is one pinned engine connection.
// TxFailer is a Session whose transaction a statement the frontend answered itself can fail
// (pgwire's cursor statements), as PostgreSQL fails a transaction on any error in it.
type TxFailer interface {
	FailTx()
}

type Session interface {
	Execute(ctx context.Context, q *query.Request) (query.Rows, error)
	// TxStatus is PostgreSQL's transaction status after the last statement: 'I' idle,
	// 'T' in a transaction, 'E' in a failed transaction. Valid once that statement's rows
	// are closed.
	TxStatus() byte
	// Close releases the connection, rolling back any open transaction.
	Close() error
}
