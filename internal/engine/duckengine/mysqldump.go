package duckengine

import (
	"context"
	"database/sql"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Statements of a mysqldump or mariadb-dump file that have nothing to do on DuckDB, answered
// as MariaDB answers them (an OK):
//   - LOCK TABLES t WRITE ... and UNLOCK TABLES, around each table's rows. DuckDB has no
//     table locks; the rows go in as the client's statements, each in its own transaction,
//     and other clients are not kept out while they do (MariaDB's lock would keep them out).
//   - ALTER TABLE t DISABLE KEYS / ENABLE KEYS: MyISAM's, a note on InnoDB; DuckDB keeps its
//     indexes as rows come.
// A CREATE VIEW's ALGORITHM, DEFINER and SQL SECURITY (MariaDB's view options, which a dump
// writes) are left out by mysqlViewOptions: DuckDB's views run as their reader.

// mysqlDumpNoOp reads q as one of the statements above.
func mysqlDumpNoOp(q *query.Request) (ownRun, bool) {
	toks := sqltok.SignificantTokens(q.SQL, sqltok.MySQL)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	if len(toks) < 2 {
		return nil, false
	}
	tag := ""
	switch {
	case toks[0].IsWord("lock") && toks[1].IsWord("tables", "table"):
		tag = "LOCK TABLES"
	case toks[0].IsWord("unlock") && toks[1].IsWord("tables", "table") && len(toks) == 2:
		tag = "UNLOCK TABLES"
	case toks[0].IsWord("alter") && toks[1].IsWord("table") && len(toks) == 5 && toks[3].IsWord("disable", "enable") && toks[4].IsWord("keys"):
		tag = "ALTER TABLE"
	default:
		return nil, false
	}
	return func(context.Context, *sql.Conn, bool) (query.Rows, error) { return engine.TagRows(tag), nil }, true
}

// mysqlViewOptions is a MySQL client's CREATE [OR REPLACE] [ALGORITHM = a] [DEFINER = u]
// [SQL SECURITY s] VIEW ... without the options between CREATE and VIEW; sqlText itself for
// any other statement.
func mysqlViewOptions(sqlText string) string {
	if !sqltok.FirstKeywordIs(sqlText, sqltok.MySQL, "create") || !containsFold(sqlText, "view") ||
		!containsFold(sqlText, "algorithm") && !containsFold(sqlText, "definer") && !containsFold(sqlText, "security") {
		return sqlText
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.MySQL)
	i := 1
	if i+1 < len(toks) && toks[i].IsWord("or") && toks[i+1].IsWord("replace") {
		i += 2
	}
	from := i
	if from >= len(toks) || !toks[from].IsWord("algorithm", "definer", "sql") {
		return sqlText
	}
	for i < len(toks) && !toks[i].IsWord("view") {
		i++
	}
	if i == len(toks) {
		return sqlText
	}
	return strings.TrimRight(sqlText[:toks[from].Pos], " \t\r\n") + " " + sqlText[toks[i].Pos:]
}
