package duckengine

import (
	"context"
	"database/sql"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// lockShare is pg_dump's LOCK TABLE t [, ...] IN ACCESS SHARE MODE, taken in its repeatable read
// transaction so that no table it dumps is dropped meanwhile. DuckDB has no LOCK; its snapshot
// reads each table as it was when the transaction began, whatever another client changes, so
// the statement answers LOCK TABLE once every table is there (42P01 as PostgreSQL's
// otherwise). Any other lock mode is DuckDB's (a syntax error): never a lock that is not held.
func lockShare(q *query.Request) (ownRun, bool) {
	if !strings.EqualFold(sqltok.FirstWord(q.Analysis().Tokens), "lock") {
		return nil, false
	}
	r := sqltok.NewWalker(sqltok.SignificantTokens(q.SQL, sqltok.Postgres))
	r.Word("lock")
	r.Word("table")
	var tables []string
	for {
		r.Word("only")
		name := nameParts(r)
		if len(name) == 0 || len(name) > 2 {
			return nil, false
		}
		table := quoteIdent(strings.ToLower(name[len(name)-1]))
		if len(name) == 2 {
			table = quoteIdent(duckSchema(strings.ToLower(name[0]))) + "." + table
		}
		tables = append(tables, table)
		if !r.Punct(",") {
			break
		}
	}
	if !r.Word("in") || !r.Word("access") || !r.Word("share") || !r.Word("mode") {
		return nil, false
	}
	if r.Punct(";"); r.More() {
		return nil, false
	}
	return func(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
		for _, t := range tables {
			rows, err := conn.QueryContext(ctx, "SELECT 1 FROM "+t+" LIMIT 0")
			if err != nil {
				return nil, wrapErr(err)
			}
			rows.Close()
		}
		return engine.TagRows("LOCK TABLE"), nil
	}, true
}

// pgSequenceRow answers pg_dump's read of a sequence's state, SELECT last_value, is_called
// FROM [schema.]seq, from duckdb_sequences(): a DuckDB sequence is no relation to select from.
// A sequence no value was taken from yet is at its start, not called, as in PostgreSQL; one
// moved by setval(s, n, false) reads as its value before n, called (the same next value).
func pgSequenceRow(q *query.Request) (string, bool) {
	if q.Protocol != query.ProtocolPostgres || len(q.SQL) > 300 || !sqltok.FirstKeywordIs(q.SQL, sqltok.Postgres, "select") ||
		!containsFold(q.SQL, "is_called") {
		return "", false
	}
	r := sqltok.NewWalker(sqltok.SignificantTokens(q.SQL, sqltok.Postgres))
	if !r.Word("select") || !r.Word("last_value") || !r.Punct(",") || !r.Word("is_called") || !r.Word("from") {
		return "", false
	}
	name := nameParts(r)
	if r.Punct(";"); r.More() || len(name) == 0 || len(name) > 2 {
		return "", false
	}
	schema := ""
	if len(name) == 2 {
		schema = duckSchema(name[0])
	}
	return `SELECT coalesce(last_value, start_value) AS last_value, last_value IS NOT NULL AS is_called FROM duckdb_sequences()
		WHERE database_name = current_database() AND schema_name = coalesce(nullif(` + quoteString(schema) + `, ''), current_schema())
		AND lower(sequence_name) = lower(` + quoteString(name[len(name)-1]) + `)`, true
}

// selectedVector writes a vector column (vectorColumns: [q.]indkey, ...) that stands alone as
// a select-list item as PostgreSQL's text of it, its numbers between blanks (pg_dump parses
// "2 3", where DuckDB's list would be sent as {2,3}), under its own name.
func (w *compatWriter) selectedVector() bool {
	name := w.word(w.i)
	if next := w.word(w.sig(w.i+1, 0)); next != "," && next != "from" {
		return false
	}
	if prev := w.word(w.prevSig(w.nameStart(w.i))); prev != "," && prev != "select" {
		return false
	}
	qualifier, ok := w.retract(w.nameStart(w.i)) // "q." (or nothing), written already
	if !ok {
		return false
	}
	w.emit(" array_to_string(" + qualifier + w.toks[w.i].Text + ", ' ') AS " + name)
	w.i++
	return true
}

// viewdefSQL is pg_get_viewdef(oid [, pretty]) as PostgreSQL answers it: the view's query alone
// (pg_dump writes CREATE VIEW name AS before it; DuckDB's answers its whole CREATE VIEW), with
// what DuckDB writes of a PostgreSQL client's query that PostgreSQL would not read written as
// PostgreSQL's (count_star() and count() for count(*), a function qualified by DuckDB's main,
// pgfunctions.go's qfpg_ functions as the client wrote them, a cast to VARCHAR as the ::text
// it stands for), so that a dump restores into PostgreSQL.
var viewdefSQL = strings.ReplaceAll(`CREATE MACRO {c}.main.pg_get_viewdef(id) AS %s, (id, pretty) AS %s`, "%s",
	`(SELECT ' ' || `+viewTextAsPostgres(`regexp_replace(any_value(sql), '^CREATE (OR REPLACE )?(TEMP(ORARY)? )?VIEW .+? AS ', '')`)+
		` FROM duckdb_views() WHERE view_oid = id)`)

// viewTextAsPostgres is the SQL expression of text, DuckDB's text of a view's query, with
// DuckDB's spellings PostgreSQL lacks replaced by PostgreSQL's.
func viewTextAsPostgres(text string) string {
	for _, r := range [][2]string{
		{`\bcount(_star)?\(\)`, `count(*)`},
		{`\bmain\.("?\w+"?)\(`, `\1(`},
		{`\bqfpg_extract\('(\w+)', `, `EXTRACT(\1 FROM `},
		{`\bqfpg_extract__(\w+)\(`, `EXTRACT(\1 FROM `},
		{`\bqfpg_sum_distinct\(`, `sum(DISTINCT `},
		{`\bqfpg_([a-z_]*[a-z])\(`, `\1(`},
		{` AS VARCHAR\)`, ` AS TEXT)`},
	} {
		text = "regexp_replace(" + text + ", " + quoteString(r[0]) + ", " + quoteString(r[1]) + ", 'g')"
	}
	return text
}
