package pgengine

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// MariaDB's OK packet after an INSERT carries the first AUTO_INCREMENT value it generated:
// PyMySQL's and mysqlclient's cursor.lastrowid, mysql2's insertId, go-sql-driver's
// LastInsertId, which Django's MySQL backend and SQLAlchemy set a new row's key from. PostgreSQL's
// command tag has none. A MySQL client's INSERT of one table (with or without its column list)
// of VALUES rows into a table with a generated column (serial, or an identity), without
// RETURNING of its own or ON CONFLICT DO UPDATE (whose updated rows would be returned too),
// returns the generated column, and the client sees the tag the frontend reads (mysqlwire's
// insertID): "INSERT <first generated id> <rows>", or "INSERT explicit:<last id given> <rows>"
// when every row gave its own id. As on MariaDB, a row whose value of the column is NULL or 0
// (unless sql_mode has NO_AUTO_VALUE_ON_ZERO), written or bound to a parameter, takes the
// next id (PostgreSQL stored 0 and refused NULL with 23502); and an id given at or above the
// column's counter moves the counter past it (PostgreSQL's sequence stayed where it was, so
// the next generated id collided with it): before the statement for the ids given ahead of
// its first generated row, after it for the rest.

// generatedColumn is a table's generated column: its name, its place among the table's columns
// (0 the first) and its sequence as pg_get_serial_sequence names it ("" when it has none).
type generatedColumn struct {
	name string
	pos  int
	seq  string
}

// aiPlace is how one VALUES row gives the generated column.
type aiPlace struct {
	generated bool  // the row takes the next id
	given     int64 // an integer literal given as the id (known: true)
	known     bool
}

// insertPlan is what reading the answer of an INSERT mysqlInsertReturning wrote needs.
type insertPlan struct {
	rows []aiPlace // each VALUES row's place, in order
	seq  string    // the column's sequence, "" for none
	// ahead is the largest id given before the first generated row (0: none), raised to
	// before the statement runs, when the table's column at place (0 the first) is still the
	// generated column col.
	ahead      int64
	table, col string
	place      int
}

