package duckengine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/pgcopy"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// copyStage is the temporary table a COPY's rows are appended to, as text, before one INSERT
// casts them into the target: DuckDB's appender is many times faster than INSERTs with
// parameters, and its cast from VARCHAR reads PostgreSQL's text for every type but bytea.
const copyStage = "queryflux_copy_stage"

// copyTarget is where a COPY's rows go: the INSERT's column list and which columns are BLOB
// (their text is PostgreSQL's bytea text, which DuckDB's cast from VARCHAR reads otherwise).
type copyTarget struct {
	table   string // the table's name as DuckDB's (duckRelation)
	names   []string
	columns []string // the names, unquoted (for errors)
	types   []string // DuckDB's types of the columns
	blob    []bool
	schema  *arrow.Schema // the columns as the client sees them
}

// loadCopy runs a COPY ... FROM STDIN on conn: it checks the table and columns, tells the
// client to send, and inserts its rows in one transaction (the caller's when inTx), so a bad
// row leaves nothing behind, as in PostgreSQL. Outside a client's transaction the rows are
// staged before the transaction begins, so that they outlive an INSERT that fails on a value
// DuckDB cannot read: the error then names its line and column, as PostgreSQL's does
// (badValue). Inside one, a failed statement ends what could be read after it.
// The values its rows' DEFAULT nextval take are noted in session (pgsessionseq.go; nil: none).
func loadCopy(ctx context.Context, conn *sql.Conn, cf pgcopy.Statement, src query.CopySource, session *query.SessionSequences, inTx bool) (query.Rows, error) {
	target, err := copyTargetOf(ctx, conn, cf)
	if err != nil {
		return nil, err
	}
	if err := src.Start(target.schema); err != nil {
		return nil, err
	}
	if cf.Binary {
		cf.Format = pgcopy.Format{Delim: '\t', Null: `\N`} // the source reads binary as text
	}
	stage := func() (lineMap, error) { return stageCopyRows(ctx, conn, cf, target, pgcopy.NewReader(cf.Format, src)) }
	if inTx {
		if _, err := stage(); err != nil {
			return nil, err
		}
		return insertStaged(ctx, conn, cf, target, session)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+copyStage) //nolint:errcheck // a temporary table: it goes with the connection otherwise
	// The staging in a transaction of its own (the appender then commits once, not once a
	// chunk), the INSERT in another.
	var lines lineMap
	var rows query.Rows
	err = inTransaction(ctx, conn, func() (err error) { lines, err = stage(); return err })
	if err != nil {
		return nil, err
	}
	err = inTransaction(ctx, conn, func() (err error) { rows, err = insertStaged(ctx, conn, cf, target, session); return err })
	if err != nil {
		return nil, target.badValue(ctx, conn, cf, lines, err)
	}
	return rows, nil
}

// inTransaction runs run in a transaction of its own on conn: committed, or rolled back after
// an error.
func inTransaction(ctx context.Context, conn *sql.Conn, run func() error) error {
	if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return wrapErr(err)
	}
	err := run()
	end := "COMMIT"
	if err != nil {
		end = "ROLLBACK"
	}
	if _, endErr := conn.ExecContext(context.WithoutCancel(ctx), end); err == nil && endErr != nil {
		err = wrapErr(endErr)
	}
	return err
}

// copyTargetOf reads the columns the COPY fills; an unknown table or column fails here,
// before the client sends anything.
func copyTargetOf(ctx context.Context, conn *sql.Conn, cf pgcopy.Statement) (copyTarget, error) {
	cols := "*"
	if cf.Columns != nil {
		cols = strings.Join(cf.Columns, ", ")
	}
	table := duckRelation(cf.Table)
	rows, err := conn.QueryContext(ctx, "SELECT "+cols+" FROM "+table+" LIMIT 0")
	if err != nil {
		return copyTarget{}, wrapErr(err)
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return copyTarget{}, wrapErr(err)
	}
	t := copyTarget{table: table, schema: resultSchema(ctx, conn, "SELECT "+cols+" FROM "+table, 0, nil)}
	if t.schema == nil || t.schema.NumFields() != len(types) {
		return copyTarget{}, queryError(sqlstate.InternalError, "COPY "+cf.Table+": its columns could not be described")
	}
	for i, ct := range types {
		name := quoteIdent(ct.Name())
		if cf.Columns != nil {
			name = cf.Columns[i]
		}
		t.names, t.columns, t.types = append(t.names, name), append(t.columns, ct.Name()), append(t.types, ct.DatabaseTypeName())
		t.blob = append(t.blob, ct.DatabaseTypeName() == "BLOB")
	}
	return t, nil
}

