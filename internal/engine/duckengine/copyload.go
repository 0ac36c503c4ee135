package duckengine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/marcboeker/go-duckdb"

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
	names []string
	blob  []bool
}

// loadCopy runs a COPY ... FROM STDIN on conn: it checks the table and columns, tells the
// client to send, and inserts its rows in one transaction (the caller's when inTx), so a bad
// row leaves nothing behind, as in PostgreSQL.
func loadCopy(ctx context.Context, conn *sql.Conn, cf pgcopy.Statement, src query.CopySource, inTx bool) (query.Rows, error) {
	target, err := copyTargetOf(ctx, conn, cf)
	if err != nil {
		return nil, err
	}
	if err := src.Start(len(target.names)); err != nil {
		return nil, err
	}
	if !inTx {
		if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
			return nil, wrapErr(err)
		}
	}
	n, err := insertCopyRows(ctx, conn, cf, target, pgcopy.NewReader(cf.Format, src))
	if !inTx {
		end := "COMMIT"
		if err != nil {
			end = "ROLLBACK"
		}
		if _, endErr := conn.ExecContext(context.WithoutCancel(ctx), end); err == nil && endErr != nil {
			err = wrapErr(endErr)
		}
	}
	if err != nil {
		return nil, err
	}
	return engine.TagRows("COPY " + strconv.FormatInt(n, 10)), nil
}

// copyTargetOf reads the columns the COPY fills; an unknown table or column fails here,
// before the client sends anything.
func copyTargetOf(ctx context.Context, conn *sql.Conn, cf pgcopy.Statement) (copyTarget, error) {
	cols := "*"
	if cf.Columns != nil {
		cols = strings.Join(cf.Columns, ", ")
	}
	rows, err := conn.QueryContext(ctx, "SELECT "+cols+" FROM "+cf.Table+" LIMIT 0")
	if err != nil {
		return copyTarget{}, wrapErr(err)
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return copyTarget{}, wrapErr(err)
	}
	var t copyTarget
	for i, ct := range types {
		name := quoteIdent(ct.Name())
		if cf.Columns != nil {
			name = cf.Columns[i]
		}
		t.names = append(t.names, name)
		t.blob = append(t.blob, ct.DatabaseTypeName() == "BLOB")
	}
	return t, nil
}

// insertCopyRows stages the rows and inserts them into the target in one statement.
func insertCopyRows(ctx context.Context, conn *sql.Conn, cf pgcopy.Statement, t copyTarget, rows *pgcopy.Reader) (int64, error) {
	if _, err := conn.ExecContext(ctx, t.createStage()); err != nil {
		return 0, wrapErr(err)
	}
	err := conn.Raw(func(dc any) error {
		app, err := duckdb.NewAppenderFromConn(dc.(driver.Conn), "", copyStage)
		if err != nil {
			return wrapErr(err)
		}
		err = appendCopyRows(app, cf, t, rows)
		if closeErr := app.Close(); err == nil && closeErr != nil {
			err = wrapErr(closeErr)
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	res, err := conn.ExecContext(ctx, "INSERT INTO "+cf.Table+" ("+strings.Join(t.names, ", ")+") SELECT * FROM "+copyStage)
	if err != nil {
		return 0, copyLineError(cf, 0, wrapErr(err))
	}
	if _, err := conn.ExecContext(ctx, "DROP TABLE "+copyStage); err != nil {
		return 0, wrapErr(err)
	}
	return res.RowsAffected()
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

func appendCopyRows(app *duckdb.Appender, cf pgcopy.Statement, t copyTarget, rows *pgcopy.Reader) error {
	args := make([]driver.Value, 0, len(t.names))
	for {
		fields, err := rows.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if args, err = t.appendArgs(args[:0], fields, cf, rows.Line()); err != nil {
			return err
		}
		if err := app.AppendRow(args...); err != nil {
			return copyLineError(cf, rows.Line(), wrapErr(err))
		}
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
