package mysqlengine

import (
	"context"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/trinomy"
)

// trinoDialect is q with a Trino client's statement as MariaDB reads it (internal/trinomy), run
// on c: a division whose operand is a column is Trino's integer division when MariaDB's catalog,
// asked on c (c's database, c's transaction), says its operands are integers.
func trinoDialect(ctx context.Context, c *client.Conn, q *query.Request) *query.Request {
	if q.Protocol != query.ProtocolTrino {
		return q
	}
	s := trinomy.Session{Catalog: q.Database, Schema: q.Schema}
	tr := trinomy.Translate(q.SQL, s)
	sql := tr.SQL
	if len(tr.Tables) > 0 {
		if cols, ok := catalogColumns(ctx, c, tr.Tables); ok {
			sql = trinomy.WithColumns(q.SQL, s, cols)
		}
	}
	if sql == q.SQL {
		return q
	}
	out := *q
	out.SQL = sql
	if out.ClientSQL == "" {
		out.ClientSQL = q.SQL
	}
	return &out
}

// catalogColumns asks MariaDB's catalog, on c, for tables' column types (one round trip). A
// failure leaves them unknown (the statement's divisions MariaDB's); a connection it broke fails
// the statement after it.
func catalogColumns(ctx context.Context, c *client.Conn, tables []trinomy.Table) (trinomy.Columns, bool) {
	stop := context.AfterFunc(ctx, func() { cut(c) })
	res, err := c.Execute(trinomy.CatalogQuery(tables))
	stop()
	if err != nil {
		return trinomy.Columns{}, false
	}
	defer res.Close()
	rows := make([][]string, 0, len(res.Values))
	for r := range res.Values {
		row := make([]string, len(res.Fields))
		for i := range row {
			row[i], _ = res.GetString(r, i)
		}
		rows = append(rows, row)
	}
	return trinomy.ReadCatalog(tables, rows), true
}
