package duckengine

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// FOUND_ROWS() for a MySQL client (WordPress-era paginators, PHP ORMs): a SELECT
// SQL_CALC_FOUND_ROWS ... LIMIT n runs without the modifier (mysqlCompat leaves it out), and
// first the rows it would have had without its LIMIT are counted, by a count(*) of the same
// statement without its LIMIT, on the client's own transaction when it has one. The count is
// kept for the client's connection (its address) until its next SELECT; a statement calling
// FOUND_ROWS() reads it (the macro reads the connection's variable qf_found_rows, set first).
// Without a count kept FOUND_ROWS() is an error (1235), not MySQL's answer (the rows of the
// last SELECT, which is not counted here).

// maxFoundRowsClients bounds the counts kept: a client that went away keeps its count until
// its address is used again, so past this many one is forgotten to keep another.
const maxFoundRowsClients = 4096

// foundRows are the counts kept, by client address.
type foundRows struct {
	mu       sync.Mutex
	byClient map[string]int64
}

// count counts, for a MySQL client's SELECT SQL_CALC_FOUND_ROWS, the rows without its LIMIT,
// running the count by run (the engine's or the transaction's Execute), and keeps the count.
func (f *foundRows) count(ctx context.Context, client *query.Request, run func(context.Context, *query.Request) (query.Rows, error)) error {
	if !isMySQL(client) || client.ClientAddr == "" || !containsFold(client.SQL, "sql_calc_found_rows") {
		return nil
	}
	countSQL, args, ok := foundRowsCount(client.SQL, client.Args)
	if !ok {
		return nil // FOUND_ROWS() will say there is no count
	}
	q := *client
	q.SQL, q.ClientSQL, q.Args = countSQL, "", args
	rows, err := run(ctx, &q)
	if err != nil {
		return err
	}
	defer rows.Close()
	batch, err := rows.Next(ctx)
	if err != nil {
		return err
	}
	n, ok := batch.Column(0).(*array.Int64)
	if !ok || n.Len() != 1 {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byClient == nil {
		f.byClient = map[string]int64{}
	}
	if len(f.byClient) >= maxFoundRowsClients {
		for addr := range f.byClient {
			delete(f.byClient, addr)
			break
		}
	}
	f.byClient[client.ClientAddr] = n.Value(0)
	return nil
}

// set gives a MySQL client's statement that calls FOUND_ROWS() the count kept for its
// connection, or refuses it without one; another SELECT forgets the count.
func (f *foundRows) set(ctx context.Context, conn *sql.Conn, client *query.Request) error {
	if !isMySQL(client) || containsFold(client.SQL, "sql_calc_found_rows") {
		return nil
	}
	calls := containsFold(client.SQL, "found_rows")
	if !calls && !sqltok.FirstKeywordIs(client.SQL, sqltok.MySQL, "select") {
		return nil
	}
	f.mu.Lock()
	n, ok := f.byClient[client.ClientAddr]
	if !calls {
		delete(f.byClient, client.ClientAddr)
	}
	f.mu.Unlock()
	if !calls {
		return nil
	}
	if !ok {
		return &query.Error{Code: sqlstate.FeatureNotSupported,
			Message: "FOUND_ROWS() answers only after a SELECT SQL_CALC_FOUND_ROWS on the same connection"}
	}
	_, err := conn.ExecContext(ctx, "SET VARIABLE qf_found_rows = "+strconv.FormatInt(n, 10))
	return wrapErr(err)
}

// foundRowsCount is the count(*) of sqlText, a MySQL SELECT SQL_CALC_FOUND_ROWS, without the
// modifier and without its LIMIT (the last at its top level: a LIMIT n, a LIMIT o, n or a
// LIMIT n OFFSET o), with args less the parameters of that LIMIT; ok is false for another
// statement.
func foundRowsCount(sqlText string, args []any) (countSQL string, countArgs []any, ok bool) {
	toks := sqltok.Tokenize(sqlText, sqltok.MySQL)
	// The LIMIT clause: from the last LIMIT at the top level to a locking clause, a ; or the end.
	limit, limitEnd, depth := len(toks), len(toks), 0
	for i, t := range toks {
		switch {
		case t.Text == "(":
			depth++
		case t.Text == ")":
			depth--
		case depth == 0 && t.IsWord("limit"):
			limit, limitEnd = i, len(toks)
		case depth == 0 && i > limit && limitEnd == len(toks) && (t.IsWord("for", "lock") || t.Text == ";"):
			limitEnd = i
		}
	}
	var b strings.Builder
	param := 0
	for i, t := range toks {
		if t.Text == ";" {
			break
		}
		if t.IsWord("sql_calc_found_rows") {
			ok = true
			continue
		}
		inLimit := limit <= i && i < limitEnd
		if t.Kind == sqltok.Param {
			if !inLimit && param < len(args) {
				countArgs = append(countArgs, args[param])
			}
			param++
		}
		if !inLimit {
			b.WriteString(t.Text)
		}
	}
	if !ok || !sqltok.FirstKeywordIs(sqlText, sqltok.MySQL, "select") {
		return "", nil, false
	}
	return "SELECT count(*) FROM (" + b.String() + ") AS qf_counted", countArgs, true
}
