package flightsql

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// Bulk ingest (CommandStatementIngest: ADBC's adbc_ingest, arrow-go's ExecuteIngest) loads the
// batches a client streams into a table of the engine its statements route to: CREATE TABLE
// from the Arrow schema where the table definition options say so, then multi-row INSERTs
// with parameters, one batch of the client's at a time (nothing holds the whole stream). Every
// statement goes through the proxy core as the client's own would: its routing, access rules
// (the catalog it names), readOnly and blocked statements apply.
//
// Outside a client's transaction the ingest runs on one pinned session (engine.SessionOpener)
// in a transaction of its own: it holds one capacity slot from its first statement to its
// COMMIT, and a failure leaves nothing behind (but for MySQL's DDL, which commits itself: a
// table created or replaced stays). In a client's transaction it runs on that transaction's
// session and commits nothing. A temporary table lives until its transaction ends (PostgreSQL:
// ON COMMIT DROP, since a pooled connection outlives the transaction; MySQL's and DuckDB's
// sessions retire a connection that made one), so a temporary ingest needs a transaction.

// ingestParamsMax bounds the parameters of one INSERT (PostgreSQL's and MySQL's protocols
// number them in 16 bits); ingestRowsMax its rows.
const (
	ingestParamsMax = 65_535
	ingestRowsMax   = 1_000
)

// ingestDialect is how an engine kind names tables, types and parameters.
type ingestDialect struct {
	kind  engineKind
	quote string
}

func (d ingestDialect) ident(name string) string { return quoteIdent(name, d.quote) }

// param is the n-th (1-based) parameter marker.
func (d ingestDialect) param(n int) string {
	if d.kind == kindMySQL || d.kind == kindTrino {
		return "?"
	}
	return "$" + strconv.Itoa(n)
}

func (d ingestDialect) engineName() string {
	switch d.kind {
	case kindPostgres:
		return "PostgreSQL"
	case kindMySQL:
		return "MySQL"
	case kindDuckDB:
		return "DuckDB"
	}
	return "Trino"
}

