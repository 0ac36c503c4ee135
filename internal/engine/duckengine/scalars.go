package duckengine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// Functions of PostgreSQL's that no DuckDB SQL writes are Go functions registered in the
// database (its system catalog, which every connection sees) when it opens: the compatibility
// macros call them (pgFunctionSQL). They compute from their arguments only, but for
// qf_sysdate, the clock's time.

// scalar is one Go function DuckDB calls, a row at a time; NULL in, NULL out.
type scalar struct {
	in       []duckdb.Type
	out      duckdb.Type
	volatile bool // it changes something, or answers anew each call: DuckDB must call it each row
	f        func(args []driver.Value) (any, error)
}

func (s scalar) Config() duckdb.ScalarFuncConfig {
	c := duckdb.ScalarFuncConfig{Volatile: s.volatile}
	for _, t := range s.in {
		info, _ := duckdb.NewTypeInfo(t)
		c.InputTypeInfos = append(c.InputTypeInfos, info)
	}
	c.ResultTypeInfo, _ = duckdb.NewTypeInfo(s.out)
	return c
}

func (s scalar) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowExecutor: s.f}
}

// scalars are the functions by name.
var scalars = map[string]scalar{
	// qf_to_char_number(text of the number, format, bits): to_char of a number (pgnumchar.go).
	"qf_to_char_number": {in: []duckdb.Type{duckdb.TYPE_VARCHAR, duckdb.TYPE_VARCHAR, duckdb.TYPE_INTEGER}, out: duckdb.TYPE_VARCHAR,
		f: func(a []driver.Value) (any, error) {
			return toCharNumber(a[0].(string), a[1].(string), int(a[2].(int32)))
		}},
	// qf_jsonb_set(target, path, new value, create if missing): jsonb_set (pgjsonb.go).
	"qf_jsonb_set": {in: []duckdb.Type{duckdb.TYPE_VARCHAR, duckdb.TYPE_VARCHAR, duckdb.TYPE_VARCHAR, duckdb.TYPE_BOOLEAN}, out: duckdb.TYPE_VARCHAR,
		f: func(a []driver.Value) (any, error) {
			return jsonbSet(a[0].(string), a[1].(string), a[2].(string), a[3].(bool))
		}},
	// qf_sysdate(): MySQL's SYSDATE(), the time of the call, UTC (mysqlnowpin.go).
	"qf_sysdate": {out: duckdb.TYPE_TIMESTAMP, volatile: true,
		f: func([]driver.Value) (any, error) {
			return time.Now().UTC(), nil //determinism:ok a real engine's clock (the simulator has no DuckDB)
		}},
}

// registerScalars registers scalars in the database of connector, before the macros that
// call them are created.
func registerScalars(connector *duckdb.Connector) error {
	var errs []error
	for name, s := range scalars { //determinism:ok each registered alone; errors joined
		if err := registerScalar(connector, name, s); err != nil {
			errs = append(errs, fmt.Errorf("register %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// registerScalar registers f under name in the database of connector, on a connection of
// DuckDB's own (go-duckdb's helpers take no watchedConn).
func registerScalar(connector *duckdb.Connector, name string, f duckdb.ScalarFunc) error {
	db := sql.OpenDB(keptConnector{connector}) // closing db closes its connection, not connector
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		return err
	}
	defer conn.Close()
	return duckdb.RegisterScalarUDF(conn, name, f)
}

// keptConnector is a connector whose Close is not sql.DB's to call.
type keptConnector struct{ c driver.Connector }

func (k keptConnector) Connect(ctx context.Context) (driver.Conn, error) { return k.c.Connect(ctx) }
func (k keptConnector) Driver() driver.Driver                            { return k.c.Driver() }
