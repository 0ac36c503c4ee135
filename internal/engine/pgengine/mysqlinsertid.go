package pgengine

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// MariaDB's OK packet after an INSERT carries the first AUTO_INCREMENT value it generated:
// PyMySQL's and mysqlclient's cursor.lastrowid, mysql2's insertId, go-sql-driver's
// LastInsertId, which Django's MySQL backend and SQLAlchemy set a new row's key from. PostgreSQL's
// command tag has none (lastrowid 0 before). A MySQL client's INSERT of one table with its
// column list, VALUES rows, the table's generated column (serial, or an identity) not among
// the columns and no RETURNING of its own, returns the generated column: the first row's
// value is the insert id, and the client sees the tag "INSERT <id> <rows>" the frontend reads
// (mysqlwire's insertID). An INSERT that writes the column itself, or upserts (ON CONFLICT DO
// UPDATE, whose updated rows would be returned too), is left as it was.

// mysqlInsertReturning is sqlText returning lookup's table's generated column, and true, when
// sqlText is such an INSERT; sqlText itself and false otherwise.
func mysqlInsertReturning(sqlText string, lookup notNullLookup) (string, bool) {
	if lookup.generated == nil || firstWord(sqlText) != "insert" {
		return sqlText, false
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.Postgres)
	table, _, cols, values, ok := boolLiteralsTable(toks, "insert", lookup.schema)
	if !ok || values == 0 {
		return sqlText, false
	}
	for _, t := range toks[values:] {
		if t.IsWord("returning", "update", "select") {
			return sqlText, false
		}
	}
	gen := lookup.generated(table)
	if gen == "" {
		return sqlText, false
	}
	for _, c := range cols {
		if c == gen {
			return sqlText, false
		}
	}
	end := len(sqlText)
	if last := toks[len(toks)-1]; last.Text == ";" {
		end = last.Pos
	}
	return strings.TrimRight(sqlText[:end], " \t\r\n") + " RETURNING " + quoteIdent(gen), true
}

// insertIDTag reads the rows of an INSERT mysqlInsertReturning wrote and answers its tag as
// the frontend reads it: "INSERT <first generated id> <rows>" ("INSERT 0 0" when no row went
// in: INSERT IGNORE's conflict).
func insertIDTag(ctx context.Context, rows pgx.Rows) (query.Rows, error) {
	var first int64
	n := 0
	for rows.Next() {
		if n == 0 {
			if v, err := rows.Values(); err == nil && len(v) == 1 {
				switch id := v[0].(type) {
				case int64:
					first = id
				case int32:
					first = int64(id)
				case int16:
					first = int64(id)
				}
			}
		}
		n++
	}
	rows.Close()
	if err := cancelledOr(ctx, rows.Err()); err != nil {
		return nil, argCountErr(err)
	}
	return engine.TagRows("INSERT " + strconv.FormatInt(first, 10) + " " + strconv.Itoa(n)), nil
}