// columnType is the column type the engine stores values of Arrow type t in; an error says
// why none fits.
func (d ingestDialect) columnType(t arrow.DataType) (string, error) {
	if dict, ok := t.(*arrow.DictionaryType); ok {
		return d.columnType(dict.ValueType)
	}
	pg, my, duck, trino := "", "", "", ""
	switch t := t.(type) {
	case *arrow.BooleanType:
		pg, my, duck, trino = "boolean", "BOOLEAN", "BOOLEAN", "boolean"
	case *arrow.Int8Type:
		pg, my, duck, trino = "smallint", "TINYINT", "TINYINT", "tinyint"
	case *arrow.Int16Type:
		pg, my, duck, trino = "smallint", "SMALLINT", "SMALLINT", "smallint"
	case *arrow.Int32Type:
		pg, my, duck, trino = "integer", "INT", "INTEGER", "integer"
	case *arrow.Int64Type:
		pg, my, duck, trino = "bigint", "BIGINT", "BIGINT", "bigint"
	case *arrow.Uint8Type:
		pg, my, duck, trino = "smallint", "TINYINT UNSIGNED", "UTINYINT", "smallint"
	case *arrow.Uint16Type:
		pg, my, duck, trino = "integer", "SMALLINT UNSIGNED", "USMALLINT", "integer"
	case *arrow.Uint32Type:
		pg, my, duck, trino = "bigint", "INT UNSIGNED", "UINTEGER", "bigint"
	case *arrow.Uint64Type:
		pg, my, duck, trino = "numeric(20,0)", "BIGINT UNSIGNED", "UBIGINT", "decimal(20,0)"
	case *arrow.Float16Type, *arrow.Float32Type:
		pg, my, duck, trino = "real", "FLOAT", "REAL", "real"
	case *arrow.Float64Type:
		pg, my, duck, trino = "double precision", "DOUBLE", "DOUBLE", "double"
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		pg, my, duck, trino = "text", "LONGTEXT", "VARCHAR", "varchar"
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType, *arrow.FixedSizeBinaryType:
		pg, my, duck, trino = "bytea", "LONGBLOB", "BLOB", "varbinary"
	case *arrow.Date32Type, *arrow.Date64Type:
		pg, my, duck, trino = "date", "DATE", "DATE", "date"
	case *arrow.Time32Type, *arrow.Time64Type:
		pg, my, duck, trino = "time", "TIME(6)", "TIME", "time(6)"
	case *arrow.TimestampType:
		// MySQL's TIMESTAMP ends in 2038: an instant is kept as its UTC wall clock in DATETIME.
		pg, my, duck, trino = "timestamp", "DATETIME(6)", "TIMESTAMP", "timestamp(6)"
		if t.TimeZone != "" {
			pg, duck, trino = "timestamp with time zone", "TIMESTAMPTZ", "timestamp(6) with time zone"
		}
	case arrow.DecimalType:
		p, s := t.GetPrecision(), t.GetScale()
		limit, scaleLimit := int32(1000), int32(1000)
		switch d.kind {
		case kindMySQL:
			limit, scaleLimit = 65, 30
		case kindDuckDB, kindTrino:
			limit, scaleLimit = 38, 38
		}
		if p > limit || s > scaleLimit || s < 0 {
			return "", fmt.Errorf("%s has no decimal of precision %d and scale %d (at most %d and %d)", d.engineName(), p, s, limit, scaleLimit)
		}
		n := fmt.Sprintf("(%d,%d)", p, s)
		pg, my, duck, trino = "numeric"+n, "DECIMAL"+n, "DECIMAL"+n, "decimal"+n
	case arrow.ListLikeType:
		if _, fixed := t.(*arrow.FixedSizeListType); d.kind == kindMySQL || fixed || t.ID() == arrow.MAP {
			break
		}
		elem, err := d.columnType(t.Elem())
		if err != nil {
			return "", fmt.Errorf("its elements: %w", err)
		}
		if _, nested := t.Elem().(arrow.ListLikeType); nested && d.kind == kindPostgres {
			return "", fmt.Errorf("PostgreSQL's arrays of arrays are one type with its element's: a list of lists has no column type")
		}
		pg, duck, trino = elem+"[]", elem+"[]", "array("+elem+")"
	}
	var name string
	switch d.kind {
	case kindPostgres:
		name = pg
	case kindMySQL:
		name = my
	case kindDuckDB:
		name = duck
	default:
		name = trino
	}
	if name == "" {
		return "", fmt.Errorf("%s has no column type for Arrow's %s", d.engineName(), t)
	}
	return name, nil
}

// ingestPlan is one ingest's statements.
type ingestPlan struct {
	dialect ingestDialect
	table   string // qualified and quoted
	columns string // the quoted column list
	create  string // CREATE TABLE of the schema, without its verb's IF NOT EXISTS
	temp    bool
	cols    int
}

