package pgengine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's parameter stands where PostgreSQL cannot type it from the statement:
// concat(v, ?), concat('%', ?, '%'), ? IS NULL, a select item `?`, ? = ?. MariaDB takes the
// client's value with the type the client sent; PostgreSQL refuses the Parse (42P18, "could not
// determine data type of parameter $1"), or types it text (a select item), which pgx cannot
// encode a number as. Which parameter is found by asking (untypedParam), not by reading the
// error's words. Such a statement is parsed again with that parameter
// cast to the type of the client's value (text for a string or NULL, bigint, double precision,
// numeric for an unsigned, timestamp, bytea), once per parameter PostgreSQL names, where a
// failed Parse costs nothing else: outside a transaction (a failed Parse aborts one).

// indeterminateDatatype is PostgreSQL's SQLSTATE for a parameter it could not type.
const indeterminateDatatype = "42P18"

// untypedParam is the number of a parameter of sqlText (PostgreSQL's, $n parameters) that
// PostgreSQL cannot take the client's value for, after the statement failed with err; 0 when
// there is none. It reads no error's words (PostgreSQL's follow lc_messages, pgx's its
// version): a Parse refused with 42P18 (a parameter PostgreSQL could not type) names the
// parameter that, parsed alone (the others NULL), is still refused so; any other failure that
// is no PostgreSQL error (pgx refused to encode a value) names the first parameter whose client
// value pgx's type map cannot encode as the type the statement's description gives it (a
// select item `?`, which PostgreSQL types text, given a number).
func untypedParam(ctx context.Context, db querier, sqlText string, args []any, err error) int {
	var pe *pgconn.PgError
	indeterminate := errors.As(err, &pe) && pe.Code == indeterminateDatatype
	if err == nil || pe != nil && !indeterminate || ctx.Err() != nil {
		return 0
	}
	n := 0
	_ = withConn(ctx, db, func(c *pgx.Conn) error {
		if indeterminate {
			n = indeterminateParam(ctx, c.PgConn(), sqlText, len(args))
			return nil
		}
		sd, err := c.PgConn().Prepare(ctx, "", sqlText, nil)
		if err != nil || len(sd.ParamOIDs) != len(args) {
			return err
		}
		n = unencodableParam(c.TypeMap(), sd.ParamOIDs, args)
		return nil
	})
	return n
}

// indeterminateParam is the first of sqlText's count parameters that PostgreSQL cannot type
// when it is the statement's only one (each parsed as $1, the others NULL, which PostgreSQL
// types from their places, or as text): 0 if none.
func indeterminateParam(ctx context.Context, pc *pgconn.PgConn, sqlText string, count int) int {
	for i := 1; i <= count; i++ {
		alone, ok := paramAlone(sqlText, i)
		if !ok {
			continue
		}
		_, err := pc.Prepare(ctx, "", alone, nil)
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == indeterminateDatatype {
			return i
		}
		if err != nil && !errors.As(err, &pe) {
			return 0 // the connection failed: no more asking
		}
	}
	return 0
}

// booleanParams are args with each integer the statement sqlText's description types boolean
// written as its truth value (0 false, any other true, as MariaDB's TINYINT(1) holds it); ok
// is false when err is not pgx's refusal to encode a value or no such parameter is found.
// MySQL has no boolean: its clients send one as a TINY 1 or 0 (mysql2's true and false in a
// prepared statement's parameters), which pgx cannot encode for PostgreSQL's boolean (1105 to
// the client). The refusal is pgx's own, before anything reached PostgreSQL, so this is also
// done inside a transaction.
func booleanParams(ctx context.Context, db querier, sqlText string, args []any, err error) ([]any, bool) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) || ctx.Err() != nil {
		return nil, false
	}
	var truths []any
	_ = withConn(ctx, db, func(c *pgx.Conn) error {
		sd, err := c.PgConn().Prepare(ctx, "", sqlText, nil)
		if err != nil || len(sd.ParamOIDs) != len(args) {
			return err
		}
		for i, oid := range sd.ParamOIDs {
			truth, isInt := integerTruth(args[i])
			if oid != pgtype.BoolOID || !isInt {
				continue
			}
			if truths == nil {
				truths = slices.Clone(args)
			}
			truths[i] = truth
		}
		return nil
	})
	return truths, truths != nil
}

// integerTruth is v's truth value when v is an integer (not 0).
func integerTruth(v any) (truth, ok bool) {
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int() != 0, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return rv.Uint() != 0, true
	}
	return false, false
}

// paramAlone is sqlText with parameter n renumbered $1 and every other one NULL; ok is false
// when sqlText does not hold $n.
func paramAlone(sqlText string, n int) (string, bool) {
	want := "$" + strconv.Itoa(n)
	var b strings.Builder
	found := false
	last := 0
	s := sqltok.NewScanner(sqlText, sqltok.Postgres)
	for t, ok := s.Next(); ok; t, ok = s.Next() {
		if t.Kind != sqltok.Param {
			continue
		}
		b.WriteString(sqlText[last:t.Pos])
		if t.Text == want {
			b.WriteString("$1")
			found = true
		} else {
			b.WriteString("NULL")
		}
		last = t.Pos + len(t.Text)
	}
	b.WriteString(sqlText[last:])
	return b.String(), found
}

// unencodableParam is the number of the first of args that m cannot encode as the parameter
// type oids gives it, in either format (as pgx would try it): 0 if every one encodes.
func unencodableParam(m *pgtype.Map, oids []uint32, args []any) int {
	for i, v := range args {
		if _, err := m.Encode(oids[i], pgtype.BinaryFormatCode, v, nil); err == nil {
			continue
		}
		if _, err := m.Encode(oids[i], pgtype.TextFormatCode, v, nil); err != nil {
			return i + 1
		}
	}
	return 0
}

// withConn runs f on db's connection: the pinned one, or one acquired from the pool for it.
func withConn(ctx context.Context, db querier, f func(*pgx.Conn) error) error {
	switch db := db.(type) {
	case *pgxpool.Conn:
		return f(db.Conn())
	case *pgxpool.Pool:
		c, err := db.Acquire(ctx)
		if err != nil {
			return err
		}
		defer c.Release()
		return f(c.Conn())
	case *pgx.Conn:
		return f(db)
	}
	return fmt.Errorf("pgengine: no connection to describe on")
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