// stageCopyRows appends the rows to the staging table, and says which line each ended on.
func stageCopyRows(ctx context.Context, conn *sql.Conn, cf pgcopy.Statement, t copyTarget, rows *pgcopy.Reader) (lineMap, error) {
	if _, err := conn.ExecContext(ctx, t.createStage()); err != nil {
		return lineMap{}, wrapErr(err)
	}
	var lines lineMap
	err := conn.Raw(func(dc any) error {
		c, _ := driverDuckConn(dc)
		app, err := duckdb.NewAppenderFromConn(c, "", copyStage)
		if err != nil {
			return wrapErr(err)
		}
		lines, err = appendCopyRows(app, cf, t, rows)
		if closeErr := app.Close(); err == nil && closeErr != nil {
			err = wrapErr(closeErr)
		}
		return err
	})
	return lines, err
}

// insertStaged inserts the staged rows into the target in one statement, and drops the stage.
func insertStaged(ctx context.Context, conn *sql.Conn, cf pgcopy.Statement, t copyTarget, session *query.SessionSequences) (query.Rows, error) {
	schema, name := regclassName(cf.Table)
	taking := watchTable(ctx, conn, session, schema, name)
	res, err := conn.ExecContext(ctx, "INSERT INTO "+t.table+" ("+strings.Join(t.names, ", ")+") SELECT * FROM "+copyStage)
	taking.finish(ctx, conn)
	if err != nil {
		return nil, copyLineError(cf, 0, wrapErr(err))
	}
	if _, err := conn.ExecContext(ctx, "DROP TABLE "+copyStage); err != nil {
		return nil, wrapErr(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, wrapErr(err)
	}
	return engine.TagRows("COPY " + strconv.FormatInt(n, 10)), nil
}

// badValue is err, the error of an INSERT of the staged rows, naming the line and column of the
// first value the target's type cannot read (the staged rows are in the order they came), as
// PostgreSQL's context does: COPY t, line 3, column x: "abc". err itself for any other error.
func (t copyTarget) badValue(ctx context.Context, conn *sql.Conn, cf pgcopy.Statement, lines lineMap, err error) error {
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != sqlstate.InvalidTextRepresentation {
		return err
	}
	var which strings.Builder
	for i, blob := range t.blob {
		if !blob {
			c := "c" + strconv.Itoa(i)
			fmt.Fprintf(&which, "WHEN %s IS NOT NULL AND TRY_CAST(%s AS %s) IS NULL THEN %d ", c, c, t.types[i], i)
		}
	}
	if which.Len() == 0 {
		return err
	}
	var row int64
	var col int
	var value string
	q := "SELECT rowid, col, CAST(list_extract([" + t.stageColumns() + "], col + 1) AS VARCHAR) FROM (SELECT rowid, *, CASE " + which.String() +
		"END AS col FROM " + copyStage + ") WHERE col IS NOT NULL ORDER BY rowid LIMIT 1"
	if conn.QueryRowContext(ctx, q).Scan(&row, &col, &value) != nil {
		return err
	}
	c := *qe
	c.Message = fmt.Sprintf("COPY %s, line %d, column %s: \"%s\": %s", cf.Table, lines.of(row), t.columns[col], value, qe.Message)
	return &c
}

// stageColumns lists the staging table's columns, as text.
func (t copyTarget) stageColumns() string {
	cols := make([]string, len(t.blob))
	for i := range cols {
		cols[i] = "CAST(c" + strconv.Itoa(i) + " AS VARCHAR)"
	}
	return strings.Join(cols, ", ")
}

// lineMap says which line of the data each staged row ended on: rows and lines go up together
// but where a row spans lines (a CSV value with a line end) or a line holds no row (a
// header), where a new (row, line) pair is kept.
type lineMap struct{ rows, lines []int64 }

// add notes that row ended on line.
func (m *lineMap) add(row, line int64) {
	if n := len(m.rows); n > 0 && line-row == m.lines[n-1]-m.rows[n-1] {
		return
	}
	m.rows, m.lines = append(m.rows, row), append(m.lines, line)
}

// of is the line row ended on.
func (m lineMap) of(row int64) int64 {
	i, _ := slices.BinarySearch(m.rows, row+1)
	if i == 0 {
		return row + 1
	}
	return m.lines[i-1] + row - m.rows[i-1]
}

// createStage is the staging table's definition: text, or bytes for BLOB columns.
func (t copyTarget) createStage() string {
	var b strings.Builder
	b.WriteString("CREATE OR REPLACE TEMP TABLE " + copyStage + " (")
	for i, blob := range t.blob {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("c" + strconv.Itoa(i))
		if blob {
			b.WriteString(" BLOB")
		} else {
			b.WriteString(" VARCHAR")
		}
	}
	b.WriteByte(')')
	return b.String()
}

func appendCopyRows(app *duckdb.Appender, cf pgcopy.Statement, t copyTarget, rows *pgcopy.Reader) (lineMap, error) {
	args := make([]driver.Value, 0, len(t.names))
	var lines lineMap
	for n := int64(0); ; n++ {
		fields, err := rows.Next()
		if err == io.EOF {
			return lines, nil
		}
		if err != nil {
			return lines, err
		}
		if args, err = t.appendArgs(args[:0], fields, cf, rows.Line()); err != nil {
			return lines, err
		}
		if err := app.AppendRow(args...); err != nil {
			return lines, copyLineError(cf, rows.Line(), wrapErr(err))
		}
		lines.add(n, int64(rows.Line()))
	}
}

// appendArgs appends one row's values, checking it has one per column as PostgreSQL does.
func (t copyTarget) appendArgs(args []driver.Value, fields []pgcopy.Field, cf pgcopy.Statement, line int) ([]driver.Value, error) {
	if len(fields) < len(t.names) {
		return args, copyLineError(cf, line, queryError(sqlstate.BadCopyFileFormat, fmt.Sprintf("missing data for column %s", t.names[len(fields)])))
	}
	if len(fields) > len(t.names) {
		return args, copyLineError(cf, line, queryError(sqlstate.BadCopyFileFormat, "extra data after last expected column"))
	}
	for i, f := range fields {
		switch {
		case f.Null:
			args = append(args, nil)
		case t.blob[i]:
			b, err := byteaFromText(f.V)
			if err != nil {
				return args, copyLineError(cf, line, err)
			}
			args = append(args, b)
		default:
			args = append(args, f.V)
		}
	}
	return args, nil
}

// byteaFromText reads PostgreSQL's bytea text: hex (\x4142) or the escape format (\\ and \ooo).
func byteaFromText(s string) ([]byte, error) {
	bad := queryError(sqlstate.InvalidTextRepresentation, fmt.Sprintf("invalid input syntax for type bytea: %.40q", s))
	if strings.HasPrefix(s, `\x`) {
		b, err := hex.DecodeString(s[2:])
		if err != nil {
			return nil, bad
		}
		return b, nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			out = append(out, s[i])
			continue
		}
		switch {
		case i+1 < len(s) && s[i+1] == '\\':
			out, i = append(out, '\\'), i+1
		case i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]):
			out, i = append(out, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0')), i+3
		default:
			return nil, bad
		}
	}
	return out, nil
}

// copyLineError names the COPY and the lines an error came from, as PostgreSQL's context does.
func copyLineError(cf pgcopy.Statement, line int, err error) error {
	qe, ok := err.(*query.Error)
	if !ok {
		return err
	}
	where := fmt.Sprintf("COPY %s, line %d", cf.Table, line)
	if line == 0 {
		where = "COPY " + cf.Table
	}
	c := *qe
	c.Message = where + ": " + qe.Message
	return &c
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

func queryError(code, msg string) error { return &query.Error{Code: code, Message: msg} }