// planIngest checks the command and the client's schema and words the statements.
func planIngest(d ingestDialect, cmd fsql.StatementIngest, schema *arrow.Schema) (*ingestPlan, error) {
	if cmd.GetTable() == "" {
		return nil, status.Error(codes.InvalidArgument, "ingest: the command names no table")
	}
	if schema == nil || schema.NumFields() == 0 {
		return nil, status.Error(codes.InvalidArgument, "ingest: the stream has no columns (send the table's Arrow schema)")
	}
	p := &ingestPlan{dialect: d, temp: cmd.GetTemporary(), cols: schema.NumFields()}
	var parts []string
	if p.temp {
		if cmd.GetCatalog() != "" || cmd.GetSchema() != "" {
			return nil, status.Error(codes.InvalidArgument, "ingest: a temporary table lives in the session's own schema; name no catalog or schema for it")
		}
		switch d.kind {
		case kindPostgres:
			parts = []string{"pg_temp"} // unqualified, a DROP could reach a permanent table of the name
		case kindDuckDB:
			parts = []string{"temp", "main"}
		}
	} else {
		if c := cmd.GetCatalog(); c != "" {
			if d.kind == kindMySQL && c != "def" {
				return nil, status.Errorf(codes.InvalidArgument, "ingest: catalog %q: MySQL has one catalog, def; name the database as the schema", c)
			}
			if d.kind != kindMySQL {
				parts = append(parts, c)
			}
		}
		if sc := cmd.GetSchema(); sc != "" {
			parts = append(parts, sc)
		}
	}
	parts = append(parts, cmd.GetTable())
	for i := range parts {
		parts[i] = d.ident(parts[i])
	}
	p.table = strings.Join(parts, ".")

	var cols, defs []string
	seen := map[string]bool{}
	for i, f := range schema.Fields() {
		if f.Name == "" {
			return nil, status.Errorf(codes.InvalidArgument, "ingest: column %d has no name", i+1)
		}
		if seen[strings.ToLower(f.Name)] {
			return nil, status.Errorf(codes.InvalidArgument, "ingest: column %q is named twice", f.Name)
		}
		seen[strings.ToLower(f.Name)] = true
		typ, err := d.columnType(f.Type)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "ingest: column %q: %v", f.Name, err)
		}
		def := d.ident(f.Name) + " " + typ
		if !f.Nullable {
			def += " NOT NULL"
		}
		cols = append(cols, d.ident(f.Name))
		defs = append(defs, def)
	}
	p.columns = strings.Join(cols, ", ")
	p.create = "TABLE " + p.table + " (" + strings.Join(defs, ", ") + ")"
	return p, nil
}

// createSQL creates the table; ifNotExists leaves one that exists.
func (p *ingestPlan) createSQL(ifNotExists bool) string {
	verb := "CREATE "
	if p.temp {
		verb += "TEMPORARY "
	}
	create := p.create
	if ifNotExists {
		create = "TABLE IF NOT EXISTS " + strings.TrimPrefix(create, "TABLE ")
	}
	sql := verb + create
	if p.temp && p.dialect.kind == kindPostgres {
		sql += " ON COMMIT DROP"
	}
	return sql
}

func (p *ingestPlan) dropSQL(ifExists bool) string {
	verb := "DROP TABLE "
	if p.temp && p.dialect.kind == kindMySQL {
		verb = "DROP TEMPORARY TABLE " // never a permanent table of the name
	}
	if ifExists {
		verb += "IF EXISTS "
	}
	return verb + p.table
}

// insertSQL inserts rows rows.
func (p *ingestPlan) insertSQL(rows int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO " + p.table + " (" + p.columns + ") VALUES ")
	n := 0
	for r := range rows {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for c := range p.cols {
			if c > 0 {
				b.WriteString(", ")
			}
			n++
			b.WriteString(p.dialect.param(n))
		}
		b.WriteByte(')')
	}
	return b.String()
}

// rowsPerInsert is how many rows one INSERT carries.
func (p *ingestPlan) rowsPerInsert() int {
	return max(1, min(ingestRowsMax, ingestParamsMax/p.cols))
}

// ingestRun runs one ingest's statements, on a pinned session or (an engine that pins none)
// through the backend.
type ingestRun struct {
	s        *Server
	ctx      context.Context
	sess     engine.Session
	database string // the catalog the command names, for routing and access rules
}

func (r *ingestRun) request(sql string, args []any) *query.Request {
	q := r.s.request(r.ctx, sql, args)
	if r.database != "" {
		q.Database = r.database
	}
	return q
}

// exec runs sql and returns its count (-1 unknown).
func (r *ingestRun) exec(sql string, args []any) (int64, error) {
	var rows query.Rows
	var err error
	if r.sess != nil {
		rows, err = r.sess.Execute(r.ctx, r.request(sql, args))
	} else {
		rows, err = r.s.backend.Execute(r.ctx, r.request(sql, args))
	}
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	if err := drain(r.ctx, rows); err != nil {
		return 0, err
	}
	return affected(rows.Tag()), nil
}

