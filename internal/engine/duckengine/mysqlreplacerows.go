package duckengine

import (
	"cmp"
	"context"
	"io"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// DuckDB's INSERT OR REPLACE (MySQL's REPLACE) of several rows has INSERT OR IGNORE's fault
// with NULLs in a UNIQUE key (mysqlignorerows.go), takes one conflict target where MariaDB
// replaces every row a key of the new one finds, and keeps the first of two rows of one
// statement with the same key where MariaDB keeps the last. So a MySQL client's REPLACE ...
// VALUES or REPLACE ... SELECT runs a row at a time, as MariaDB's write_record does: the rows
// any key of the row finds are deleted (through the table's foreign keys, as MariaDB deletes
// them), then the row is inserted. It counts MySQL's affected rows (each row inserted and each
// deleted, except a row the table's only key finds with the new row's values: MariaDB
// updates that row in place, and the update that changes nothing counts nothing) and takes
// InnoDB's ids (idReservation).

// replaceByRows runs client, a MySQL client's REPLACE, a row at a time when it needs to
// (handled).
func (s *session) replaceByRows(ctx context.Context, client *query.Request) (query.Rows, bool, error) {
	u, ai, hasAI, ok := s.rowsStatement(ctx, client, 1, true, "", "into")
	if !ok {
		return nil, false, nil
	}
	return s.byRows(ctx, client, func() (engine.TagRows, error) { return s.replaceRows(ctx, client, &u, ai, hasAI) })
}

// replaceRows replaces u's rows one at a time and answers the statement's MySQL tag.
func (s *session) replaceRows(ctx context.Context, client *query.Request, u *rowUpsert, ai aiColumn, hasAI bool) (engine.TagRows, error) {
	keys := keyedColumns(ctx, s.conn, u.db, u.table)
	// inPlace: MariaDB updates the row the table's last UNIQUE key finds in place
	// (write_record's last_uniq_key), unless a foreign key refers to the table; a row that
	// finds one by an earlier key is deleted. Only a table with one key can find the new row's
	// own values that way, as every key finds such a row first.
	inPlace := len(keys) == 1 && !isReferenced(ctx, s, u.db, u.table)
	ids, explicit, generate, err := s.readRowIDs(ctx, client, u, ai, hasAI, true)
	if err != nil {
		return "", err
	}
	var affected, firstGenerated, lastID int64
	retried := false // a row with a generated id replaced one
	for r, row := range u.rows {
		id, err := ids.take(ctx, generate[r], explicit[r])
		if err != nil {
			return "", err
		}
		if retried && !generate[r] && len(keys) > 0 && len(keys[0]) == 1 && strings.EqualFold(keys[0][0], ai.name) {
			// MariaDB's write_record keeps the generated id of the row it retried, and takes a
			// later row that finds another by its explicit AUTO_INCREMENT key for one that
			// would replace a row by a generated id: it refuses it.
			if found, _, err := s.upsertTarget(ctx, client, u, row, keys[:1], ai.name); err != nil || found != nil {
				return "", cmp.Or(err, error(&query.Error{Code: sqlstate.UniqueViolation,
					Message: "Duplicate entry '" + strconv.FormatInt(id, 10) + "' for key 'PRIMARY'"}))
			}
		}
		var before string
		if inPlace {
			if before, err = s.keyRow(ctx, client, u, row, keys, ai.name); err != nil {
				return "", err
			}
		}
		deleted, err := s.replaceDelete(ctx, client, u, row, keys, ai.name)
		if err != nil {
			return "", err
		}
		retried = retried || generate[r] && deleted > 0
		ids.retried(deleted)
		if err := s.upsertInsert(ctx, client, u, row, hasAI, ai.name, generate[r], id); err != nil {
			return "", err
		}
		ids.done(true)
		if before != "" && deleted == 1 {
			after, err := s.keyRow(ctx, client, u, row, keys, ai.name)
			if err != nil {
				return "", err
			}
			if after == before {
				deleted = 0 // the row as it was: an update that changed nothing
			}
		}
		affected += 1 + deleted
		lastID = id
		if generate[r] && firstGenerated == 0 {
			firstGenerated = id
		}
	}
	if err := ids.finish(ctx); err != nil {
		return "", err
	}
	n := strconv.FormatInt(affected, 10)
	switch {
	case firstGenerated != 0:
		return engine.TagRows("INSERT " + strconv.FormatInt(firstGenerated, 10) + " " + n), nil
	case hasAI:
		return engine.TagRows("INSERT explicit:" + strconv.FormatInt(lastID, 10) + " " + n), nil
	}
	return engine.TagRows("INSERT 0 " + n), nil
}

// replaceDelete deletes the rows a key of row finds: how many.
func (s *session) replaceDelete(ctx context.Context, client *query.Request, u *rowUpsert, row []sqlPart, keys [][]string, aiName string) (int64, error) {
	conds, _ := u.keyConds(row, keys, aiName)
	if len(conds) == 0 {
		return 0, nil
	}
	var t stmtText
	t.add("DELETE FROM ", u.tableText, " WHERE ")
	for i, c := range conds {
		if i > 0 {
			t.add(" OR ")
		}
		u.keyMatch(&t, row, c)
	}
	q := *client
	q.FoundRows = false
	res, err := s.sub(ctx, &q, t.b.String(), t.args...)
	if err != nil {
		return 0, err
	}
	tag := res.Tag()
	if err := res.Close(); err != nil {
		return 0, err
	}
	base, _, _ := mysqlengine.SplitWarnings(tag)
	base, _ = mysqlengine.SplitMySQLTag(base)
	return affectedCount(base), nil
}

// keyRow is the text of the row of the table a key of row finds (its values, all of them), ""
// when it finds none.
func (s *session) keyRow(ctx context.Context, client *query.Request, u *rowUpsert, row []sqlPart, keys [][]string, aiName string) (string, error) {
	conds, _ := u.keyConds(row, keys, aiName)
	if len(conds) == 0 {
		return "", nil
	}
	var t stmtText
	t.add("SELECT * FROM ", u.tableText, " WHERE ")
	u.keyMatch(&t, row, conds[0])
	rows, err := s.sub(ctx, client, t.b.String(), t.args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var b strings.Builder
	for {
		rec, err := rows.Next(ctx)
		if err == io.EOF {
			return b.String(), nil
		}
		if err != nil {
			return "", err
		}
		for r := range int(rec.NumRows()) {
			for j := range int(rec.NumCols()) {
				c := rec.Column(j)
				if c.IsNull(r) {
					b.WriteString("\\N")
				} else {
					b.WriteString(strconv.Quote(c.ValueStr(r)))
				}
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
	}
}
