package flightsql

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/heldmem"
)

// paramValuesMax bounds the parameter values (rows times columns) one DoPut binds.
const paramValuesMax = 1 << 20

// Prepared statements are the server's, not a connection's (a gRPC client reconnects under its
// handles), so they are bounded per user: one user's client that prepares without closing (a
// leak, or on purpose) fills its own user's share, not every user's. preparedMax bounds them all
// (memory, with trustLoopback's any-name logins); an idle statement is forgotten after
// Options.PreparedIdleTTL.
const (
	preparedMax             = 10_000
	preparedPerUserMax      = 1_000
	preparedBytesPerUserMax = 64 << 20 // SQL text and bound values
)

// preparedHeld counts what one user's prepared statements hold; their bytes draw on the
// node's pool (netlimit.Limits.Held) with every other frontend's clients, so that many users
// (trustLoopback logs any name in) cannot together hold more than the daemon's bound.
type preparedHeld struct {
	count  int
	budget *heldmem.Budget
}

// CreatePreparedStatement keeps the SQL under a new handle, with its dataset and parameter
// schemas as the engine describes them (engine.Describer: the proxy core routes the statement
// to its engine). An engine that cannot describe leaves them unset: the client learns the
// columns when the statement runs.
func (s *Server) CreatePreparedStatement(ctx context.Context, req fsql.ActionCreatePreparedStatementRequest) (fsql.ActionCreatePreparedStatementResult, error) {
	var res fsql.ActionCreatePreparedStatementResult
	tx, err := s.claimTx(ctx, req.GetTransactionId())
	if err != nil {
		return res, err
	}
	if desc, ok, err := s.describeIn(ctx, tx, s.request(ctx, req.GetQuery(), nil)); err != nil {
		return res, toStatus(err)
	} else if ok {
		res.DatasetSchema = desc.Schema // nil: not described (or no rows)
		if desc.Schema != nil {
			res.DatasetSchema = outSchema(desc.Schema)
		}
		res.ParameterSchema = arrow.NewSchema(paramFields(desc.Params), nil)
	}
	handle := newHandle()
	res.Handle = []byte(handle)
	user, sql := userOf(ctx), req.GetQuery()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.holdLocked(user, 1, len(sql)); err != nil {
		return fsql.ActionCreatePreparedStatementResult{}, err
	}
	s.prepared[handle] = &preparedStatement{sql: sql, user: user, used: time.Now(), txID: req.GetTransactionId()}
	return res, nil
}

// holdLocked counts count more statements and bytes more text and values (negative: fewer)
// for user, or refuses them (ResourceExhausted) past user's bounds, everyone's, or the daemon's.
func (s *Server) holdLocked(user string, count, bytes int) error {
	h := s.held[user]
	switch {
	case count > 0 && len(s.prepared) >= preparedMax:
		return s.refusePrepared(status.Errorf(codes.ResourceExhausted, "too many prepared statements (%d)", preparedMax))
	case h.count+count > preparedPerUserMax:
		return s.refusePrepared(status.Errorf(codes.ResourceExhausted,
			"user %q holds %d prepared statements, the most queryflux allows; close some (ClosePreparedStatement) before preparing more", user, h.count))
	}
	if h.budget == nil {
		h.budget = s.opts.Limits.Held.Budget(preparedBytesPerUserMax)
	}
	if bytes < 0 {
		h.budget.Give(-bytes)
	} else if err := h.budget.Take(bytes); err != nil {
		if h.count == 0 {
			h.budget.Close() // a user who holds nothing keeps no budget
		}
		if err.Daemon {
			return s.refusePrepared(status.Errorf(codes.ResourceExhausted, "user %q's prepared statement: %s", user, err))
		}
		return s.refusePrepared(status.Errorf(codes.ResourceExhausted,
			"user %q's prepared statements would hold more than %d MiB of text and parameter values; close some (ClosePreparedStatement) first", user, preparedBytesPerUserMax>>20))
	}
	h.count += count
	s.held[user] = h
	return nil
}

func (s *Server) refusePrepared(err error) error {
	s.refusals.WithLabelValues("flightsql", "prepared_statements").Inc()
	return err
}

