package flightsql

import (
	"context"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/engine"
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
	return singleBatch(schema, b.NewRecordBatch())
}

// singleBatch is a metadata answer of one batch: a closed channel holding it.
func singleBatch(schema *arrow.Schema, batch arrow.RecordBatch) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	ch := make(chan flight.StreamChunk, 1)
	ch <- flight.StreamChunk{Data: batch}
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
		return s.metaInfo(desc, schema_ref.TablesWithIncludedSchema), nil
	}
	return s.metaInfo(desc, schema_ref.Tables), nil
}

func (s *Server) DoGetTables(ctx context.Context, cmd fsql.GetTables) (*arrow.Schema, <-chan flight.StreamChunk, error) {
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
	if cmd.GetIncludeSchema() {
		return s.tablesWithSchemas(ctx, out)
	}
	return s.oneBatch(schema_ref.Tables, out)
}

// tablesWithSchemas answers tables (catalog, schema, name, type) with each one's Arrow schema:
// the columns a client's `SELECT *` of it gets, as the engine describes the statement (no
// capacity slot, nothing runs), or as its empty result says on an engine that cannot describe.
func (s *Server) tablesWithSchemas(ctx context.Context, tables [][]string) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	if len(tables) > includedSchemasMax {
		return nil, nil, status.Errorf(codes.ResourceExhausted,
			"GetTables with include_schema matched %d tables, more than the %d queryflux describes at once; narrow the filters", len(tables), includedSchemasMax)
	}
	b := array.NewRecordBuilder(s.Alloc, schema_ref.TablesWithIncludedSchema)
	defer b.Release()
	for _, t := range tables {
		sch, err := s.tableSchema(ctx, t[1], t[2])
		if err != nil {
			return nil, nil, err
		}
		for c, v := range t {
			b.Field(c).(*array.StringBuilder).Append(v)
		}
		b.Field(4).(*array.BinaryBuilder).Append(flight.SerializeSchema(outSchema(sch), s.Alloc))
	}
	return singleBatch(schema_ref.TablesWithIncludedSchema, b.NewRecordBatch())
}

// includedSchemasMax bounds the tables one GetTables with include_schema describes.
const includedSchemasMax = 10_000

// tableSchema is the schema of `SELECT *` from schema.table. The names are quoted as SQL
// (PostgreSQL, DuckDB, Trino) quotes them, then as MySQL does: the frontend does not know
// which engine the statement routes to, and each refuses the other's quotes.
func (s *Server) tableSchema(ctx context.Context, schema, table string) (*arrow.Schema, error) {
	var errs []error
	for _, quote := range []string{`"`, "`"} {
		from := quoteIdent(schema, quote) + "." + quoteIdent(table, quote)
		sch, err := s.describeColumns(ctx, "SELECT * FROM "+from)
		if err == nil {
			return sch, nil
		}
		errs = append(errs, err)
	}
	if strings.Contains(strings.ToLower(status.Convert(errs[0]).Message()), "syntax") {
		return nil, errs[1] // the engine quotes as MySQL does: the other error is the one to tell
	}
	return nil, errs[0]
}

// describeColumns is the schema of sql's result: described where the engine can, else read
// from its empty result (LIMIT 0, which runs as a query).
func (s *Server) describeColumns(ctx context.Context, sql string) (*arrow.Schema, error) {
	if d, ok := s.backend.(engine.Describer); ok {
		desc, err := d.Describe(ctx, s.request(ctx, sql, nil))
		if err != nil {
			return nil, toStatus(err)
		}
		if desc.Schema != nil {
			return desc.Schema, nil
		}
	}
	rows, err := s.backend.Execute(ctx, s.request(ctx, sql+" LIMIT 0", nil))
	if err != nil {
		return nil, toStatus(err)
	}
	defer rows.Close()
	if err := drain(ctx, rows); err != nil {
		return nil, toStatus(err)
	}
	if rows.Schema() == nil {
		return nil, status.Errorf(codes.Internal, "the engine answered %q without columns", sql)
	}
	return rows.Schema(), nil
}

// quoteIdent quotes name with quote, doubling any quote inside it.
func quoteIdent(name, quote string) string {
	return quote + strings.ReplaceAll(name, quote, quote+quote) + quote
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

// primaryKeysSQL lists every primary key's columns. The join names the table too: MySQL
// calls every primary key PRIMARY.
const primaryKeysSQL = `SELECT kcu.table_catalog, kcu.table_schema, kcu.table_name, kcu.column_name, kcu.ordinal_position, tc.constraint_name
FROM information_schema.table_constraints tc
JOIN information_schema.key_column_usage kcu ON kcu.constraint_schema = tc.constraint_schema
 AND kcu.constraint_name = tc.constraint_name AND kcu.table_name = tc.table_name
WHERE tc.constraint_type = 'PRIMARY KEY'`

func (s *Server) GetFlightInfoPrimaryKeys(_ context.Context, _ fsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.PrimaryKeys), nil
}

// DoGetPrimaryKeys lists the primary key columns of the table ref names (catalog and schema
// when given), in key order.
func (s *Server) DoGetPrimaryKeys(ctx context.Context, ref fsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	rows, err := s.stringRows(ctx, primaryKeysSQL, 6)
	if err != nil {
		return nil, nil, err
	}
	var out [][]string
	for _, r := range rows {
		if catalogMatches(ref.Catalog, r[0]) && catalogMatches(ref.DBSchema, r[1]) && r[2] == ref.Table {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return keySequence(out[i][4]) < keySequence(out[j][4]) })
	b := array.NewRecordBuilder(s.Alloc, schema_ref.PrimaryKeys)
	defer b.Release()
	for _, r := range out {
		for c := range 4 {
			b.Field(c).(*array.StringBuilder).Append(r[c])
		}
		b.Field(4).(*array.Int32Builder).Append(keySequence(r[4]))
		b.Field(5).(*array.StringBuilder).Append(r[5])
	}
	return singleBatch(schema_ref.PrimaryKeys, b.NewRecordBatch())
}

// keySequence reads an ordinal_position; 0 when the engine gave none.
func keySequence(v string) int32 {
	n, _ := strconv.ParseInt(v, 10, 32)
	return int32(n)
}
