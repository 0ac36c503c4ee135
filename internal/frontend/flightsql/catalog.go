package flightsql

import (
	"context"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Catalog metadata comes from the engine's information_schema (MySQL, PostgreSQL, Trino and
// DuckDB all have one). Filters are applied here, in Go, so no client pattern is ever spliced
// into SQL.
const (
	schemataSQL = "SELECT catalog_name, schema_name FROM information_schema.schemata"
	tablesSQL   = "SELECT table_catalog, table_schema, table_name, table_type FROM information_schema.tables"
	// metadataRowsMax bounds what one metadata call reads.
	metadataRowsMax = 1_000_000
)

// metaInfo is the FlightInfo of a metadata command: its ticket is the command itself.
func (s *Server) metaInfo(desc *flight.FlightDescriptor, schema *arrow.Schema) *flight.FlightInfo {
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(schema, s.Alloc),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: desc.Cmd}}},
		TotalRecords:     -1,
		TotalBytes:       -1,
	}
}

// stringRows reads the first cols columns of every row of sql as text.
func (s *Server) stringRows(ctx context.Context, sql string, cols int) ([][]string, error) {
	rows, err := s.backend.Execute(ctx, s.request(ctx, sql, nil))
	if err != nil {
		return nil, toStatus(err)
	}
	defer rows.Close()
	var out [][]string
	for {
		b, err := rows.Next(ctx)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, toStatus(err)
		}
		if int(b.NumCols()) < cols {
			return nil, status.Errorf(codes.Internal, "the engine answered %q with %d columns, not %d", sql, b.NumCols(), cols)
		}
		for i := 0; i < int(b.NumRows()); i++ {
			row := make([]string, cols)
			for c := range row {
				row[c] = text(b.Column(c), i)
			}
			out = append(out, row)
		}
		if len(out) > metadataRowsMax {
			return nil, status.Errorf(codes.ResourceExhausted, "metadata larger than %d rows", metadataRowsMax)
		}
	}
}

func text(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return ""
	}
	switch a := a.(type) {
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Binary:
		return string(a.Value(i))
	}
	return a.ValueStr(i)
}

// oneBatch streams a single batch built from string columns.
func (s *Server) oneBatch(schema *arrow.Schema, rows [][]string) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(s.Alloc, schema)
	defer b.Release()
	for _, row := range rows {
		for c, v := range row {
			b.Field(c).(*array.StringBuilder).Append(v)
		}
	}
	ch := make(chan flight.StreamChunk, 1)
	ch <- flight.StreamChunk{Data: b.NewRecordBatch()}
	close(ch)
	return schema, ch, nil
}

func (s *Server) GetFlightInfoCatalogs(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.Catalogs), nil
}

func (s *Server) DoGetCatalogs(ctx context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	rows, err := s.stringRows(ctx, schemataSQL, 2)
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{}
	var out [][]string
	for _, r := range rows {
		if !seen[r[0]] {
			seen[r[0]] = true
			out = append(out, []string{r[0]})
		}
	}
	sortRows(out)
	return s.oneBatch(schema_ref.Catalogs, out)
}

func (s *Server) GetFlightInfoSchemas(_ context.Context, _ fsql.GetDBSchemas, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.DBSchemas), nil
}

func (s *Server) DoGetDBSchemas(ctx context.Context, cmd fsql.GetDBSchemas) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	rows, err := s.stringRows(ctx, schemataSQL, 2)
	if err != nil {
		return nil, nil, err
	}
	schemaLike := likeMatcher(cmd.GetDBSchemaFilterPattern())
	var out [][]string
	for _, r := range rows {
		if catalogMatches(cmd.GetCatalog(), r[0]) && schemaLike(r[1]) {
			out = append(out, []string{r[0], r[1]})
		}
	}
	sortRows(out)
	return s.oneBatch(schema_ref.DBSchemas, out)
}

func (s *Server) GetFlightInfoTables(_ context.Context, cmd fsql.GetTables, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if cmd.GetIncludeSchema() {
		return nil, status.Error(codes.Unimplemented, "GetTables with include_schema is not supported")
	}
	return s.metaInfo(desc, schema_ref.Tables), nil
}

func (s *Server) DoGetTables(ctx context.Context, cmd fsql.GetTables) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	if cmd.GetIncludeSchema() {
		return nil, nil, status.Error(codes.Unimplemented, "GetTables with include_schema is not supported")
	}
	rows, err := s.stringRows(ctx, tablesSQL, 4)
	if err != nil {
		return nil, nil, err
	}
	schemaLike := likeMatcher(cmd.GetDBSchemaFilterPattern())
	tableLike := likeMatcher(cmd.GetTableNameFilterPattern())
	types := map[string]bool{}
	for _, t := range cmd.GetTableTypes() {
		types[strings.ToUpper(t)] = true
	}
	var out [][]string
	for _, r := range rows {
		if catalogMatches(cmd.GetCatalog(), r[0]) && schemaLike(r[1]) && tableLike(r[2]) &&
			(len(types) == 0 || types[strings.ToUpper(r[3])]) {
			out = append(out, r)
		}
	}
	sortRows(out)
	return s.oneBatch(schema_ref.Tables, out)
}

func (s *Server) GetFlightInfoTableTypes(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.TableTypes), nil
}

// DoGetTableTypes lists the table types the engine's information_schema.tables uses.
func (s *Server) DoGetTableTypes(ctx context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	rows, err := s.stringRows(ctx, "SELECT DISTINCT table_type FROM information_schema.tables", 1)
	if err != nil {
		return nil, nil, err
	}
	sortRows(rows)
	return s.oneBatch(schema_ref.TableTypes, rows)
}

func catalogMatches(want *string, got string) bool {
	return want == nil || *want == got
}

// likeMatcher compiles a SQL LIKE pattern (% and _, backslash escapes); nil matches all.
func likeMatcher(pattern *string) func(string) bool {
	if pattern == nil {
		return func(string) bool { return true }
	}
	var re strings.Builder
	re.WriteString("(?s)^")
	// By runes: a byte of a multi-byte character quoted alone is invalid UTF-8, which the
	// regexp compiler refuses.
	p := []rune(*pattern)
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '%':
			re.WriteString(".*")
		case '_':
			re.WriteString(".")
		case '\\':
			if i+1 < len(p) {
				i++
				re.WriteString(regexp.QuoteMeta(string(p[i])))
			}
		default:
			re.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	re.WriteString("$")
	rx := regexp.MustCompile(re.String())
	return rx.MatchString
}

func sortRows(rows [][]string) {
	sort.Slice(rows, func(i, j int) bool {
		return strings.Join(rows[i], "\x00") < strings.Join(rows[j], "\x00")
	})
}