// forgetLocked drops the statement under handle h and its share of its user's.
func (s *Server) forgetLocked(h string, p *preparedStatement) {
	delete(s.prepared, h)
	held := s.held[p.user]
	held.budget.Give(len(p.sql) + valuesBytes(p.args))
	if held.count--; held.count <= 0 {
		held.budget.Close()
		delete(s.held, p.user)
		return
	}
	s.held[p.user] = held
}

// valuesBytes is about what bound parameter values hold in memory.
func valuesBytes(args []any) int {
	n := 0
	for _, a := range args {
		n += 16 // the interface value
		switch v := a.(type) {
		case string:
			n += len(v)
		case []byte:
			n += len(v)
		}
	}
	return n
}

// paramFields names the parameters as Flight SQL clients expect ("parameter_1", ...), nullable.
func paramFields(params []arrow.Field) []arrow.Field {
	out := make([]arrow.Field, len(params))
	for i, p := range params {
		out[i] = arrow.Field{Name: fmt.Sprintf("parameter_%d", i+1), Type: p.Type, Nullable: true, Metadata: p.Metadata}
	}
	return out
}

// ClosePreparedStatement forgets a handle of the caller's user (another user's is left alone,
// as unknown handles are).
func (s *Server) ClosePreparedStatement(ctx context.Context, req fsql.ActionClosePreparedStatementRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := string(req.GetPreparedStatementHandle())
	if p, ok := s.prepared[h]; ok && p.user == userOf(ctx) {
		s.forgetLocked(h, p)
	}
	return nil
}

func (s *Server) preparedFor(ctx context.Context, handle []byte) (*preparedStatement, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.prepared[string(handle)]
	if !ok || p.user != userOf(ctx) {
		return nil, status.Error(codes.NotFound, "unknown prepared statement")
	}
	p.used = time.Now()
	return p, nil
}

// DoPutPreparedStatementQuery binds parameters: the first row of the batch the client sends.
func (s *Server) DoPutPreparedStatementQuery(ctx context.Context, cmd fsql.PreparedStatementQuery, r flight.MessageReader, _ flight.MetadataWriter) ([]byte, error) {
	p, err := s.preparedFor(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	args, err := readParams(r)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prepared[string(cmd.GetPreparedStatementHandle())] != p {
		return nil, status.Error(codes.NotFound, "unknown prepared statement") // closed or expired meanwhile
	}
	if err := s.holdLocked(p.user, 0, valuesBytes(args)-valuesBytes(p.args)); err != nil {
		return nil, err
	}
	p.args = args
	return cmd.GetPreparedStatementHandle(), nil
}

// GetFlightInfoPreparedStatement runs a prepared statement with its bound parameters.
func (s *Server) GetFlightInfoPreparedStatement(ctx context.Context, cmd fsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	p, err := s.preparedFor(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	sql, args := p.sql, p.args
	s.mu.Unlock()
	return s.flightInfo(ctx, p.txID, sql, args, desc)
}

// DoPutPreparedStatementUpdate runs a prepared statement without rows, once per parameter row
// (once when none are sent), and returns the total count.
func (s *Server) DoPutPreparedStatementUpdate(ctx context.Context, cmd fsql.PreparedStatementUpdate, r flight.MessageReader) (int64, error) {
	p, err := s.preparedFor(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return 0, err
	}
	rowsOfArgs, err := readAllParams(r)
	if err != nil {
		return 0, err
	}
	if len(rowsOfArgs) == 0 {
		s.mu.Lock()
		rowsOfArgs = [][]any{p.args}
		s.mu.Unlock()
	}
	var total int64
	for _, args := range rowsOfArgs {
		n, err := s.update(ctx, p.txID, p.sql, args)
		if err != nil {
			return total, err
		}
		if n > 0 {
			total += n
		}
	}
	return total, nil
}

func readParams(r flight.MessageReader) ([]any, error) {
	all, err := readAllParams(r)
	if err != nil || len(all) == 0 {
		return nil, err
	}
	if len(all) > 1 {
		return nil, status.Errorf(codes.InvalidArgument, "a query takes one row of parameters, got %d", len(all))
	}
	return all[0], nil
}

// readAllParams reads every parameter row the client sent.
func readAllParams(r flight.MessageReader) ([][]any, error) {
	if r == nil {
		return nil, nil
	}
	var out [][]any
	values := 0
	for r.Next() {
		batch := r.RecordBatch()
		// A batch declares its rows; columns of the null type hold none, so the declared count
		// alone could make this loop run for ever.
		rows := batch.NumRows()
		if rows < 0 || rows > paramValuesMax {
			return nil, status.Errorf(codes.InvalidArgument, "more than %d parameter values in one call", paramValuesMax)
		}
		if values += int(rows) * max(int(batch.NumCols()), 1); values > paramValuesMax {
			return nil, status.Errorf(codes.InvalidArgument, "more than %d parameter values in one call", paramValuesMax)
		}
		for c, col := range batch.Columns() {
			if err := checkColumn(col, int(batch.NumRows())); err != nil {
				return nil, status.Errorf(codes.InvalidArgument, "parameter %d: %v", c+1, err)
			}
		}
		for i := 0; i < int(batch.NumRows()); i++ {
			row := make([]any, batch.NumCols())
			for c := range row {
				v, err := goValue(batch.Column(c), i)
				if err != nil {
					return nil, status.Errorf(codes.InvalidArgument, "parameter %d: %v", c+1, err)
				}
				row[c] = v
			}
			out = append(out, row)
		}
	}
	if err := r.Err(); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "reading parameters: %v", err)
	}
	return out, nil
}

