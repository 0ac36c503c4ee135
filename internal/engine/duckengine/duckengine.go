// Package duckengine runs queries on an embedded DuckDB database (in memory or in a file)
// through github.com/duckdb/duckdb-go/v2 (DuckDB 1.5, ICU built in), and streams the rows as
// Arrow record batches of at most engine.BatchRowsMax rows, with each column's DuckDB type in
// the field metadata (duckdb.type).
// It keeps each client's statements and transactions to itself (Engine, session.go), locks the
// database down for clients (statement.go), answers PostgreSQL clients' catalog queries
// (catalog.go) and applies their startup options (options.go). It touches only its database,
// and the host's files only where the cluster's options allow it.
//
// determinism: outside the simulator (real engine adapter: embedded DuckDB through cgo)
package duckengine

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Kind is this engine's kind (config clusters' engine).
const Kind = "duckdb"

// Engine is one DuckDB database shared by a pool of connections.
//
// Client isolation: a connection serves one client statement (or one client's transaction,
// see session.go) at a time and goes back to the pool only when nothing of that client stays
// on it: a statement that can leave connection state behind (SET, PREPARE, CREATE TEMP,
// PRAGMA, ...) retires its connection instead (statement.go). A transaction outside a pinned
// session is refused, so no client's transaction ever reaches another client.
//
// Lockdown: unless the cluster's options say otherwise, the database runs with
// enable_external_access=false (no host files read or written, no extensions installed or
// loaded) and lock_configuration=true, and client statements that would change the
// connection's configuration or the database instance (PRAGMA, SET other than search_path,
// ATTACH, DETACH) are refused.
type Engine struct {
	name   string
	db     atomic.Pointer[sql.DB] // the open database; replaced when a fatal error invalidates it (reopen.go)
	locked bool                   // client configuration statements refused (lock_configuration)
	// actionsMaybe: a foreign key with an ON DELETE / ON UPDATE action may exist (pgrefintx.go)
	actionsMaybe atomic.Bool
	// deferrableMaybe: a DEFERRABLE foreign key may exist (pgdeferred.go)
	deferrableMaybe atomic.Bool
	// identityMaybe: a column GENERATED ... AS IDENTITY may exist (pgidentity.go)
	identityMaybe atomic.Bool
	// yearMaybe: a MySQL client's YEAR column may exist (mysqlyear.go)
	yearMaybe atomic.Bool
	// charMaybe: a VARCHAR(n) or CHAR(n) column may exist (mysqlcharlen.go)
	charMaybe atomic.Bool
	reopen    reopener
	// advisory are PostgreSQL clients' advisory locks, across the engine's connections.
	advisory advisoryLocks
	found    foundRows       // MySQL clients' FOUND_ROWS() (foundrows.go)
	currvals currvalNotes    // currval after setval (pgcurrval.go)
	keys     columnKeysCache // MySQL clients' column keys by table (columnkeycache.go)
	// connector is the open database's, under the watchedConnector the pool connects through.
	connector atomic.Pointer[duckdb.Connector]
	// writes is the database's write lock, PostgreSQL clients' writers' turn (pgwritelock.go).
	writes writeLock
	// waits are PostgreSQL clients' waits for the write lock and advisory locks, read by the
	// deadlock check (pgdeadlock.go).
	waits waitGraph
}

// connSetup is what each new connection of one opened database runs first.
type connSetup struct {
	// catalog is the name an in-memory database is attached under (the cluster's database,
	// else its name), so current_database() says what the client connected to, or a file
	// attached read-only (its base name); "" for a file opened read-write.
	catalog string
	// searchPath is every connection's: the database's main schema, then the schema holding
	// the catalog compatibility objects (catalog.go).
	searchPath string
}

var _ engine.Describer = (*Engine)(nil)

// The settings that lock a database down, and their defaults; a cluster's options override them.
const (
	settingExternalAccess = "enable_external_access"
	settingLockConfig     = "lock_configuration"
)

