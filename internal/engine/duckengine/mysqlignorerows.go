package duckengine

import (
	"context"
	"database/sql"
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
// silently. Against rows already in the table, and for one row, it is right. So a MySQL
// client's INSERT IGNORE ... VALUES of several rows into a table with a UNIQUE key over a
// nullable column (a constraint, or a unique index) runs a row at a time, in one transaction:
// each row sees the ones before it, as MariaDB writes them. The AUTO_INCREMENT ids are InnoDB's
// for the whole statement (its rows reserved at the first that needs one; an ignored row's id
// given back to the next row, as the handler's restore_auto_increment does), written into each
// row. The cost is a statement a row, for such
// statements only.

// ignoreByRows runs client, a MySQL client's INSERT IGNORE, a row at a time when it needs to
// (handled).
func (s *session) ignoreByRows(ctx context.Context, client *query.Request) (query.Rows, bool, error) {
	toks, argsOf, i, ok := readRowInsert(client.SQL, client.Args, "into", "ignore")
	if !ok || !toks[1].IsWord("ignore") {
		return nil, false, nil
	}
	u, end, ok := readInsertRows(client.SQL, toks, i, argsOf)
	if !ok || end != len(toks) || len(u.rows) < 2 || !nullableUnique(ctx, s.conn, u.db, u.table) {
		return nil, false, nil
	}
	if !u.fillColumns(ctx, s) {
		return nil, false, nil // the INSERT says what is wrong itself
	}
	ai, hasAI := lookupAI(ctx, s.conn, u.db, u.table)
	explicit := make([]int64, len(u.rows))
	generate := make([]bool, len(u.rows))
	if hasAI {
		for r, row := range u.rows {
			if explicit[r], generate[r], ok = u.aiValue(row, ai.name); !ok {
				return nil, false, nil // an id not known before it runs: the plain path's
			}
		}
	}
	return s.byRows(ctx, client, func() (engine.TagRows, error) { return s.ignoreRows(ctx, client, &u, ai, hasAI, explicit, generate) })
}

// ignoreRows inserts u's rows one at a time, ignoring each that collides, and answers the
// statement's MySQL tag. The ids are InnoDB's (assignIDs' state, a row at a time): an ignored
// row gives its id back to the next row (the handler's restore_auto_increment), and its
// explicit id does not move the counter.
func (s *session) ignoreRows(ctx context.Context, client *query.Request, u *rowUpsert, ai aiColumn, hasAI bool, explicit []int64, generate []bool) (engine.TagRows, error) {
	var c counter
	if hasAI {
		var err error
		if c, err = readCounter(ctx, s.conn, ai.seq); err != nil {
			return "", err
		}
	}
	high := c.value()
	var next, end, left, reserved int64
	var affected, firstGenerated, lastExplicit int64
	var warnings []mysqlengine.Warning
	for r, row := range u.rows {
		prevNext, id, written := next, explicit[r], high
		if generate[r] {
			if next == 0 || next >= end {
				if left == 0 {
					left = int64(len(u.rows))
				}
				if err := moveTo(ctx, s.conn, ai.seq, &c, high); err != nil {
					return "", err
				}
				first, err := reserve(ctx, s.conn, ai.seq, &c, left)
				if err != nil {
					return "", err
				}
				next, end, reserved = first, first+left, first+left
				high = max(high, end)
			}
			id = next
			next++
			written = high
		} else if hasAI {
			if next > 0 && id >= next {
				next = id + 1
			}
			if id >= reserved && id > 0 {
				written = max(high, id+1)
			}
		}
		if left > 0 {
			left--
		}
		n, notes, err := s.ignoreRow(ctx, client, u, row, ai, hasAI, generate[r], id)
		if err != nil {
			return "", err
		}
		warnings = append(warnings, notes...)
		affected += n
		if n == 0 {
			if prevNext > 0 || !generate[r] {
				next = prevNext
			} else {
				next = id
			}
			continue
		}
		high = written
		if generate[r] && firstGenerated == 0 {
			firstGenerated = id
		}
		if !generate[r] {
			lastExplicit = id
		}
	}
	if hasAI {
		if err := moveTo(ctx, s.conn, ai.seq, &c, high); err != nil {
			return "", err
		}
	}
	cnt := strconv.FormatInt(affected, 10)
	var tag string
	switch {
	case affected == 0:
		tag = "INSERT 0 0"
	case firstGenerated != 0:
		tag = "INSERT " + strconv.FormatInt(firstGenerated, 10) + " " + cnt
	case hasAI:
		tag = "INSERT explicit:" + strconv.FormatInt(lastExplicit, 10) + " " + cnt
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