// goValue turns one Arrow parameter into the plain Go value engines take.
func goValue(a arrow.Array, i int) (any, error) {
	if a.IsNull(i) {
		return nil, nil
	}
	switch a := a.(type) {
	case *array.Boolean:
		return a.Value(i), nil
	case *array.Int8:
		return int64(a.Value(i)), nil
	case *array.Int16:
		return int64(a.Value(i)), nil
	case *array.Int32:
		return int64(a.Value(i)), nil
	case *array.Int64:
		return a.Value(i), nil
	case *array.Uint8:
		return uint64(a.Value(i)), nil
	case *array.Uint16:
		return uint64(a.Value(i)), nil
	case *array.Uint32:
		return uint64(a.Value(i)), nil
	case *array.Uint64:
		return a.Value(i), nil
	case *array.Float32:
		return float64(a.Value(i)), nil
	case *array.Float64:
		return a.Value(i), nil
	case *array.String:
		return a.Value(i), nil
	case *array.LargeString:
		return a.Value(i), nil
	case *array.StringView:
		return a.Value(i), nil
	case *array.Float16:
		return float64(a.Value(i).Float32()), nil
	case *array.Binary:
		return append([]byte(nil), a.Value(i)...), nil
	case *array.LargeBinary:
		return append([]byte(nil), a.Value(i)...), nil
	case *array.BinaryView:
		return append([]byte(nil), a.Value(i)...), nil
	case *array.FixedSizeBinary:
		return append([]byte(nil), a.Value(i)...), nil
	case *array.Date32:
		return a.Value(i).ToTime().Format(time.DateOnly), nil
	case *array.Date64:
		return a.Value(i).ToTime().Format(time.DateOnly), nil
	case *array.Time32:
		return a.Value(i).ToTime(a.DataType().(*arrow.Time32Type).Unit).Format("15:04:05.999999999"), nil
	case *array.Time64:
		return a.Value(i).ToTime(a.DataType().(*arrow.Time64Type).Unit).Format("15:04:05.999999999"), nil
	case *array.Timestamp:
		return a.Value(i).ToTime(a.DataType().(*arrow.TimestampType).Unit).UTC(), nil
	case *array.Dictionary:
		return goValue(a.Dictionary(), a.GetValueIndex(i))
	case array.ListLike:
		if _, isMap := a.(*array.Map); isMap {
			break
		}
		from, to := a.ValueOffsets(i)
		out := make([]any, 0, to-from)
		for j := from; j < to; j++ {
			v, err := goValue(a.ListValues(), int(j))
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case *array.DenseUnion: // Flight SQL clients send parameters as a dense union of types
		child := a.Field(a.ChildID(i))
		return goValue(child, int(a.ValueOffset(i)))
	case *array.SparseUnion:
		return goValue(a.Field(a.ChildID(i)), i)
	}
	if _, ok := a.DataType().(arrow.DecimalType); ok {
		return a.ValueStr(i), nil
	}
	return nil, fmt.Errorf("unsupported type %s", a.DataType())
}

// checkColumn checks what goValue reads of a parameter column of rows rows, as the client sent
// it: arrow-go's IPC reader leaves a validity bitmap or boolean values shorter than the rows,
// and union type codes or offsets naming no value, to panic when read.
func checkColumn(a arrow.Array, rows int) error {
	d := a.Data()
	if d.Len() < rows {
		return fmt.Errorf("the column has %d rows, the batch %d", d.Len(), rows)
	}
	need := bitutil.BytesForBits(int64(d.Offset() + d.Len()))
	buffers := d.Buffers()
	if len(buffers) > 0 && buffers[0] != nil && buffers[0].Len() > 0 && int64(buffers[0].Len()) < need {
		return fmt.Errorf("its validity bitmap has %d bytes, %d rows need %d", buffers[0].Len(), d.Len(), need)
	}
	switch a := a.(type) {
	case *array.Boolean:
		if need > 0 && (len(buffers) < 2 || buffers[1] == nil || int64(buffers[1].Len()) < need) { // an empty column may have no buffer
			return fmt.Errorf("its boolean values are shorter than its %d rows", d.Len())
		}
	case array.Union:
		return checkUnion(a)
	case interface{ ValidateFull() error }: // strings, binaries, lists: offsets within the data
		return a.ValidateFull()
	}
	return nil
}

// checkUnion checks that every row of a union names one of its children, and a value there.
func checkUnion(u array.Union) error {
	for c := 0; c < u.NumFields(); c++ {
		if err := checkColumn(u.Field(c), 0); err != nil {
			return fmt.Errorf("union child %d: %w", c, err)
		}
	}
	if len(u.RawTypeCodes()) < u.Len() {
		return fmt.Errorf("the union has %d type codes for %d rows", len(u.RawTypeCodes()), u.Len())
	}
	dense, _ := u.(*array.DenseUnion)
	if dense != nil && len(dense.RawValueOffsets()) < u.Len() {
		return fmt.Errorf("the union has %d value offsets for %d rows", len(dense.RawValueOffsets()), u.Len())
	}
	for i := 0; i < u.Len(); i++ {
		id := u.ChildID(i)
		if id < 0 || id >= u.NumFields() {
			return fmt.Errorf("row %d: type code %d names no member of the union", i+1, u.TypeCode(i))
		}
		at, n := i, u.Field(id).Len()
		if dense != nil {
			at = int(dense.ValueOffset(i))
		}
		if at < 0 || at >= n {
			return fmt.Errorf("row %d: value %d of a union member with %d values", i+1, at, n)
		}
	}
	return nil
}

// GetSchemaStatement describes a statement's result without running it (no capacity slot), as
// a prepare does.
func (s *Server) GetSchemaStatement(ctx context.Context, cmd fsql.StatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	return s.resultSchema(ctx, cmd.GetTransactionId(), cmd.GetQuery())
}

// GetSchemaPreparedStatement describes a prepared statement's result without running it.
func (s *Server) GetSchemaPreparedStatement(ctx context.Context, cmd fsql.PreparedStatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	p, err := s.preparedFor(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	return s.resultSchema(ctx, p.txID, p.sql)
}

// resultSchema is the schema sql's result will have, as its engine describes it. A statement
// the engine describes no result for (one without rows, or an engine that describes nothing,
// MySQL) is told so rather than given an empty schema its result may not have.
func (s *Server) resultSchema(ctx context.Context, txID []byte, sql string) (*flight.SchemaResult, error) {
	tx, err := s.claimTx(ctx, txID)
	if err != nil {
		return nil, err
	}
	desc, ok, err := s.describeIn(ctx, tx, s.request(ctx, sql, nil))
	if err != nil {
		return nil, toStatus(err)
	}
	if !ok || desc.Schema == nil {
		return nil, status.Error(codes.Unimplemented,
			"the engine describes no result for this statement without running it (it has no rows, or the engine cannot describe statements); execute it to learn its columns")
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(outSchema(desc.Schema), s.Alloc)}, nil
}