// exists reports whether the table exists, by reading no row of it.
func (r *ingestRun) exists(p *ingestPlan) bool {
	_, err := r.exec("SELECT 1 FROM "+p.table+" WHERE 1 = 0", nil)
	return err == nil
}

// DoPutCommandStatementIngest loads the client's batches into the table the command names.
// The count is of rows committed (or, in the client's transaction, inserted in it).
func (s *Server) DoPutCommandStatementIngest(ctx context.Context, cmd fsql.StatementIngest, rdr flight.MessageReader) (int64, error) {
	if rdr == nil {
		return 0, status.Error(codes.InvalidArgument, "ingest: no data stream")
	}
	d := ingestDialect{kind: s.kindOf(ctx), quote: `"`}
	if d.kind == kindMySQL {
		d.quote = "`"
	}
	plan, err := planIngest(d, cmd, rdr.Schema())
	if err != nil {
		if rdr.Schema() == nil && rdr.Err() != nil {
			return 0, status.Errorf(codes.InvalidArgument, "ingest: reading the stream: %v", rdr.Err())
		}
		return 0, err
	}
	txID := cmd.GetTransactionId()
	if plan.temp && len(txID) == 0 {
		return 0, status.Error(codes.InvalidArgument,
			"ingest: a temporary table lives until its transaction ends; begin a transaction (BeginTransaction) and ingest in it")
	}
	run := &ingestRun{s: s, ctx: ctx}
	if d.kind != kindMySQL {
		run.database = cmd.GetCatalog()
	}
	if len(txID) > 0 {
		tx, err := s.claimTx(ctx, txID)
		if err != nil {
			return 0, err
		}
		run.sess = tx.session
		n, err := s.ingestOn(run, plan, cmd, rdr, true)
		s.releaseTx(tx, err)
		return n, ingestStatus(ctx, err)
	}
	if opener, ok := s.backend.(engine.SessionOpener); ok {
		// The session holds one capacity slot for the whole ingest.
		sess, err := opener.OpenSession(ctx, run.request("BEGIN", nil))
		if err != nil {
			return 0, ingestStatus(ctx, err)
		}
		defer sess.Close() // rolls back whatever a failure left open
		run.sess = sess
	}
	n, err := s.ingestOn(run, plan, cmd, rdr, false)
	if err != nil {
		if run.sess != nil {
			n = 0 // rolled back
		}
		return n, ingestStatus(ctx, err)
	}
	if run.sess != nil {
		if _, err := run.exec("COMMIT", nil); err != nil {
			return 0, ingestStatus(ctx, err)
		}
	}
	return n, nil
}

// ingestOn defines the table as the options say and inserts every batch; inTx: in the client's
// transaction.
func (s *Server) ingestOn(run *ingestRun, plan *ingestPlan, cmd fsql.StatementIngest, rdr flight.MessageReader, inTx bool) (int64, error) {
	opts := cmd.GetTableDefinitionOptions()
	ifNotExist := opts.GetIfNotExist()
	ifExists := opts.GetIfExists()
	// A transaction of the ingest's own is begun before its DDL where the engine's DDL is
	// transactional (PostgreSQL, DuckDB), after it on MySQL (whose DDL commits).
	ownTx := !inTx && run.sess != nil
	if ownTx && plan.dialect.kind != kindMySQL {
		if _, err := run.exec("BEGIN", nil); err != nil {
			return 0, err
		}
	}
	if err := defineTable(run, plan, ifNotExist, ifExists); err != nil {
		return 0, err
	}
	if run.sess != nil && (ownTx || inTx) && run.sess.TxStatus() == 'I' {
		// MySQL's DDL committed: the rows go on in a transaction (the client's, or the ingest's).
		if _, err := run.exec("BEGIN", nil); err != nil {
			return 0, err
		}
	}
	return insertAll(run, plan, rdr)
}

