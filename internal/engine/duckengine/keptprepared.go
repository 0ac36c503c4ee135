package duckengine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"strconv"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/duckdb/duckdb-go/v2"
)

// keptPrepared is the statement a connection last prepared to read what DuckDB says of it (prepare),
// kept open so that running the same text next does not bind and plan it again: planning is most
// of a catalog query's cost (the pg_catalog views), and every query was planned twice, once to
// read its kind and parameters and once to run. Anything but a SELECT the connection runs or
// prepares in between drops it (watchedConn.around): DuckDB binds a kept statement again when
// the catalog changed, but not when a variable did (getvariable is read at binding); the reads
// in between (the result's column names, json_serialize_sql) are SELECTs.
type keptPrepared struct {
	sqlText string
	st      *duckdb.Stmt
}

// keep holds st as the connection's kept statement for sqlText, closing the one held before.
func (k *keptPrepared) keep(sqlText string, st *duckdb.Stmt) {
	k.drop()
	k.sqlText, k.st = sqlText, st
}

// take hands the kept statement over (the caller closes it) when it was prepared from sqlText.
func (k *keptPrepared) take(sqlText string) *duckdb.Stmt {
	if k.st == nil || k.sqlText != sqlText {
		return nil
	}
	st := k.st
	k.sqlText, k.st = "", nil
	return st
}

func (k *keptPrepared) drop() {
	if k.st != nil {
		_ = k.st.Close()
		k.sqlText, k.st = "", nil
	}
}

// keepPrepared keeps st on dc, a connection of this engine's pool, or closes it on any other.
func keepPrepared(dc any, sqlText string, st *duckdb.Stmt) {
	if wc, ok := dc.(*watchedConn); ok {
		wc.kept.keep(sqlText, st)
		return
	}
	_ = st.Close()
}

// takePrepared is dc's kept statement for sqlText, if it has one.
func takePrepared(dc any, sqlText string) *duckdb.Stmt {
	if wc, ok := dc.(*watchedConn); ok {
		return wc.kept.take(sqlText)
	}
	return nil
}

// onlySelects reports whether sqlText is one SELECT: it sets no variable and changes no catalog.
func onlySelects(sqlText string) bool {
	if !oneStatement(sqlText) {
		return false
	}
	first, _ := firstWords(sqlText)
	return first == "select"
}

// keptRuns counts the statements execKept ran (its tests read it).
var keptRuns atomic.Int64

// execKept runs p, a statement that answers no rows (DDL, a SET, an INSERT, UPDATE or DELETE
// without RETURNING), as its prepare kept it on conn instead of planning it again: a write's
// run planned it a second time through database/sql. ok is false, with nothing run, when
// nothing is kept for p's text (anything but a SELECT since dropped it: watchedConn.around),
// the statement answers rows, or its arguments are ones only database/sql converts; the caller
// then runs it the usual way. tag is the statement's command tag.
func execKept(ctx context.Context, conn *sql.Conn, p *prepared, args []any) (tag string, ok bool, err error) {
	named, nerr := namedArgs(args)
	if nerr != nil {
		return "", false, nil
	}
	_ = conn.Raw(func(dc any) error {
		wc, isWatched := dc.(*watchedConn)
		if !isWatched || wc.kept.st == nil || wc.kept.sqlText != p.sqlText {
			return nil
		}
		counted := false
		switch p.kind {
		case duckdb.STATEMENT_TYPE_INSERT, duckdb.STATEMENT_TYPE_UPDATE, duckdb.STATEMENT_TYPE_DELETE:
			// DuckDB's one "Count" column, as countTag reads it; a RETURNING's rows go the usual way.
			n, cerr := wc.kept.st.ColumnCount()
			name, nerr := wc.kept.st.ColumnName(0)
			if cerr != nil || nerr != nil || n != 1 || name != "Count" {
				return nil
			}
			counted = true
		default:
			if returnsRows(p.kind) {
				return nil
			}
		}
		st := wc.kept.take(p.sqlText)
		defer st.Close()
		ok = true
		keptRuns.Add(1)
		var res driver.Result
		wc.around(p.sqlText, func() { res, err = st.ExecContext(ctx, named) })
		if err != nil {
			return nil
		}
		if !counted {
			tag = tagFromSQL(p.sqlText)
			return nil
		}
		n, rerr := res.RowsAffected()
		if rerr != nil {
			err = rerr
			return nil
		}
		tag = dmlTagPrefix(p.kind) + strconv.FormatInt(n, 10)
		return nil
	})
	return tag, ok, err
}