// mysqlInsertReturning is sqlText returning lookup's table's generated column, its rows' NULL
// and 0 ids written as the sequence's next value, and the plan its answer is read with, when
// sqlText is such an INSERT (args: the statement's parameters; sqlMode the client's); sqlText
// itself and nil otherwise.
func mysqlInsertReturning(sqlText string, lookup notNullLookup, args []any, sqlMode string) (string, *insertPlan) {
	if lookup.generated == nil || firstWord(sqlText) != "insert" {
		return sqlText, nil
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.Postgres)
	table, _, cols, values, ok := boolLiteralsTable(toks, "insert", lookup.schema)
	if !ok || values == 0 {
		return sqlText, nil
	}
	for _, t := range toks[values:] {
		if t.IsWord("returning", "update", "select") {
			return sqlText, nil
		}
	}
	gen := lookup.generated(table)
	if gen.name == "" {
		return sqlText, nil
	}
	place := gen.pos
	if cols != nil {
		place = -1
		for i, c := range cols {
			if c == gen.name {
				place = i
			}
		}
	}
	plan := &insertPlan{seq: gen.seq, table: table, col: gen.name, place: gen.pos}
	next := "DEFAULT"
	if gen.seq != "" {
		next = "nextval('" + strings.ReplaceAll(gen.seq, "'", "''") + "'::pg_catalog.regclass)"
	}
	zeroGenerates := !strings.Contains(strings.ToUpper(sqlMode), "NO_AUTO_VALUE_ON_ZERO")
	edits := map[int]string{} // token index -> its text
	if place < 0 {
		eachValuesRow(toks, values, func(int) { plan.rows = append(plan.rows, aiPlace{generated: true, known: true}) })
	} else {
		rowAt := map[int]int{} // a row's first token -> its index in plan.rows
		eachValuesRow(toks, values, func(open int) { rowAt[open] = len(plan.rows); plan.rows = append(plan.rows, aiPlace{}) })
		valueRows(toks, values, func(item, at int) {
			if item != place {
				return
			}
			p := &plan.rows[rowAt[rowOpen(toks, at)]]
			t := toks[at]
			switch {
			case t.IsWord("null"), t.IsWord("default"):
				p.generated, p.known = true, true
				if t.IsWord("null") {
					edits[at] = "DEFAULT"
				}
			case integerAt(toks, at):
				v, err := strconv.ParseInt(t.Text, 10, 64)
				if err != nil {
					return
				}
				if v == 0 && zeroGenerates {
					p.generated, p.known = true, true
					edits[at] = "DEFAULT"
					return
				}
				p.given, p.known = v, true
			case t.Kind == sqltok.Param:
				n, err := strconv.Atoi(strings.TrimPrefix(t.Text, "$"))
				if err != nil || n < 1 || n > len(args) {
					return
				}
				a := args[n-1]
				if a == nil || zeroGenerates && fmt.Sprint(a) == "0" {
					// the parameter stays in the text (its place is numbered); its value
					// is the next id
					p.generated, p.known = true, true
					edits[at] = "COALESCE(NULLIF(" + t.Text + "::pg_catalog.int8, 0), " + next + ")"
				} else if v, err := strconv.ParseInt(fmt.Sprint(a), 10, 64); err == nil {
					p.given, p.known = v, true
				}
			}
		})
	}
	if len(plan.rows) == 0 {
		return sqlText, nil
	}
	for _, p := range plan.rows {
		if p.generated {
			break
		}
		plan.ahead = max(plan.ahead, p.given)
	}
	end := len(sqlText)
	if last := toks[len(toks)-1]; last.Text == ";" {
		end = last.Pos
	}
	var b strings.Builder
	at := writeEdited(&b, sqlText, toks, edits)
	b.WriteString(strings.TrimRight(sqlText[at:end], " \t\r\n"))
	b.WriteString(" RETURNING ")
	b.WriteString(quoteIdent(gen.name))
	return b.String(), plan
}

// eachValuesRow calls f with the index of each VALUES row's "(" after toks[values].
func eachValuesRow(toks []sqltok.Token, values int, f func(open int)) {
	i := values + 1
	for i < len(toks) && toks[i].Text == "(" {
		f(i)
		depth := 0
		for ; i < len(toks); i++ {
			depth += sqltok.ParenStep(toks[i])
			if depth == 0 {
				break
			}
		}
		if i+1 >= len(toks) || toks[i+1].Text != "," {
			return
		}
		i += 2
	}
}

// rowOpen is the index of the "(" of the VALUES row whose top-level item is toks[at].
func rowOpen(toks []sqltok.Token, at int) int {
	depth := 0
	for i := at - 1; i >= 0; i-- {
		depth -= sqltok.ParenStep(toks[i])
		if depth < 0 {
			return i
		}
	}
	return -1
}

// raiseSQL moves sequence $1 (its next value) past id $2 when it is not already.
func raiseSQL(seq string) string {
	return `SELECT pg_catalog.setval($1::pg_catalog.regclass, $2) FROM ` + seq + ` WHERE $2 > last_value - (NOT is_called)::int`
}

// aheadSQL is raiseSQL when table $3's column at place $4 is still $5: the ids were read at a
// place the cache knew, which a table changed under it no longer has (the statement, refused,
// is written again; the ids of another column must not move the sequence).
func aheadSQL(seq string) string {
	return raiseSQL(seq) + ` AND (SELECT attname FROM pg_catalog.pg_attribute WHERE attrelid = pg_catalog.to_regclass($3) AND attnum > 0 ` +
		`AND NOT attisdropped ORDER BY attnum OFFSET $4 LIMIT 1) = $5`
}

