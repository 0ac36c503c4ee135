package duckengine

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A refused INSERT spends the AUTO_INCREMENT ids InnoDB (innodb_autoinc_lock_mode 1) spends,
// not DuckDB's: InnoDB reserves a multi-row INSERT's ids at the first row it writes that needs
// one, so a row refused before it is written (NOT NULL, too long, CHECK) spends nothing at the
// first row and the reservation of the rows before it at a later one, and a row refused at its
// write (a duplicate key, a missing parent) spends its own generated id too (an explicit one
// moves the counter only once written). DuckDB took every row's id
// first (the column's DEFAULT, or the ids computed before the statement ran), so after a
// refusal outside a transaction the rows are tried one at a time in a transaction rolled back,
// to find the row refused and why, and the counter is set to where InnoDB's stands: forward
// by taking values, back by lowering the offset, never below an id the table holds. The cost
// is the refused statement's only.

// aiRefusal is what the refusal of a statement of plain rows needs.
type aiRefusal struct {
	text     string // the statement as it ran, without its RETURNING
	args     int    // its parameters
	start    int64  // the counter before it
	explicit []int64
	generate []bool
}

// afterRefusal sets the counter after the statement's refusal err on conn (autocommit).
func (ai *aiInsert) afterRefusal(ctx context.Context, conn *sql.Conn, err error) {
	r := ai.refused
	var qe *query.Error
	if r == nil || r.args > 0 || !errors.As(wrapErr(err), &qe) || !strings.HasPrefix(qe.Code, "22") && !strings.HasPrefix(qe.Code, "23") {
		return // not a row refused (a statement's parameters are bound to the whole of it)
	}
	toks := sqltok.SignificantTokens(r.text, sqltok.Generic)
	v, ok := readValues(toks, ai.col)
	if !ok || len(v.rows) != len(r.generate) || v.table[1] <= v.table[0] {
		return
	}
	prefix := r.text[:v.openRows[0]]
	at, spent := -1, false
	if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return
	}
	for i := range v.rows {
		_, err := conn.ExecContext(ctx, prefix+r.text[v.openRows[i]:v.closeRows[i].Pos+1])
		if err != nil {
			var re *query.Error
			at = i
			spent = errors.As(wrapErr(err), &re) && (re.Code == sqlstate.UniqueViolation || re.Code == sqlstate.ForeignKeyViolation)
			break
		}
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil || at < 0 {
		return
	}
	if spent && r.generate[at] {
		at++ // its id was taken at its write; an explicit one moves the counter only once written
	}
	_, target, _ := assignIDs(r.start, r.explicit, r.generate, at, func(high, _ int64) (int64, error) { return high, nil })
	var largest sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT max("+quoteIdent(ai.col.name)+") FROM "+r.text[v.table[0]:v.table[1]]).Scan(&largest); err != nil {
		return
	}
	if largest.Valid {
		target = max(target, largest.Int64+1)
	}
	c, err := readCounter(ctx, conn, ai.col.seq)
	if err != nil {
		return
	}
	if c.value() <= target {
		_ = moveTo(ctx, conn, ai.col.seq, &c, target)
		return
	}
	_, _ = conn.ExecContext(ctx, "COMMENT ON SEQUENCE "+ai.col.seq+" IS "+sqltok.StandardString(aiOffsetComment+strconv.FormatInt(c.offset-(c.value()-target), 10)))
}
