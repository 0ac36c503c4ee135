package duckengine

import (
	"context"
	"database/sql"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A key a MySQL client adds to a table it created compares text as the keys of its CREATE TABLE
// do (caselessKeyIndexes): ALTER TABLE t ADD [CONSTRAINT [c]] UNIQUE [KEY | INDEX] [name]
// (cols), ALTER TABLE t ADD [CONSTRAINT [c]] PRIMARY KEY (cols) and CREATE UNIQUE INDEX name ON
// t (cols) get beside the key a unique index of lower() of its NOCASE text columns, named
// t$qf_ci_<the key's name>, which dropping the key drops (dropIndex). Without it 'a' and 'A'
// both went in where MariaDB answers 1062. The UNIQUE key of an ALTER TABLE is the index t$name,
// as an inline KEY is (unnamed, named by its first column as MariaDB names it: SHOW INDEX said
// t_col_key); the others are DuckDB's as before.

// addedKey is a PRIMARY KEY or UNIQUE key added to an existing table.
type addedKey struct {
	table string    // unqualified
	key   inlineKey // its name ("" for an unnamed UNIQUE key) and columns
	// create is DuckDB's statement of the key (ADD PRIMARY KEY, CREATE UNIQUE INDEX); "" for
	// an ALTER TABLE's UNIQUE key, created as an inline one.
	create string
}

// mysqlAddKey reads q as one of the statements above (one action, t unqualified, plain columns).
func mysqlAddKey(q *query.Request) (ownRun, bool) {
	if !sqltok.FirstKeywordIs(q.SQL, sqltok.MySQL, "alter", "create") || !containsFold(q.SQL, "unique") && !containsFold(q.SQL, "primary") {
		return nil, false
	}
	toks := sqltok.SignificantTokens(q.SQL, sqltok.MySQL)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	isName := func(i int) bool {
		return i < len(toks) && (toks[i].Kind == sqltok.Word || toks[i].Kind == sqltok.QuotedIdent && toks[i].Text[0] == '`' && !toks[i].Unterminated)
	}
	word := func(i int, w ...string) bool { return i < len(toks) && toks[i].IsWord(w...) }
	var k addedKey
	at := 0
	switch {
	case len(toks) > 7 && toks[0].IsWord("create") && toks[1].IsWord("unique") && toks[2].IsWord("index") && isName(3) && toks[4].IsWord("on") && isName(5):
		k = addedKey{table: identText(toks[5]), key: inlineKey{name: identText(toks[3]), unique: true}, create: mysqlCompat(q.SQL)}
		at = 6
	case len(toks) > 6 && toks[0].IsWord("alter") && toks[1].IsWord("table") && isName(2) && toks[3].IsWord("add"):
		k.table, at = identText(toks[2]), 4
		if word(at, "constraint") {
			if at++; isName(at) && !word(at, "unique", "primary") {
				k.key.name, at = identText(toks[at]), at+1
			}
		}
		switch {
		case word(at, "unique"):
			if at++; word(at, "key", "index") {
				at++
			}
			if isName(at) {
				k.key.name, at = identText(toks[at]), at+1
			}
			k.key.unique = true
		case word(at, "primary") && word(at+1, "key"):
			k.key.name, k.create, at = "PRIMARY", mysqlCompat(q.SQL), at+2
		default:
			return nil, false
		}
	default:
		return nil, false
	}
	if at >= len(toks) || toks[at].Text != "(" {
		return nil, false
	}
	parts, end := definitions(toks, at)
	if end != len(toks)-1 {
		return nil, false // options, more actions: DuckDB's to read, as before
	}
	for _, p := range parts {
		if len(p) != 1 || p[0].Kind != sqltok.Word && p[0].Kind != sqltok.QuotedIdent {
			return nil, false // a prefix length, an expression
		}
		k.key.cols = append(k.key.cols, identText(p[0]))
	}
	return k.run, true
}

// run creates the key and its caseless index.
func (k addedKey) run(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
	caseless, err := caselessColumns(ctx, conn, k.table)
	if err != nil {
		return nil, err
	}
	stmts, name := []string{k.create}, k.key.name
	if k.create == "" {
		taken, err := keyNames(ctx, conn, k.table)
		if err != nil {
			return nil, err
		}
		name = keyName(k.key, taken)
		stmts = indexStatements(quoteIdent(k.table), k.table, []inlineKey{{name: name, cols: k.key.cols, unique: true}}, taken)
	}
	if stmt, ok := caselessKeyIndex(quoteIdent(k.table), k.table+"$qf_ci_"+name, k.key.cols, caseless); ok {
		stmts = append(stmts, stmt)
	}
	if err := runAll(ctx, conn, stmts, inTx); err != nil {
		return nil, err
	}
	if strings.HasPrefix(k.create, "CREATE") {
		return engine.TagRows("CREATE INDEX"), nil
	}
	return engine.TagRows("ALTER TABLE"), nil
}

// caselessColumns are table's COLLATE NOCASE columns (in the current schema), lower case, as
// its DuckDB CREATE TABLE statement declares them.
func caselessColumns(ctx context.Context, conn *sql.Conn, table string) (map[string]bool, error) {
	var ddl string
	err := conn.QueryRowContext(ctx, `SELECT sql FROM duckdb_tables() WHERE database_name = current_database()
		AND schema_name = current_schema() AND lower(table_name) = lower(?)`, table).Scan(&ddl)
	if err == sql.ErrNoRows {
		return nil, nil // no such table: the key's statement says so
	}
	if err != nil {
		return nil, wrapErr(err)
	}
	toks := sqltok.SignificantTokens(ddl, sqltok.Postgres)
	open := 0
	for open < len(toks) && toks[open].Text != "(" {
		open++
	}
	defs, _ := definitions(toks, open)
	caseless := map[string]bool{}
	for _, d := range defs {
		for i := 1; i+1 < len(d); i++ {
			if d[i].IsWord("collate") && d[i+1].IsWord("nocase") {
				caseless[strings.ToLower(tokenName(d[0].Text))] = true
			}
		}
	}
	return caseless, nil
}

// keyNames are table's key and index names as MariaDB's (lower case), PRIMARY's too.
func keyNames(ctx context.Context, conn *sql.Conn, table string) (map[string]bool, error) {
	rows, err := conn.QueryContext(ctx, `SELECT lower(`+mysqlIndexName+`) FROM duckdb_indexes() WHERE database_name = current_database()
		AND schema_name = current_schema() AND lower(table_name) = lower(?)`, table)
	if err != nil {
		return nil, wrapErr(err)
	}
	defer rows.Close()
	taken := map[string]bool{"primary": true}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, wrapErr(err)
		}
		taken[name] = true
	}
	return taken, wrapErr(rows.Err())
}