// raiseAhead moves plan's sequence past the ids given ahead of its first generated row.
func (plan *insertPlan) raiseAhead(ctx context.Context, db querier) {
	if plan.seq == "" || plan.ahead <= 0 {
		return
	}
	rows, err := db.Query(ctx, aheadSQL(plan.seq), pgx.QueryExecModeExec, plan.seq, plan.ahead, plan.table, plan.place, plan.col)
	if err == nil {
		rows.Close()
	}
}

// raise moves plan's sequence past id on db: an id given at or above it, as MariaDB's counter
// moves. A failure leaves the counter (the INSERT's own answer stands).
func (plan *insertPlan) raise(ctx context.Context, db querier, id int64) {
	if plan.seq == "" || id <= 0 {
		return
	}
	rows, err := db.Query(ctx, raiseSQL(plan.seq), pgx.QueryExecModeExec, plan.seq, id)
	if err == nil {
		rows.Close()
	}
}

// readIDs reads the ids an INSERT mysqlInsertReturning wrote returned, and PostgreSQL's
// refusal of it.
func readIDs(rows pgx.Rows) ([]int64, error) {
	var ids []int64
	for rows.Next() {
		var id int64
		if v, err := rows.Values(); err == nil && len(v) == 1 {
			switch x := v[0].(type) {
			case int64:
				id = x
			case int32:
				id = int64(x)
			case int16:
				id = int64(x)
			}
		}
		ids = append(ids, id)
	}
	rows.Close()
	return ids, rows.Err()
}

// insertIDTag is the tag of an INSERT mysqlInsertReturning wrote as the frontend reads it, of
// the ids it returned: "INSERT <first generated id> <rows>", "INSERT explicit:<last id given>
// <rows>" when none was generated ("INSERT 0 0" when no row went in: INSERT IGNORE's
// conflict). An id given moves the sequence past it.
func insertIDTag(ctx context.Context, db querier, ids []int64, plan *insertPlan) query.Rows {
	n := strconv.Itoa(len(ids))
	if len(ids) == 0 {
		return engine.TagRows("INSERT 0 0")
	}
	first, given := -1, false
	for i, p := range plan.rows {
		if p.generated && first < 0 {
			first = i
		}
		given = given || !p.generated
	}
	switch {
	case first < 0:
		plan.raise(ctx, db, slices.Max(ids))
		return engine.TagRows("INSERT explicit:" + strconv.FormatInt(ids[len(ids)-1], 10) + " " + n)
	case len(ids) != len(plan.rows):
		first = 0 // rows left out (INSERT IGNORE's conflicts): the rows' places are not known
	}
	if given {
		// InnoDB (innodb_autoinc_lock_mode 1) reserves as many ids as an INSERT that gives
		// some has rows at its first generated one, and loses those it does not use
		plan.raise(ctx, db, max(slices.Max(ids), ids[first]+int64(len(plan.rows))-1))
	}
	return engine.TagRows("INSERT " + strconv.FormatInt(ids[first], 10) + " " + n)
}

// mysqlLastInsertID is sqlText with each LAST_INSERT_ID() call written as id, the client
// session's value (the first id its last INSERT that generated one generated; query.Request's
// LastInsertID): PostgreSQL has no such function (1305 before). LAST_INSERT_ID(expr), which
// sets the value, is left.
func mysqlLastInsertID(sqlText string, id uint64) string {
	if !sqltok.ContainsFold(sqlText, "last_insert_id") {
		return sqlText
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.Postgres)
	var b strings.Builder
	at := 0
	for i := 0; i+2 < len(toks); i++ {
		if !toks[i].IsWord("last_insert_id") || toks[i+1].Text != "(" || toks[i+2].Text != ")" || i > 0 && toks[i-1].Text == "." {
			continue
		}
		b.WriteString(sqlText[at:toks[i].Pos])
		b.WriteString("CAST(" + strconv.FormatUint(id, 10) + " AS pg_catalog.int8)")
		at = toks[i+2].Pos + 1
	}
	if at == 0 {
		return sqlText
	}
	b.WriteString(sqlText[at:])
	return b.String()
}