// Open opens the database at spec.Endpoint: a file path, or "" / ":memory:" for an in-memory
// database that lives as long as the engine. Options become DuckDB settings (threads,
// access_mode, enable_external_access, ...). MaxConns bounds concurrent connections (default 4).
func Open(spec engine.Spec) (query.Engine, error) {
	path := spec.Endpoint
	if path == ":memory:" {
		path = ""
	}
	settings := map[string]string{settingExternalAccess: "false", settingLockConfig: "true",
		// Belt and braces, should an operator open external access: extensions still come
		// from nowhere on their own, none from the community repository, and no secret is
		// written to the home directory. Each can be turned on in the cluster's options.
		"autoinstall_known_extensions": "false", "autoload_known_extensions": "false",
		"allow_community_extensions": "false", "allow_persistent_secrets": "false",
		// PostgreSQL's and Trino's 7/2 is 3 (division.go).
		settingIntegerDivision: "true"}
	for k, v := range spec.Options {
		settings[k] = v
	}
	// A file opened read-only (several processes may then share it) is attached read-only
	// to an in-memory instance: DuckDB refuses every in-memory database in a read-only one,
	// and the catalogs PostgreSQL, MySQL and Trino clients read live in one. Locking the
	// configuration and closing external access wait until the file is attached.
	var late []string
	readOnlyFile := ""
	if path != "" && strings.EqualFold(settings["access_mode"], "read_only") {
		readOnlyFile = path
		late = []string{"SET " + settingExternalAccess + " = " + settings[settingExternalAccess],
			"SET " + settingLockConfig + " = " + settings[settingLockConfig]}
		delete(settings, "access_mode")
	}
	locked, err := strconv.ParseBool(settings[settingLockConfig])
	if err != nil {
		return nil, fmt.Errorf("duckengine %q: options.%s %q is not a boolean", spec.Name, settingLockConfig, settings[settingLockConfig])
	}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		if readOnlyFile == "" || k != settingExternalAccess && k != settingLockConfig {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	q := url.Values{}
	for _, k := range keys {
		q.Set(k, settings[k])
	}
	conns := spec.MaxConns
	if conns <= 0 {
		conns = 4
	}
	e := &Engine{name: spec.Name, locked: locked, reopen: reopener{
		dsn: path + "?" + q.Encode(), endpoint: spec.Endpoint, database: cmp.Or(spec.Database, spec.Name),
		inMemory: path == "", conns: conns}}
	e.writes.graph, e.advisory.graph = &e.waits, &e.waits
	if readOnlyFile != "" {
		// Named as DuckDB names a file it opens: its base name without the extension.
		e.reopen.dsn, e.reopen.readOnlyFile, e.reopen.late = "?"+q.Encode(), readOnlyFile, late
		e.reopen.database = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	db, err := e.openDB()
	if err != nil {
		return nil, err
	}
	e.db.Store(db)
	return e, nil
}

// openDB opens the database afresh: the connector, the catalog setup, the pool.
func (e *Engine) openDB() (*sql.DB, error) {
	cs := &connSetup{}
	connector, err := duckdb.NewConnector(e.reopen.dsn, cs.init)
	if err != nil {
		return nil, fmt.Errorf("duckengine %q: open %q: %w", e.name, e.reopen.endpoint, err)
	}
	if err := cs.setup(connector, &e.reopen); err != nil {
		_ = connector.Close()
		return nil, fmt.Errorf("duckengine %q: %w", e.name, err)
	}
	e.connector.Store(connector)
	db := sql.OpenDB(watchedConnector{Connector: connector, keys: &e.keys})
	db.SetMaxOpenConns(e.reopen.conns)
	db.SetMaxIdleConns(e.reopen.conns)
	e.noteDeclaredActions(db)
	e.noteDeclaredDeferrable(db)
	e.noteDeclaredIdentity(db)
	e.noteDeclaredYears(db)
	return db, nil
}

// setup prepares the database before any client connects: an in-memory database is attached
// under name (the one every connection uses), and the catalog compatibility objects are created
// in an in-memory catalog of their own (compatCatalog), whatever the database.
func (cs *connSetup) setup(connector *duckdb.Connector, r *reopener) error {
	name, attached := r.database, r.inMemory || r.readOnlyFile != ""
	if err := registerScalars(connector); err != nil {
		return err
	}
	dc, err := connector.Connect(context.Background())
	if err != nil {
		return err
	}
	defer dc.Close()
	exec := func(sqlText string) error {
		_, err := dc.(driver.ExecerContext).ExecContext(context.Background(), sqlText, nil)
		return err
	}
	for _, db := range []string{name, compatCatalog} {
		if db == name && !attached {
			continue
		}
		attach := "ATTACH ':memory:' AS " + quoteIdent(db)
		if db == name && r.readOnlyFile != "" {
			attach = "ATTACH '" + strings.ReplaceAll(r.readOnlyFile, "'", "''") + "' AS " + quoteIdent(db) + " (READ_ONLY)"
		}
		if err := exec(attach); err != nil {
			return fmt.Errorf("attach %q: %w", db, err)
		}
	}
	home := name
	if !attached {
		if home, err = currentDatabase(dc); err != nil {
			return err
		}
	} else {
		cs.catalog = name
	}
	declared, err := setupDeclared(exec, home)
	if err != nil {
		return err
	}
	// \l lists the databases a client can use: not DuckDB's own, nor the compatibility one.
	hidden := "'memory', '" + compatCatalog + "'"
	for _, s := range slices.Concat(pgCompatSQL(), trinoFunctionSQL, trinoColumnSQL, mysqlFunctionSQL, mysqlInfoSchemaSQL) {
		s = strings.NewReplacer("{c}", quoteIdent(compatCatalog), "{hidden}", hidden, "{declared}", declared).Replace(s)
		if err := exec(s); err != nil {
			return fmt.Errorf("catalog compatibility: %w", err)
		}
	}
	for _, s := range r.late {
		if err := exec(s); err != nil {
			return err
		}
	}
	cs.searchPath = quoteIdent(home) + ".main," + quoteIdent(compatCatalog) + ".main"
	return nil
}

func currentDatabase(dc driver.Conn) (string, error) {
	rows, err := dc.(driver.QueryerContext).QueryContext(context.Background(), "SELECT current_database()", nil)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil {
		return "", err
	}
	name, _ := v[0].(string)
	return name, nil
}

// init prepares each new connection: its default database and search path.
func (cs *connSetup) init(ex driver.ExecerContext) error {
	if cs.catalog != "" {
		if _, err := ex.ExecContext(context.Background(), "USE "+quoteIdent(cs.catalog), nil); err != nil {
			return err
		}
	}
	if cs.searchPath == "" {
		return nil // the setup connection
	}
	_, err := ex.ExecContext(context.Background(), "SET search_path = '"+strings.ReplaceAll(cs.searchPath, "'", "''")+"'", nil)
	return err
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// DB exposes the database, for loading data (demo) and tests.
func (e *Engine) DB() *sql.DB { return e.db.Load() }

func (e *Engine) Ping(ctx context.Context) error {
	db, err := e.current(ctx)
	if err != nil {
		return err
	}
	return db.PingContext(ctx)
}

func (e *Engine) Close() error { return e.db.Load().Close() }

// conn takes a pooled connection of the current database (reopened first if it was invalidated).
func (e *Engine) conn(ctx context.Context) (*sql.Conn, error) {
	db, err := e.current(ctx)
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	return conn, wrapErr(err)
}

// release returns conn to the pool, or closes it when keep is false (it may hold a client's
// connection state).
func release(conn *sql.Conn, keep bool) {
	if !restorePath(conn) || !keep { // trinoschema.go
		// database/sql closes a connection whose Raw reports it bad instead of pooling it.
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	_ = conn.Close()
}

// prepared is what DuckDB tells about a statement before it runs.
type prepared struct {
	sqlText string // what was prepared: what runs
	kind    duckdb.StmtType
	params  []duckdb.Type
}

// prepare prepares sqlText, which must be one statement: DuckDB runs every statement but the
// last of a multi-statement text while preparing it, so more than one is refused before
// anything runs.
func prepare(conn *sql.Conn, sqlText string) (*prepared, error) {
	p := prepared{sqlText: sqlText}
	err := conn.Raw(func(dc any) error {
		st, err := dc.(driver.Conn).Prepare(sqlText)
		if err != nil {
			if strings.Contains(err.Error(), "multi-statement") {
				return errMultiStatement
			}
			return err
		}
		ds, ok := st.(*duckdb.Stmt)
		if !ok {
			_ = st.Close()
			return fmt.Errorf("duckengine: unexpected statement type %T", st)
		}
		if p.kind, err = ds.StatementType(); err != nil {
			_ = st.Close()
			return err
		}
		for i := 1; i <= ds.NumInput(); i++ {
			t, err := ds.ParamType(i)
			if err != nil {
				_ = st.Close()
				return err
			}
			p.params = append(p.params, t)
		}
		keepPrepared(dc, sqlText, ds) // the run of the same text takes it (streaming.go)
		return nil
	})
	return &p, err
}

var errMultiStatement = &query.Error{Code: query.CodeSyntax, Message: "DuckDB runs one statement per query: send the statements one at a time"}

// Describe reports the parameter types DuckDB infers; columns are described when it runs.
func (e *Engine) Describe(ctx context.Context, q *query.Request) (*engine.Description, error) {
	conn, err := e.conn(ctx)
	if err != nil {
		return nil, err
	}
	defer release(conn, true) // preparing leaves nothing on the connection
	d, err := e.describe(withColumnKeysCache(ctx, &e.keys), conn, q)
	e.noteFatal(err)
	return d, err
}

func (e *Engine) describe(ctx context.Context, conn *sql.Conn, client *query.Request) (*engine.Description, error) {
	if call, ok, err := readAdvisory(client); ok {
		if err != nil {
			return nil, err
		}
		return call.description(), nil
	}
	if sc, ok := readShowCreate(client); ok { // mysqlshowcreate.go: a table's columns, or a view's
		if sc.view {
			return &engine.Description{Schema: showCreateViewSchema}, nil
		}
		return &engine.Description{Schema: showCreateSchema}, nil
	}
	if _, handled, err := ownStatement(client); handled {
		// DDL this engine runs itself (a serial column's CREATE TABLE, DROP TABLE a, b): no
		// parameters, no rows, and nothing DuckDB could prepare as written.
		return &engine.Description{}, err
	}
	q, err := sequenceCalls(client) // pgsessionseq.go
	if err != nil {
		return nil, err
	}
	q, err = compatRequest(q, e.reopen.database)
	if err != nil {
		return nil, err
	}
	q = e.currvals.written(client, q)
	q = pgInsertDefaults(ctx, conn, client, q)    // pginsertdefaults.go
	p, err := prepareGrouped(conn, client, q.SQL) // mysqlgroupby.go
	if err != nil {
		return nil, showError(client, q, wrapErr(err))
	}
	if typed, ok := typeUntypedParams(conn, client, p.sqlText, p.params, true); ok {
		if p, err = prepare(conn, typed); err != nil {
			return nil, showError(client, q, wrapErr(err))
		}
	}
	d := &engine.Description{}
	for i, t := range p.params {
		if t == duckdb.TYPE_INVALID {
			t = castType(conn, p.sqlText, i+1)
		}
		name := paramTypeName(t)
		if t == duckdb.TYPE_LIST || t == duckdb.TYPE_ARRAY {
			name = listParamType(ctx, conn, p.sqlText, i+1)
		}
		d.Params = append(d.Params, fieldFor(fmt.Sprintf("$%d", i+1), name))
	}
	if p.kind == duckdb.STATEMENT_TYPE_SELECT {
		names := clientNames(ctx, conn, q)
		schema := keptSchema(conn, p.sqlText, names)
		if schema == nil {
			schema = resultSchema(ctx, conn, p.sqlText, len(p.params), names)
		}
		d.Schema = pgTypedSchema(schema, pgTableTypes(ctx, conn, q))
	}
	return d, nil
}

// resultSchema asks DuckDB for a query's columns without running it (DESCRIBE binds and plans
// it, with NULL parameters), named by names when there is one per column (clientNames); nil
// when it cannot tell, and the columns come when it runs.
func resultSchema(ctx context.Context, conn *sql.Conn, sqlText string, params int, names []string) *arrow.Schema {
	describePlans.Add(1)
	rows, err := conn.QueryContext(ctx, "DESCRIBE "+sqlText, make([]any, params)...)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var fields []arrow.Field
	for rows.Next() {
		var name, typ string
		var rest [4]any
		if rows.Scan(&name, &typ, &rest[0], &rest[1], &rest[2], &rest[3]) != nil {
			return nil
		}
		fields = append(fields, fieldFor(name, typ))
	}
	if rows.Err() != nil {
		return nil
	}
	return namedSchema(fields, names)
}

// namedSchema is fields as a schema, named by names when there is one per column; nil for no
// fields.
func namedSchema(fields []arrow.Field, names []string) *arrow.Schema {
	if len(fields) == 0 {
		return nil
	}
	names = perColumn(names, len(fields))
	for i := range names {
		if names[i] != "" {
			fields[i].Name = names[i]
		}
	}
	return arrow.NewSchema(fields, nil)
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

// Execute runs q on a pooled connection, in a transaction of its own. Cancelling ctx
// interrupts the query in DuckDB.
func (e *Engine) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	if isMySQL(q) {
		return e.mysqlExecute(ctx, q) // mysqlwritelock.go
	}
	ctx, release, err := e.writeTurn(ctx, q) // pgwritelock.go
	if err != nil || release == nil {
		if err != nil {
			return nil, err
		}
		return e.execute(ctx, q)
	}
	ended := e.writes.working() // the statement's run; each read of its rows after (reading)
	rows, err := e.execute(ctx, q)
	ended()
	return withWrites(e.writes.reading(rows, err), err, release)
}

func (e *Engine) execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	ctx = withColumnKeysCache(ctx, &e.keys)
	if call, ok, err := readAdvisory(q); ok {
		if err != nil {
			return nil, err
		}
		return e.advisory.run(ctx, call, q, false, startupDeadlockTimeout(q))
	}
	if maybeRowUpsert(q) { // a statement of its own transaction, on a session's one connection (mysqlupsertrows.go)
		s, err := e.OpenSession(ctx, q)
		if err != nil {
			return nil, err
		}
		defer s.Close()
		return s.Execute(ctx, q)
	}
	q, err := copyOutQuery(q)
	if err != nil {
		return nil, err
	}
	client := q
	if q, err = sequenceCalls(q); err != nil { // pgsessionseq.go
		return nil, err
	}
	q, err = compatRequest(q, e.reopen.database)
	if err != nil {
		return nil, err
	}
	q = e.currvals.written(client, q)
	own, handled, err := ownStatement(client)
	if err != nil {
		return nil, err
	}
	if handled {
		e.noteActions(client)
		e.noteYear(client) // mysqlyear.go
	}
	if err := e.found.count(ctx, client, e.Execute); err != nil {
		return nil, err
	}
	conn, err := e.connFor(ctx, client)
	if err != nil {
		return nil, err
	}
	if handled {
		rows, err := own(ctx, conn, false)
		// after an error the connection's transaction state is unsure; a SET's variables are
		// the client's (mysqlvars.go)
		release(conn, err == nil && !sqltok.FirstKeywordIs(client.SQL, sqltok.MySQL, "set"))
		e.noteFatal(err)
		return rows, e.checkViolation(ctx, client, err) // a COPY's row (pgcheckerror.go)
	}
	q = pgInsertDefaults(ctx, conn, client, q)                  // pginsertdefaults.go
	if q, err = pgFitValues(ctx, conn, client, q); err != nil { // pgvarcharfit.go
		release(conn, true)
		return nil, err
	}
	if q, err = e.identityWrite(ctx, conn, client, q); err != nil { // pgidentity.go
		release(conn, true)
		return nil, err
	}
	q = e.yearValues(ctx, conn, client, q) // mysqlyear.go
	q, up := mysqlUpsert(ctx, conn, client, q)
	q, ai := mysqlInsert(ctx, conn, client, q)
	q, uc := mysqlUpdate(ctx, conn, client, q)
	if err := setLastInsertID(ctx, conn, client); err != nil {
		release(conn, true)
		return nil, err
	}
	if err := e.found.set(ctx, conn, client); err != nil {
		release(conn, true)
		return nil, err
	}
	st, err := e.statement(conn, client, q.SQL)
	if err != nil {
		err = showError(client, q, err)
		release(conn, true)
		if e.noteFatal(err) && isInvalidated(err) && !retried(ctx) {
			return e.Execute(retrying(ctx), client) // nothing ran: the database was already gone
		}
		return nil, err
	}
	if st.tx != txNone {
		release(conn, true)
		return outsideTransaction(st)
	}
	outer := ctx
	ctx, cancel, explain, err := withTimeout(ctx, q)
	if err != nil {
		release(conn, true)
		return nil, err
	}
	if up != nil {
		defer func() { release(conn, st.clean()); cancel() }()
		rows, err := up.count(ctx, conn, false, func() (query.Rows, error) { return runInsert(ctx, conn, q, st.p, ai) })
		e.noteFatal(err)
		return rows, explain(err)
	}
	if uc != nil {
		defer func() { release(conn, st.clean()); cancel() }()
		rows, err := uc.run(ctx, conn, false, q, st.p)
		if err != nil && stillReferenced(err) {
			rows, err = uc.retryAside(ctx, conn, q, st.p, err) // mysqlupdatekeys.go
		}
		err = parentRowInUse(client, err) // mysqlparent.go
		e.noteFatal(err)
		return rows, explain(err)
	}
	if err := e.pgSetval(ctx, conn, false, client, q, st.p); err != nil { // pgsetval.go
		release(conn, true)
		cancel()
		e.noteFatal(err)
		return nil, explain(err)
	}
	taking := watchDefaults(ctx, conn, client, st.p) // pgsessionseq.go
	done := func() { taking.finish(ctx, conn); release(conn, st.clean()); cancel() }
	holding, held := ai != nil, false // a refused INSERT's ids are set on conn (mysqlaispent.go)
	rows, err := run(ctx, conn, q, st.p, func() {
		if holding {
			held = true
			return
		}
		done()
	})
	holding = false
	if held {
		if err != nil {
			ai.afterRefusal(context.WithoutCancel(outer), conn, err)
		}
		done()
	}
	if err == nil {
		taking.finish(ctx, conn) // an INSERT ... RETURNING's rows, before its client reads them (a no-op once done)
	}
	if err != nil && stillReferenced(err) { // a foreign key's ON DELETE action (pgcascade.go)
		rows, err = e.retryDelete(outer, nil, false, actionsClient(client, st.p.sqlText), q, st.p, err)
		err = mysqlActionError(client, err)
	}
	if err != nil {
		e.noteFatal(err)
		return nil, explain(e.checkViolation(outer, client, err)) // pgcheckerror.go
	}
	rows = &watchedRows{Rows: rows, onErr: func(err error) { e.noteFatal(err) }}
	if ai != nil {
		return ai.insertTag(ctx, rows)
	}
	return rows, nil
}

// runInsert runs a MySQL client's INSERT or REPLACE to its command tag (for upsert.count),
// leaving conn to the caller.
func runInsert(ctx context.Context, conn *sql.Conn, q *query.Request, p *prepared, ai *aiInsert) (query.Rows, error) {
	rows, err := run(ctx, conn, q, p, func() {})
	if err != nil || ai == nil {
		return rows, err
	}
	return ai.insertTag(ctx, rows)
}

// run executes q as prepared (p) on conn; done is called once conn is no longer needed by
// the result. The result's columns are named by q's text (p's may have cast parameters).
func run(ctx context.Context, conn *sql.Conn, q *query.Request, p *prepared, done func()) (query.Rows, error) {
	args, err := coerceArgs(p.params, q.Args, q.Protocol == query.ProtocolPostgres)
	if err != nil {
		done()
		return nil, err
	}
	var names, declared, keys []string
	var pgTypes []pgColumnType
	if p.kind == duckdb.STATEMENT_TYPE_SELECT {
		names, declared = clientNames(ctx, conn, q), declareMore(trinoDeclared(q), trinoTableTypes(ctx, conn, q))
		keys, pgTypes = mysqlColumnKeys(ctx, conn, q), pgTableTypes(ctx, conn, q)
		if rows, ok, err := streamSelect(ctx, conn, p.sqlText, args, p.kind, names, declared, keys, pgTypes, done); ok {
			return rows, err
		}
	}
	if p.kind != duckdb.STATEMENT_TYPE_SELECT {
		if tag, ok, err := execKept(ctx, conn, p, args); ok { // keptprepared.go
			done()
			if err != nil {
				return nil, wrapErr(err)
			}
			return engine.TagRows(tag), nil
		}
	}
	rows, err := conn.QueryContext(ctx, p.sqlText, args...)
	if err != nil {
		done()
		return nil, wrapErr(err)
	}
	closeAll := func() error {
		err := rows.Close()
		done()
		return err
	}
	cols, err := rows.ColumnTypes()
	if err != nil {
		closeAll()
		return nil, wrapErr(err)
	}
	if tag, counted := countTag(p.kind, cols); counted {
		// INSERT/UPDATE/DELETE without RETURNING: one row holding the count.
		var n int64
		for rows.Next() {
			if err := rows.Scan(&n); err != nil {
				closeAll()
				return nil, wrapErr(err)
			}
		}
		err := rows.Err()
		closeAll()
		if err != nil {
			return nil, wrapErr(err)
		}
		return engine.TagRows(tag + strconv.FormatInt(n, 10)), nil
	}
	if !returnsRows(p.kind) {
		for rows.Next() {
		}
		err := rows.Err()
		closeAll()
		if err != nil {
			return nil, wrapErr(err)
		}
		return engine.TagRows(tagFromSQL(p.sqlText)), nil
	}
	described := make([]column, len(cols))
	for i, c := range cols {
		described[i] = column{name: c.Name(), dbType: c.DatabaseTypeName()}
	}
	rename(described, names)
	declare(described, declared)
	keyed(described, keys)
	pgTyped(described, pgTypes)
	return newStream(rows, described, p.kind, closeAll), nil
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
		return duckError(de.Type, de.Msg)
	}
	return err
}

// duckError is a DuckDB error of class t as clients get it.
func duckError(t duckdb.ErrorType, msg string) *query.Error {
	if t == duckdb.ErrorTypeFatal {
		return &query.Error{Code: codeFatal, Message: msg + " (queryflux reopens the database)"}
	}
	if t == duckdb.ErrorTypeTransaction && strings.Contains(msg, "Conflict on") {
		// Two transactions wrote the same row: where PostgreSQL makes the second wait,
		// DuckDB fails it (left only where the write lock cannot help: pgwritelock.go).
		// Clients retry a serialization failure (pgbench --max-tries) by its code and
		// PostgreSQL's message.
		return &query.Error{Code: sqlstate.SerializationFailure, Message: conflictMessage}
	}
	if t == duckdb.ErrorTypeConstraint {
		return &query.Error{Code: constraintState(msg), Message: msg}
	}
	if qe, ok := likeEscapeError(msg); ok { // pglike.go
		return qe
	}
	if _, raised, ok := strings.Cut(msg, raisedPrefix); ok && t == duckdb.ErrorTypeInvalidInput && len(raised) > 6 {
		return &query.Error{Code: raised[:5], Message: raised[6:]}
	}
	return &query.Error{Code: missingState(t, msg), Message: msg}
}

// raisedPrefix starts the message of an error a compatibility macro raises (error('...')) as
// the client's database would: the SQLSTATE follows, then a blank and the message.
const raisedPrefix = "qfpg "

// missingState is the SQLSTATE of a DuckDB error as PostgreSQL classes the same condition:
// DuckDB's catalog errors name what is missing (a function, a schema, a type: 42883, 3F000,
// 42704, where the class alone says an undefined table), and its binder errors a function
// or operator no argument types match (42883, where the class alone says an undefined column).
func missingState(t duckdb.ErrorType, msg string) string {
	if strings.HasSuffix(msg, "is not yet defined in this session") { // currval's, DuckDB's or pgcurrval.go's
		return sqlstate.ObjectNotInPrerequisiteState
	}
	switch t {
	case duckdb.ErrorTypeCatalog:
		switch {
		case strings.HasSuffix(msg, "already exists!") && strings.Contains(msg, "Schema with name"):
			return sqlstate.DuplicateSchema
		case strings.HasSuffix(msg, "already exists!") && (strings.Contains(msg, "Table with name") ||
			strings.Contains(msg, "Index with name") || strings.Contains(msg, "Sequence with name") || strings.Contains(msg, "View with name")):
			return sqlstate.DuplicateTable // PostgreSQL's relations: one namespace
		case strings.Contains(msg, "Function with name"):
			return sqlstate.UndefinedFunction
		case strings.Contains(msg, "Schema with name"):
			return sqlstate.InvalidSchemaName
		case strings.Contains(msg, "Type with name"):
			return sqlstate.UndefinedObject
		}
	case duckdb.ErrorTypeInvalidInput: // trinoShow's mustExist
		switch {
		case strings.HasPrefix(msg, "Invalid Input Error: Catalog '") && strings.HasSuffix(msg, "' does not exist"):
			return sqlstate.InvalidCatalogName
		case strings.HasPrefix(msg, "Invalid Input Error: Schema '") && strings.HasSuffix(msg, "' does not exist"):
			return sqlstate.InvalidSchemaName
		case strings.Contains(msg, "which is attached in read-only mode"): // a file opened read-only
			return sqlstate.ReadOnlySQLTransaction
		}
	case duckdb.ErrorTypeBinder:
		if strings.Contains(msg, "No function matches") || strings.Contains(msg, "Cannot compare values of type") {
			return sqlstate.UndefinedFunction
		}
	}
	return stateOf(t)
}

// constraintState is the SQLSTATE of the constraint a DuckDB constraint error names, as
// PostgreSQL reports it (applications test 23505 for a duplicate key); DuckDB gives all of them
// one error class.
func constraintState(msg string) string {
	lower := strings.ToLower(msg)
	switch {
	case strings.Contains(lower, "duplicate key"), strings.Contains(lower, "violates primary key"), strings.Contains(lower, "violates unique"):
		return sqlstate.UniqueViolation
	case strings.Contains(lower, "not null constraint"):
		return sqlstate.NotNullViolation
	case strings.Contains(lower, "check constraint"):
		return sqlstate.CheckViolation
	case strings.Contains(lower, "foreign key"):
		return sqlstate.ForeignKeyViolation
	}
	return sqlstate.IntegrityConstraintViolation
}

// stateOf maps DuckDB's error classes to the nearest SQLSTATE.
func stateOf(t duckdb.ErrorType) string {
	switch t {
	case duckdb.ErrorTypeParser, duckdb.ErrorTypeSyntax:
		return query.CodeSyntax
	case duckdb.ErrorTypeCatalog:
		return sqlstate.UndefinedTable
	case duckdb.ErrorTypeBinder:
		return sqlstate.UndefinedColumn
	case duckdb.ErrorTypeConstraint:
		return sqlstate.IntegrityConstraintViolation
	case duckdb.ErrorTypeDivideByZero:
		return sqlstate.DivisionByZero
	case duckdb.ErrorTypeOutOfRange:
		return sqlstate.NumericValueOutOfRange
	case duckdb.ErrorTypeConversion, duckdb.ErrorTypeMismatchType, duckdb.ErrorTypeInvalidInput:
		return sqlstate.InvalidTextRepresentation
	case duckdb.ErrorTypeInterrupt:
		return sqlstate.QueryCanceled
	case duckdb.ErrorTypeTransaction:
		return sqlstate.InvalidTransactionState
	case duckdb.ErrorTypePermission:
		return query.CodeAccessDenied
	case duckdb.ErrorTypeNotImplemented:
		return sqlstate.FeatureNotSupported
	case duckdb.ErrorTypeOutOfMemory:
		return sqlstate.OutOfMemory
	}
	return query.CodeEngine
}

// coerceArgs parses text arguments (what PostgreSQL-wire clients send) into the type DuckDB
// inferred for the parameter: DuckDB does not cast VARCHAR parameters implicitly. Arguments
// must match the parameters one for one: DuckDB would ignore one too many. pgText: the text
// is PostgreSQL's, whose bytea (\x0102) DuckDB would read otherwise (byte 1, then "02").
func coerceArgs(types []duckdb.Type, args []any, pgText bool) ([]any, error) {
	if len(args) != len(types) {
		return nil, &query.Error{Code: sqlstate.SyntaxError, Message: fmt.Sprintf(
			"wrong number of parameters: the statement has %d, %d given", len(types), len(args))}
	}
	if len(args) == 0 {
		return nil, nil
	}
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
		s, isText := a.(string)
		if !isText {
			continue
		}
		v, err := parseAs(types[i], s)
		if pgText && types[i] == duckdb.TYPE_BLOB {
			v, err = byteaFromText(s)
		}
		if err != nil {
			return nil, &query.Error{Code: sqlstate.InvalidTextRepresentation, Message: fmt.Sprintf("parameter $%d: %v", i+1, err)}
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
	case duckdb.TYPE_LIST, duckdb.TYPE_ARRAY:
		if !isDuckDBList(s) {
			return pgArrayToList(s)
		}
	case duckdb.TYPE_DATE:
		return time.Parse("2006-01-02", strings.TrimSpace(s))
	case duckdb.TYPE_TIMESTAMP, duckdb.TYPE_TIMESTAMP_TZ:
		// A blank before the offset is PostgreSQL's too (Sequelize writes "... 03:04:05.000 +00:00").
		for _, layout := range []string{"2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999Z07", "2006-01-02 15:04:05.999999999",
			"2006-01-02 15:04:05.999999999 Z07:00", "2006-01-02 15:04:05.999999999 Z07", "2006-01-02T15:04:05.999999999Z07:00", "2006-01-02"} {
			if ts, err := time.Parse(layout, strings.TrimSpace(s)); err == nil {
				return ts, nil
			}
		}
		return nil, fmt.Errorf("invalid timestamp %q", s)
	}
	return s, nil
}
