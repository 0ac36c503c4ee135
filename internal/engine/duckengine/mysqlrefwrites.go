package duckengine

import (
	"context"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Django's delete() of a row with CASCADE or SET_NULL relations runs, in one transaction, the
// DELETEs (or UPDATE ... SET fk = NULL) of the rows referencing it, then the row's DELETE;
// bulk_update changes an indexed column of rows others reference. DuckDB refuses, in one
// transaction, to delete or change a referenced row after the rows that referenced it were
// deleted or changed (its key index drops an entry only at commit), and any refusal aborts the
// transaction. So in a MySQL client's transaction, a DELETE or UPDATE of a table that a table
// the transaction already wrote (DELETE, UPDATE) references runs with the referencing tables
// set aside around it (withReferencingRebuilt: copied, dropped, created again with their rows
// and indexes, in the client's transaction); a row left referencing none is MariaDB's 1451.
// Its cost is a copy of the referencing tables' rows, for such a statement only.

// writeTarget is the table (the current schema's) that sqlText, a MySQL client's DELETE FROM t
// or UPDATE t as DuckDB runs it, writes; "" for any other statement.
func writeTarget(sqlText string) string {
	if !sqltok.FirstKeywordIs(sqlText, sqltok.Generic, "delete", "update") {
		return ""
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.Generic)
	i := 1
	if len(toks) > 2 && toks[0].IsWord("delete") && toks[1].IsWord("from") {
		i = 2
	}
	if i >= len(toks) || toks[i].Kind != sqltok.Word && toks[i].Kind != sqltok.QuotedIdent || i+1 < len(toks) && toks[i+1].Text == "." {
		return ""
	}
	return unquoteIdent(toks[i])
}

// mysqlWrite runs exec, a MySQL client's statement q (DuckDB's text) in the session, with the
// tables referencing its table set aside when the transaction wrote one of them, and notes the
// table it writes.
func (s *session) mysqlWrite(ctx context.Context, client, q *query.Request, exec func() (query.Rows, error)) (query.Rows, error) {
	target := ""
	if isMySQL(client) && s.status == 'T' {
		target = writeTarget(q.SQL)
	}
	if target == "" {
		return exec()
	}
	var rows query.Rows
	var err error
	if s.wroteReferencing(ctx, target) {
		rows, err = withReferencingRebuilt(ctx, s.conn, true, "", target, nil, nil, noActions, exec)
		if err == errOrphans {
			err = errParentRowInUse
		}
	} else {
		rows, err = exec()
	}
	if err == nil {
		s.noteWritten(target)
	}
	return rows, err
}

// wroteReferencing reports whether a table the transaction wrote has a foreign key to table.
func (s *session) wroteReferencing(ctx context.Context, table string) bool {
	if len(s.written) == 0 {
		return false
	}
	rows, err := s.conn.QueryContext(ctx, `SELECT DISTINCT table_name FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY'
		AND database_name = current_database() AND schema_name = current_schema() AND lower(referenced_table) = lower(?)`, table)
	if err != nil {
		return false
	}
	defer rows.Close()
	for rows.Next() {
		var child string
		if rows.Scan(&child) == nil && slices.ContainsFunc(s.written, func(t string) bool { return strings.EqualFold(t, child) }) {
			return true
		}
	}
	return false
}
