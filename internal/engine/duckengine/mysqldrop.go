package duckengine

import (
	"cmp"
	"context"
	"database/sql"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's DROP TABLE [IF EXISTS] a [, b ...] [RESTRICT | CASCADE], as MariaDB runs it
// (DuckDB drops one object a statement, and its errors are not MariaDB's): the tables are
// dropped one at a time in the order named, each on its own, so one that cannot be dropped
// leaves the others dropped. The names that are no table are, without IF EXISTS, the
// statement's error 1051 "Unknown table 'db.a,db.b'" naming them all; with IF EXISTS one note
// 1051 of the same text (SHOW WARNINGS). A view is 1965 "'db.v' is a view" (before 1051; with
// IF EXISTS a note each, before the 1051 one). A table another table's foreign key references
// is MariaDB's 1451 (DuckDB refuses to drop it; MariaDB refuses too, unless
// FOREIGN_KEY_CHECKS=0: mysqldropreferenced.go). DROP TEMPORARY TABLE is DuckDB's as written.

// droppedTable is one name of a DROP TABLE: db ("" for the client's) and table.
type droppedTable struct{ db, table string }

// mysqlDropTables reads a MySQL client's DROP TABLE.
func mysqlDropTables(q *query.Request) (ownRun, bool) {
	if !sqltok.FirstKeywordIs(q.SQL, sqltok.MySQL, "drop") {
		return nil, false
	}
	toks := sqltok.SignificantTokens(q.SQL, sqltok.MySQL)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	if len(toks) < 3 || !toks[1].IsWord("table", "tables") {
		return nil, false
	}
	i, ifExists := 2, false
	if i+1 < len(toks) && toks[i].IsWord("if") && toks[i+1].IsWord("exists") {
		i, ifExists = i+2, true
	}
	isName := func(i int) bool {
		return i < len(toks) && (toks[i].Kind == sqltok.Word || toks[i].Kind == sqltok.QuotedIdent && toks[i].Text[0] == '`')
	}
	var tables []droppedTable
	for {
		if !isName(i) {
			return nil, false
		}
		t := droppedTable{table: identText(toks[i])}
		if i+2 < len(toks) && toks[i+1].Text == "." && isName(i+2) {
			t, i = droppedTable{db: t.table, table: identText(toks[i+2])}, i+2
		}
		tables, i = append(tables, t), i+1
		if i >= len(toks) || toks[i].Text != "," {
			break
		}
		i++
	}
	if i < len(toks) && toks[i].IsWord("restrict", "cascade") {
		i++
	}
	if i != len(toks) {
		return nil, false
	}
	return func(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
		return dropTables(ctx, conn, q.Database, tables, ifExists, inTx)
	}, true
}

// dropTables drops each of tables that is a table, then answers what MariaDB answers of the rest.
func dropTables(ctx context.Context, conn *sql.Conn, clientDB string, tables []droppedTable, ifExists, inTx bool) (query.Rows, error) {
	var unknown, views []string
	var refused error
	for _, t := range tables {
		full := cmp.Or(t.db, clientDB) + "." + t.table
		if clientDB != "" && strings.EqualFold(t.db, clientDB) {
			t.db = "" // TypeORM's dropSchema names its own database's tables: `db`.`t`, checks off
		}
		kind, err := tableKind(ctx, conn, t)
		if err != nil {
			return nil, err
		}
		switch kind {
		case "":
			unknown = append(unknown, full)
			continue
		case "view":
			views = append(views, full)
			continue
		}
		if err := dropTable(ctx, conn, t, inTx); err != nil && refused == nil {
			refused = err
			if strings.Contains(err.Error(), "main key table") {
				refused = &query.Error{Code: "23000", Message: "Cannot delete or update a parent row: a foreign key constraint fails (MySQL error 1451)"}
			}
		}
	}
	switch {
	case refused != nil:
		return nil, wrapErr(refused)
	case ifExists:
		var notes []mysqlengine.Warning
		for _, name := range views {
			notes = append(notes, mysqlengine.Warning{Level: "Note", Code: 1965, Message: "'" + name + "' is a view"})
		}
		if len(unknown) > 0 {
			notes = append(notes, mysqlengine.Warning{Level: "Note", Code: 1051, Message: "Unknown table '" + strings.Join(unknown, ",") + "'"})
		}
		return engine.TagRows(withNotes("DROP TABLE", notes)), nil
	case len(views) > 0:
		return nil, &query.Error{Code: "42S02", Message: "'" + views[0] + "' is a view (MySQL error 1965)"}
	case len(unknown) > 0:
		return nil, &query.Error{Code: "42S02", Message: "Unknown table '" + strings.Join(unknown, ",") + "' (MySQL error 1051)"}
	}
	return engine.TagRows("DROP TABLE"), nil
}

// dropTable drops t; one foreign keys reference as well, with the session's checks off
// (mysqldropreferenced.go).
func dropTable(ctx context.Context, conn *sql.Conn, t droppedTable, inTx bool) error {
	if t.db == "" && foreignKeyChecksOff(ctx, conn) && referencedTable(ctx, conn, "", t.table) {
		return dropReferenced(ctx, conn, t.table, inTx)
	}
	_, err := conn.ExecContext(ctx, "DROP TABLE "+tableRef(t.db, t.table))
	if err == nil && t.db == "" { // its columns' declared types go with it (mysqldeclared.go)
		_, err = conn.ExecContext(ctx, mysqlDeclaredColumns(t.table, nil, nil)[0])
	}
	return err
}

// tableKind is "table" or "view" for what t names, "" when it names nothing.
func tableKind(ctx context.Context, conn *sql.Conn, t droppedTable) (string, error) {
	var kind string
	err := conn.QueryRowContext(ctx, `SELECT kind FROM (
			SELECT 'table' AS kind, database_name, schema_name, table_name AS name FROM duckdb_tables() WHERE NOT temporary
			UNION ALL SELECT 'view', database_name, schema_name, view_name FROM duckdb_views() WHERE NOT internal AND NOT temporary)
		WHERE database_name = coalesce(nullif(?, ''), current_database()) AND schema_name = current_schema() AND lower(name) = lower(?)
		LIMIT 1`, t.db, t.table).Scan(&kind)
	if err == sql.ErrNoRows {
		return "", nil
	}
	return kind, wrapErr(err)
}

// withNotes is tag carrying notes for the client's OK packet and SHOW WARNINGS (mysqlwire reads
// them as it reads a MariaDB statement's).
func withNotes(tag string, notes []mysqlengine.Warning) string {
	if len(notes) == 0 {
		return tag
	}
	n := uint16(min(len(notes), 65535))
	return mysqlengine.WithWarnings(mysqlengine.MySQLTag(tag, &mysql.Result{Warnings: n}, ""), n, notes)
}