// describePlans counts the DESCRIBEs resultSchema ran, each a bind and plan of its statement
// (its tests read it).
var describePlans atomic.Int64

// keptSchema is the columns of the statement conn keeps for sqlText (its prepare just kept
// it), read off the prepared statement, named by names when there is one per column
// (clientNames): a Describe then plans the statement once, not again for a DESCRIBE. nil when
// nothing is kept for sqlText, or a column's type is one DESCRIBE names otherwise (an alias
// such as JSON, a composite, a type left open by an untyped parameter): resultSchema answers.
func keptSchema(conn *sql.Conn, sqlText string, names []string) *arrow.Schema {
	var fields []arrow.Field
	_ = conn.Raw(func(dc any) error {
		wc, ok := dc.(*watchedConn)
		if !ok || wc.kept.st == nil || wc.kept.sqlText != sqlText {
			return nil
		}
		n, err := wc.kept.st.ColumnCount()
		if err != nil || n == 0 {
			return nil
		}
		defer func() {
			if len(fields) < n {
				fields = nil // a column it cannot name: none
			}
		}()
		for i := range n {
			info, err := wc.kept.st.ColumnTypeInfo(i)
			if err != nil {
				return nil
			}
			typ, ok := scalarTypeName(info)
			if !ok {
				return nil
			}
			name, err := wc.kept.st.ColumnName(i)
			if err != nil {
				return nil
			}
			fields = append(fields, fieldFor(name, typ))
		}
		return nil
	})
	return namedSchema(fields, names)
}

// scalarTypeNames are the scalar types as DESCRIBE names them.
var scalarTypeNames = map[duckdb.Type]string{
	duckdb.TYPE_BOOLEAN: "BOOLEAN", duckdb.TYPE_TINYINT: "TINYINT", duckdb.TYPE_SMALLINT: "SMALLINT",
	duckdb.TYPE_INTEGER: "INTEGER", duckdb.TYPE_BIGINT: "BIGINT", duckdb.TYPE_UTINYINT: "UTINYINT",
	duckdb.TYPE_USMALLINT: "USMALLINT", duckdb.TYPE_UINTEGER: "UINTEGER", duckdb.TYPE_UBIGINT: "UBIGINT",
	duckdb.TYPE_HUGEINT: "HUGEINT", duckdb.TYPE_FLOAT: "FLOAT", duckdb.TYPE_DOUBLE: "DOUBLE",
	duckdb.TYPE_VARCHAR: "VARCHAR", duckdb.TYPE_BLOB: "BLOB", duckdb.TYPE_DATE: "DATE", duckdb.TYPE_TIME: "TIME",
	duckdb.TYPE_TIMESTAMP: "TIMESTAMP", duckdb.TYPE_TIMESTAMP_S: "TIMESTAMP_S", duckdb.TYPE_TIMESTAMP_MS: "TIMESTAMP_MS",
	duckdb.TYPE_TIMESTAMP_NS: "TIMESTAMP_NS", duckdb.TYPE_TIMESTAMP_TZ: "TIMESTAMP WITH TIME ZONE",
	duckdb.TYPE_UUID: "UUID", duckdb.TYPE_INTERVAL: "INTERVAL",
}

// scalarTypeName is info's type as DESCRIBE names it, for a scalar type without an alias.
func scalarTypeName(info duckdb.TypeInfo) (string, bool) {
	if info.Alias() != "" {
		return "", false
	}
	if info.InternalType() == duckdb.TYPE_DECIMAL {
		d, ok := info.Details().(*duckdb.DecimalDetails)
		if !ok {
			return "", false
		}
		return "DECIMAL(" + strconv.Itoa(int(d.Width)) + "," + strconv.Itoa(int(d.Scale)) + ")", true
	}
	name, ok := scalarTypeNames[info.InternalType()]
	return name, ok
}