// defineTable creates, replaces or checks the table as the options say (unspecified: create a
// table that does not exist, fail on one that does, as ADBC's default mode "create").
func defineTable(run *ingestRun, plan *ingestPlan, ifNotExist fsql.TableDefinitionOptionsTableNotExistOption, ifExists fsql.TableDefinitionOptionsTableExistsOption) error {
	create := ifNotExist != fsql.TableDefinitionOptionsTableNotExistOptionFail
	switch ifExists {
	case fsql.TableDefinitionOptionsTableExistsOptionAppend:
		if create {
			_, err := run.exec(plan.createSQL(true), nil)
			return err
		}
		return nil // the INSERT finds the table, or fails naming it
	case fsql.TableDefinitionOptionsTableExistsOptionReplace:
		_, err := run.exec(plan.dropSQL(create), nil) // without IF EXISTS the DROP fails on a missing table
		if err == nil {
			_, err = run.exec(plan.createSQL(false), nil)
		}
		return err
	}
	if create {
		_, err := run.exec(plan.createSQL(false), nil) // fails on a table that exists
		return err
	}
	if run.exists(plan) {
		return status.Errorf(codes.AlreadyExists, "ingest: table %s exists, and the options say to fail if it does", plan.table)
	}
	return status.Errorf(codes.NotFound, "ingest: table %s does not exist, and the options say not to create it", plan.table)
}

// insertAll inserts the stream's batches one at a time, each in INSERTs of at most
// rowsPerInsert rows, and returns the rows inserted.
func insertAll(run *ingestRun, plan *ingestPlan, rdr flight.MessageReader) (int64, error) {
	per := plan.rowsPerInsert()
	full := plan.insertSQL(per) // the same text for every full INSERT
	schema := rdr.Schema()
	var total int64
	read := 0 // rows of the stream before this batch
	for rdr.Next() {
		batch := rdr.RecordBatch()
		if !batch.Schema().Equal(schema) {
			return total, status.Error(codes.InvalidArgument, "ingest: a batch's schema differs from the stream's")
		}
		rows := int(batch.NumRows())
		for c, col := range batch.Columns() {
			if err := checkColumn(col, rows); err != nil {
				return total, status.Errorf(codes.InvalidArgument, "ingest: column %q: %v", schema.Field(c).Name, err)
			}
		}
		for from := 0; from < rows; from += per {
			n := min(per, rows-from)
			args := make([]any, 0, n*plan.cols)
			for i := from; i < from+n; i++ {
				for c, col := range batch.Columns() {
					v, err := goValue(col, i)
					if err != nil {
						return total, status.Errorf(codes.InvalidArgument, "ingest: column %q, row %d: %v", schema.Field(c).Name, read+i+1, err)
					}
					args = append(args, v)
				}
			}
			sql := full
			if n < per {
				sql = plan.insertSQL(n)
			}
			got, err := run.exec(sql, args)
			if err != nil {
				return total, err
			}
			if got < 0 {
				got = int64(n)
			}
			total += got
		}
		read += rows
	}
	if err := rdr.Err(); err != nil {
		return total, status.Errorf(codes.InvalidArgument, "ingest: reading the stream: %v", err)
	}
	return total, nil
}

// ingestStatus is the status of an ingest's failure: a table that exists where it must not is
// AlreadyExists, one missing NotFound (ADBC's codes for them), as the engine's SQLSTATE says.
func ingestStatus(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var qe *query.Error
	if errors.As(err, &qe) {
		switch qe.Code {
		case sqlstate.DuplicateTable, sqlstate.MySQLTableExists:
			return status.Errorf(codes.AlreadyExists, "[%s] %s", qe.Code, qe.Message)
		case sqlstate.UndefinedTable, sqlstate.MySQLNoSuchTable:
			return status.Errorf(codes.NotFound, "[%s] %s", qe.Code, qe.Message)
		}
	}
	return toStatus(contextOr(ctx, err))
}
