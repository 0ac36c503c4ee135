package duckengine

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// DuckDB's INSERT OR IGNORE (MySQL's INSERT IGNORE) of several rows takes two rows with NULL in
// one UNIQUE key for a collision and keeps one of them, where NULLs never collide (MariaDB
// keeps all): `INSERT OR IGNORE INTO t VALUES (5, NULL), (6, NULL), (7, NULL)` kept one row,
// silently. Against rows already in the table, and for one row, it is right; but a NULL given a
// NOT NULL column, and a duplicate, want MariaDB's warnings (mysqlignorewarn.go). So a MySQL
// client's INSERT IGNORE ... VALUES, or INSERT IGNORE ... SELECT (its rows read first:
// mysqlrowsource.go), runs a row at a time, in one transaction: each row sees the ones before
// it, as MariaDB writes them. The AUTO_INCREMENT ids are InnoDB's for the whole statement
// (idReservation), written into each row. The cost is a statement a row (two for a row left
// out), for INSERT IGNORE only.

// ignoreByRows runs client, a MySQL client's INSERT IGNORE, a row at a time when it needs to
// (handled).
func (s *session) ignoreByRows(ctx context.Context, client *query.Request) (query.Rows, bool, error) {
	if idsGiven(ctx) {
		return nil, false, nil // a row of one run a row at a time
	}
	u, ai, hasAI, ok := s.rowsStatement(ctx, client, 1, true, "ignore", "into", "ignore")
	if !ok {
		return nil, false, nil
	}
	return s.byRows(ctx, client, func() (engine.TagRows, error) { return s.ignoreRows(ctx, client, &u, ai, hasAI) })
}

// rowsStatement reads client, a MySQL client's INSERT or REPLACE whose modifiers are among
// allowed (the first of them modifier, unless ""), to run a row at a time: ok when it writes
// VALUES of minRows rows or more, or a SELECT's rows, into a table with a UNIQUE key over a
// nullable column (into any table when anyTable), and its ids are known before its rows run.
// Any other runs as written, and a wrong one says what is wrong itself.
func (s *session) rowsStatement(ctx context.Context, client *query.Request, minRows int, anyTable bool, modifier string, allowed ...string) (u rowUpsert, ai aiColumn, hasAI, ok bool) {
	toks, argsOf, i, ok := readRowInsert(client.SQL, client.Args, allowed...)
	if !ok || modifier != "" && !toks[1].IsWord(modifier) {
		return u, ai, false, false
	}
	u, end, ok := readInsertRows(client.SQL, toks, i, argsOf)
	if !ok || end != len(toks) || u.selected.text == "" && len(u.rows) < minRows || !anyTable && !nullableUnique(ctx, s.conn, u.db, u.table) || !u.fillColumns(ctx, s) {
		return u, ai, false, false
	}
	ai, hasAI = lookupAI(ctx, s.conn, u.db, u.table)
	_, _, ok = u.ids(ai, hasAI)
	return u, ai, hasAI, ok
}

// ids are the AUTO_INCREMENT values u's rows give (aiValue's); ok is false when one is not
// known before the row runs.
func (u *rowUpsert) ids(ai aiColumn, hasAI bool) (explicit []int64, generate []bool, ok bool) {
	explicit, generate = make([]int64, len(u.rows)), make([]bool, len(u.rows))
	if !hasAI {
		return explicit, generate, true
	}
	for r, row := range u.rows {
		if explicit[r], generate[r], ok = u.aiValue(row, ai.name); !ok {
			return nil, nil, false
		}
	}
	return explicit, generate, true
}

// errIDNotNumber refuses a row whose AUTO_INCREMENT value a SELECT gave as other than a whole
// number.
var errIDNotNumber = errors.New("duckengine: a row's AUTO_INCREMENT value is not a whole number")

