package duckengine

import (
	"context"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

// A MySQL client's INSERT ... SELECT whose SELECT gives the AUTO_INCREMENT column (a column
// list naming it, or none) may give it NULL or 0, for which MariaDB generates an id; DuckDB
// stores the NULL (NOT NULL fails) or the 0 (a second one collides). So such a statement reads
// its SELECT first (mysqlrowsource.go), takes each row's id as InnoDB does (idReservation: a
// generated one from reservations of 1, 2, 4, ..., an explicit one moving the counter past it)
// and inserts the rows with their ids, insertSelectChunk rows a statement.

// insertSelectChunk is how many rows one INSERT of such a statement writes.
const insertSelectChunk = 256

// insertSelectByRows runs client, a MySQL client's plain INSERT ... SELECT, when its SELECT gives
// the AUTO_INCREMENT column (handled).
func (s *session) insertSelectByRows(ctx context.Context, client *query.Request) (query.Rows, bool, error) {
	if idsGiven(ctx) {
		return nil, false, nil
	}
	u, ai, hasAI, ok := s.rowsStatement(ctx, client, 1, true, "", "into")
	if !ok || !hasAI || u.selected.text == "" || !containsFoldName(u.columns, ai.name) {
		return nil, false, nil
	}
	return s.byRows(ctx, client, func() (engine.TagRows, error) { return s.insertSelectRows(ctx, client, &u, ai) })
}

// insertSelectRows inserts u's rows with InnoDB's ids and answers the statement's MySQL tag.
func (s *session) insertSelectRows(ctx context.Context, client *query.Request, u *rowUpsert, ai aiColumn) (engine.TagRows, error) {
	ids, explicit, generate, err := s.readRowIDs(ctx, client, u, ai, true, false)
	if err != nil {
		return "", err
	}
	slot := -1
	for j, col := range u.columns {
		if strings.EqualFold(col, ai.name) {
			slot = j
		}
	}
	cols := make([]string, len(u.columns))
	for j, col := range u.columns {
		cols[j] = mysqlIdent(col)
	}
	head := "INSERT INTO " + u.tableText + " (" + strings.Join(cols, ", ") + ") VALUES "
	var firstGenerated, lastID int64 // without a generated id, the OK packet carries the last row's
	for start := 0; start < len(u.rows); start += insertSelectChunk {
		var t stmtText
		t.add(head)
		for r := start; r < min(start+insertSelectChunk, len(u.rows)); r++ {
			id, err := ids.take(ctx, generate[r], explicit[r])
			if err != nil {
				return "", err
			}
			ids.done(true)
			lastID = id
			if generate[r] && firstGenerated == 0 {
				firstGenerated = id
			}
			if r > start {
				t.add(", ")
			}
			t.add("(")
			for j, v := range u.rows[r] {
				if j > 0 {
					t.add(", ")
				}
				if j == slot && generate[r] {
					v = sqlPart{text: strconv.FormatInt(id, 10)}
				}
				t.part(v)
			}
			t.add(")")
		}
		rows, err := s.sub(context.WithValue(ctx, givenIDs{}, true), client, t.b.String(), t.args...)
		if err != nil {
			return "", err
		}
		if err := rows.Close(); err != nil {
			return "", err
		}
	}
	if err := ids.finish(ctx); err != nil {
		return "", err
	}
	n := strconv.Itoa(len(u.rows))
	if firstGenerated != 0 {
		return engine.TagRows("INSERT " + strconv.FormatInt(firstGenerated, 10) + " " + n), nil
	}
	return engine.TagRows("INSERT explicit:" + strconv.FormatInt(lastID, 10) + " " + n), nil
}
