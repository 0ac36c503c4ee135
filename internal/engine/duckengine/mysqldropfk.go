package duckengine

import (
	"context"
	"database/sql"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// ALTER TABLE t DROP FOREIGN KEY name, a MySQL client's (Sequelize's sync({alter: true}) drops
// and adds every key again, Laravel's dropForeign, Django's and Knex's migrations): the key
// named as SHOW CREATE TABLE names it is dropped by creating the table again without it
// (pgalter.go's dropForeignKey), and the index InnoDB made for it stays, as MariaDB keeps it,
// a table's index of its own now. An unknown name is MariaDB's 1091.

// mysqlDropForeignKey reads toks (a MySQL client's ALTER TABLE t DROP FOREIGN KEY name, t
// unqualified) for its run.
func mysqlDropForeignKey(toks []sqltok.Token) (ownRun, bool) {
	if len(toks) != 7 || !toks[3].IsWord("drop") || !toks[4].IsWord("foreign") || !toks[5].IsWord("key") {
		return nil, false
	}
	d := dropForeignKey{table: identText(toks[2]), name: identText(toks[6])}
	return d.mysqlRun, true
}

// mysqlRun finds the key by its MariaDB name, then drops it.
func (d dropForeignKey) mysqlRun(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
	var text, ddl, index string
	var cols []any
	var referenced int
	err := conn.QueryRowContext(ctx, `SELECT c.qf_definition, t.sql, (SELECT count(*) FROM duckdb_constraints() o
			WHERE o.constraint_type = 'FOREIGN KEY' AND o.database_name = t.database_name AND o.schema_name = t.schema_name
			AND lower(o.referenced_table) = lower(t.table_name) AND o.table_oid <> t.table_oid),
			coalesce((SELECT any_value(key_name) FROM (`+foreignKeyIndexes("", d.table)+`) f WHERE f.constraint_index = k.constraint_index), ''),
			k.constraint_column_names
		FROM (`+foreignKeys(`database_name = current_database() AND schema_name = current_schema() AND lower(table_name) = lower(?)`)+`) k
		JOIN `+compatPrefix+`qf_pg_constraint c ON c.oid = k.table_oid * 1000000 + k.constraint_index
		JOIN duckdb_tables() t ON t.table_oid = k.table_oid
		WHERE lower(`+mysqlForeignKeyName("k.")+`) = lower(?)`, d.table, d.name).Scan(&text, &ddl, &referenced, &index, &cols)
	if err == sql.ErrNoRows {
		return nil, &query.Error{Code: "42000", Message: "Can't DROP FOREIGN KEY `" + d.name + "`; check that it exists (MySQL error 1091)"}
	} else if err != nil {
		return nil, wrapErr(err)
	}
	var after []string
	if index != "" { // the key's own index stays, as MariaDB's does
		names := make([]string, len(cols))
		for i, c := range cols {
			names[i], _ = c.(string)
		}
		after = indexStatements(quoteIdent(d.table), d.table, []inlineKey{{name: index, cols: names}}, map[string]bool{})
	}
	return d.dropKey(ctx, conn, inTx, text, ddl, referenced, after)
}

// neededByForeignKey is MariaDB's 1553 when table's index duckName (name to the client) is the
// only index a foreign key of the table begins with: MariaDB dropped the key's own index once
// this one covered it, and keeps one for every key.
func neededByForeignKey(ctx context.Context, conn *sql.Conn, table, name, duckName string) error {
	same := func(list string) string {
		return `list_transform(` + list + `, x -> lower(trim(x, '"'))) = list_transform(k.constraint_column_names, x -> lower(x))`
	}
	prefix := compatPrefix + `qf_index_expressions(i.expressions)[1:len(k.constraint_column_names)]`
	var needed bool
	err := conn.QueryRowContext(ctx, `SELECT count(*) > 0 FROM duckdb_constraints() k WHERE k.constraint_type = 'FOREIGN KEY'
		AND k.database_name = current_database() AND k.schema_name = current_schema() AND lower(k.table_name) = lower(?)
		AND EXISTS (SELECT 1 FROM duckdb_indexes() i WHERE i.table_oid = k.table_oid AND i.index_name = ? AND `+same(prefix)+`)
		AND NOT EXISTS (SELECT 1 FROM duckdb_indexes() i WHERE i.table_oid = k.table_oid AND i.index_name <> ?
			AND NOT `+strings.ReplaceAll(caselessIndex, "index_name", "i.index_name")+` AND `+same(prefix)+`)
		AND NOT EXISTS (SELECT 1 FROM duckdb_constraints() o WHERE o.table_oid = k.table_oid AND o.constraint_type IN ('PRIMARY KEY', 'UNIQUE')
			AND `+same(`o.constraint_column_names[1:len(k.constraint_column_names)]`)+`)`, table, duckName, duckName).Scan(&needed)
	if err != nil {
		return wrapErr(err)
	}
	if needed {
		return &query.Error{Code: "HY000", Message: "Cannot drop index '" + name + "': needed in a foreign key constraint (MySQL error 1553)"}
	}
	return nil
}
