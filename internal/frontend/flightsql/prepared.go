package flightsql

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/engine"
)

// preparedMax bounds the prepared statements held at once across all clients.
const preparedMax = 10000

// CreatePreparedStatement keeps the SQL under a new handle, with its dataset and parameter
// schemas as the engine describes them (engine.Describer: the proxy core routes the statement
// to its engine). An engine that cannot describe leaves them unset: the client learns the
// columns when the statement runs.
func (s *Server) CreatePreparedStatement(ctx context.Context, req fsql.ActionCreatePreparedStatementRequest) (fsql.ActionCreatePreparedStatementResult, error) {
	var res fsql.ActionCreatePreparedStatementResult
	if d, ok := s.backend.(engine.Describer); ok {
		desc, err := d.Describe(ctx, s.request(ctx, req.GetQuery(), nil))
		if err != nil {
			return res, toStatus(err)
		}
		res.DatasetSchema = desc.Schema // nil: not described (or no rows)
		if desc.Schema != nil {
			res.DatasetSchema = outSchema(desc.Schema)
		}
		res.ParameterSchema = arrow.NewSchema(paramFields(desc.Params), nil)
	}
	handle := newHandle()
	res.Handle = []byte(handle)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.prepared) >= preparedMax {
		return fsql.ActionCreatePreparedStatementResult{}, status.Errorf(codes.ResourceExhausted, "too many prepared statements (%d)", preparedMax)
	}
	s.prepared[handle] = &preparedStatement{sql: req.GetQuery(), user: userOf(ctx)}
	return res, nil
}

// paramFields names the parameters as Flight SQL clients expect ("parameter_1", ...), nullable.
func paramFields(params []arrow.Field) []arrow.Field {
	out := make([]arrow.Field, len(params))
	for i, p := range params {
		out[i] = arrow.Field{Name: fmt.Sprintf("parameter_%d", i+1), Type: p.Type, Nullable: true, Metadata: p.Metadata}
	}
	return out
}

// ClosePreparedStatement forgets a handle.
func (s *Server) ClosePreparedStatement(ctx context.Context, req fsql.ActionClosePreparedStatementRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.prepared, string(req.GetPreparedStatementHandle()))
	return nil
}

func (s *Server) preparedFor(ctx context.Context, handle []byte) (*preparedStatement, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.prepared[string(handle)]
	if !ok || p.user != userOf(ctx) {
		return nil, status.Error(codes.NotFound, "unknown prepared statement")
	}
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
	p.args = args
	s.mu.Unlock()
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
	return s.flightInfo(ctx, sql, args, desc)
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
		n, err := s.update(ctx, p.sql, args)
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
	for r.Next() {
		batch := r.RecordBatch()
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
	case *array.Binary:
		return append([]byte(nil), a.Value(i)...), nil
	case *array.Date32:
		return a.Value(i).ToTime().Format(time.DateOnly), nil
	case *array.Timestamp:
		return a.Value(i).ToTime(a.DataType().(*arrow.TimestampType).Unit).UTC(), nil
	case *array.DenseUnion: // Flight SQL clients send parameters as a dense union of types
		child := a.Field(a.ChildID(i))
		return goValue(child, int(a.ValueOffset(i)))
	case *array.SparseUnion:
		return goValue(a.Field(a.ChildID(i)), i)
	}
	if d, ok := a.DataType().(arrow.DecimalType); ok {
		_ = d
		return a.ValueStr(i), nil
	}
	return nil, fmt.Errorf("unsupported type %s", a.DataType())
}