// ignoreRows inserts u's rows one at a time, ignoring each that collides, and answers the
// statement's MySQL tag. The ids are InnoDB's (idReservation).
func (s *session) ignoreRows(ctx context.Context, client *query.Request, u *rowUpsert, ai aiColumn, hasAI bool) (engine.TagRows, error) {
	ids, explicit, generate, err := s.readRowIDs(ctx, client, u, ai, hasAI, u.selected.text != "")
	if err != nil {
		return "", err
	}
	table := s.readIgnoreTable(ctx, u, ai.name) // mysqlignorewarn.go
	var affected, firstGenerated, lastID int64
	var warnings []mysqlengine.Warning
	for r, row := range u.rows {
		id, err := ids.take(ctx, generate[r], explicit[r])
		if err != nil {
			return "", err
		}
		row, nulls := table.withDefaults(u, row)
		warnings = append(warnings, nulls...)
		n, notes, err := s.ignoreRow(ctx, client, u, row, ai, hasAI, generate[r], id)
		if err != nil {
			return "", err
		}
		ids.done(n > 0)
		warnings = append(warnings, notes...)
		if n == 0 {
			if w, ok := s.duplicateWarning(ctx, client, u, row, &table, ai.name); ok {
				warnings = append(warnings, w)
			}
		}
		affected += n
		// Without a generated id inserted, the OK packet carries the id of the last row read,
		// inserted or not (the AUTO_INCREMENT field as the statement leaves it).
		lastID = id
		if n > 0 && generate[r] && firstGenerated == 0 {
			firstGenerated = id
		}
	}
	if err := ids.finish(ctx); err != nil {
		return "", err
	}
	cnt := strconv.FormatInt(affected, 10)
	var tag string
	switch {
	case affected == 0:
		tag = "INSERT 0 0"
	case firstGenerated != 0:
		tag = "INSERT " + strconv.FormatInt(firstGenerated, 10) + " " + cnt
	case hasAI:
		tag = "INSERT explicit:" + strconv.FormatInt(lastID, 10) + " " + cnt
	default:
		tag = "INSERT 0 " + cnt
	}
	return engine.TagRows(withNotes(tag, warnings)), nil
}

// ignoreRow runs INSERT IGNORE of row alone, its AUTO_INCREMENT value id when generate: the
// rows it wrote (0 when it was ignored) and its warnings.
func (s *session) ignoreRow(ctx context.Context, client *query.Request, u *rowUpsert, row []sqlPart, ai aiColumn, hasAI, generate bool, id int64) (int64, []mysqlengine.Warning, error) {
	var cols []string
	var vals stmtText
	given := false
	for j, col := range u.columns {
		v := row[j]
		if hasAI && strings.EqualFold(col, ai.name) {
			given = true
			if generate {
				v = sqlPart{text: strconv.FormatInt(id, 10)}
			}
		}
		if j > 0 {
			vals.add(", ")
		}
		cols = append(cols, mysqlIdent(col))
		vals.part(v)
	}
	if hasAI && !given {
		cols = append(cols, mysqlIdent(ai.name))
		vals.add(", ", strconv.FormatInt(id, 10))
	}
	res, err := s.sub(context.WithValue(ctx, givenIDs{}, true), client, "INSERT IGNORE INTO "+u.tableText+" ("+strings.Join(cols, ", ")+") VALUES ("+vals.b.String()+")", vals.args...)
	if err != nil {
		return 0, nil, err
	}
	tag := ""
	if t, ok := res.(interface{ Tag() string }); ok {
		tag = t.Tag()
	}
	if err := res.Close(); err != nil {
		return 0, nil, err
	}
	base, _, notes := mysqlengine.SplitWarnings(tag)
	base, _ = mysqlengine.SplitMySQLTag(base)
	return affectedCount(base), notes, nil
}

// givenIDs marks the context of a row's INSERT whose AUTO_INCREMENT id the statement it is a row
// of gave it: the counter is that statement's to move.
type givenIDs struct{}

func idsGiven(ctx context.Context) bool { return ctx.Value(givenIDs{}) != nil }

// nullableUnique reports whether table db.table has a UNIQUE key over a nullable column, or a
// unique index.
func nullableUnique(ctx context.Context, conn *sql.Conn, db, table string) bool {
	var n int
	err := conn.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM duckdb_constraints() k WHERE constraint_type = 'UNIQUE' AND `+inSchema("k.database_name", "k.schema_name", db)+`
			AND lower(k.table_name) = lower($1) AND EXISTS (SELECT 1 FROM duckdb_columns() c WHERE c.database_name = k.database_name
			AND c.schema_name = k.schema_name AND c.table_name = k.table_name AND c.is_nullable AND list_contains(k.constraint_column_names, c.column_name)))
		+ (SELECT count(*) FROM duckdb_indexes() x WHERE x.is_unique AND `+inSchema("x.database_name", "x.schema_name", db)+` AND lower(x.table_name) = lower($1))`, table).Scan(&n)
	return err == nil && n > 0
}

// isInsertIgnore reports whether sqlText, a MySQL client's, starts INSERT IGNORE.
func isInsertIgnore(sqlText string) bool {
	return containsFold(sqlText, "ignore") && sqltok.FirstKeywordIs(sqlText, sqltok.MySQL, "insert")
}
