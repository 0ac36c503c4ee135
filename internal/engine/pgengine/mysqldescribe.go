package pgengine

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's COM_STMT_PREPARE is answered with the result's column definitions, as
// MariaDB answers it (mysql2's statement.columns, JDBC's getMetaData before the first
// execute). Its statement is described as its execution's result is: its `?` numbered, MySQL's
// literals and names written as PostgreSQL's, the columns named as MariaDB names them
// (mysqlnames.go) and carrying their table's keys and origins (columnkeys.go): the shape its
// execution's batches will have. A catalog statement (SHOW, mysqlshow.go) is not described:
// it is answered at execute.

// DescribesForMySQL: Describe's schema of a MySQL client's statement is its execution's (the
// MySQL frontend then answers a prepare with its columns).
func (e *Engine) DescribesForMySQL() bool { return true }

// DescribesForMySQL: as Engine's.
func (s *session) DescribesForMySQL() bool { return true }

// describeForMySQL describes q, a MySQL client's statement, on pc as its execution will read it.
func (e *Engine) describeForMySQL(ctx context.Context, pc *pgconn.PgConn, q *query.Request) (*engine.Description, error) {
	if _, isShow, _ := showSQL(q, e.database); isShow {
		return &engine.Description{}, nil
	}
	numbered := *q
	numbered.Args = make([]any, sqltok.CountParams(q.SQL, sqltok.MySQL)) // numbered as an execution's
	sd, err := pc.Prepare(ctx, "", mysqlText(numberedParams(&numbered), pgconnSQLMode(pc), notNullLookup{}), nil)
	if err != nil {
		return nil, wrapErr(err)
	}
	d := &engine.Description{}
	for i, oid := range sd.ParamOIDs {
		d.Params = append(d.Params, engine.PGField("$"+strconv.Itoa(i+1), oid, -1))
	}
	if len(sd.Fields) > 0 {
		fields := mysqlNames(q, sd.Fields)
		sh, err := e.shapes.of(fields, e.columnKeys(ctx, q, fields))
		if err != nil {
			return nil, err
		}
		d.Schema = sh.schema
	}
	return d, nil
}
