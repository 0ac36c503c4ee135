package pgengine

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's parameter stands where PostgreSQL cannot type it from the statement:
// concat(v, ?), concat('%', ?, '%'), ? IS NULL, a select item `?`, ? = ?. MariaDB takes the
// client's value with the type the client sent; PostgreSQL refuses the Parse (42P18, "could not
// determine data type of parameter $1"), or types it text (a select item), which pgx cannot
// encode a number as. Such a statement is parsed again with that parameter
// cast to the type of the client's value (text for a string or NULL, bigint, double precision,
// numeric for an unsigned, timestamp, bytea), once per parameter PostgreSQL names, where a
// failed Parse costs nothing else: outside a transaction (a failed Parse aborts one).

// undeterminedParam is the number of the parameter a 42P18 names, or the one pgx could not
// encode as the type PostgreSQL gave it (a select item `?`, which PostgreSQL takes for text,
// given a number); 0 if err is neither.
func undeterminedParam(err error) int {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42P18" {
		var i int
		if err != nil && strings.Contains(err.Error(), "into text format for text") {
			if _, e := fmt.Sscanf(err.Error(), "failed to encode args[%d]", &i); e == nil {
				return i + 1
			}
		}
		return 0
	}
	i := strings.LastIndexByte(pe.Message, '$')
	if i < 0 {
		return 0
	}
	n, e := strconv.Atoi(pe.Message[i+1:])
	if e != nil {
		return 0
	}
	return n
}

// typedParam is sqlText (PostgreSQL's, $n parameters) with parameter n cast to the type of the
// client's value v; ok is false when n is not one of args or sqlText does not hold it.
func typedParam(sqlText string, n int, args []any) (string, bool) {
	if n < 1 || n > len(args) {
		return "", false
	}
	typ := clientParamType(args[n-1])
	want := "$" + strconv.Itoa(n)
	var b strings.Builder
	found := false
	s := sqltok.NewScanner(sqlText, sqltok.Postgres)
	last := 0
	for t, ok := s.Next(); ok; t, ok = s.Next() {
		if t.Kind == sqltok.Param && t.Text == want {
			b.WriteString(sqlText[last:t.Pos])
			fmt.Fprintf(&b, "(%s::%s)", want, typ)
			last = t.Pos + len(t.Text)
			found = true
		}
	}
	if !found {
		return "", false
	}
	b.WriteString(sqlText[last:])
	return b.String(), true
}

// clientParamType is PostgreSQL's type for a MySQL client's parameter value.
func clientParamType(v any) string {
	switch v.(type) {
	case int64, int32, int16, int8, int:
		return "bigint"
	case uint64, uint32, uint16, uint8, uint:
		return "numeric"
	case float64, float32:
		return "double precision"
	case bool:
		return "boolean"
	case time.Time:
		return "timestamp"
	case []byte:
		return "bytea"
	}
	return "text" // a string, a DECIMAL's text, NULL
}

// retypesParams: a MySQL client's statement with parameters, whose Parse may be retried.
func retypesParams(q *query.Request) bool {
	return q.Protocol == query.ProtocolMySQL && len(q.Args) > 0
}

// outsideTx: a failed Parse on db leaves no transaction aborted (the pool's connections run
// each statement on its own; a session's is idle).
func outsideTx(db querier) bool {
	if c, ok := db.(*pgxpool.Conn); ok {
		return c.Conn().PgConn().TxStatus() == 'I'
	}
	return true
}
