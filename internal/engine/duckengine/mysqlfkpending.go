package duckengine

import (
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A pending key held with the checks on. SET FOREIGN_KEY_CHECKS=1 over rows that break a key,
// or over a key to a table that does not exist, answers OK and leaves the key pending
// (mysqlfkchecks.go): DuckDB cannot declare it. MariaDB has the key all along and, with the
// checks on, refuses every row written after that breaks it: a child's row naming no parent
// (1452, a non-NULL key to a missing table too) and a parent's row deleted or changed under a
// child (1451), while the rows already broken are kept, read, updated and deleted. So, while
// a MySQL client's session has the checks on and keys pending, a statement writing rows that
// names a pending key's table or the table it references runs with the key's broken rows
// counted before and after, by their key values (in a transaction of its own outside the
// client's, which a refusal rolls back): a key value broken more often after than before is
// the statement's refusal. Inside a client's transaction DuckDB cannot undo one statement, so
// the refusal fails the transaction (as any error there does on DuckDB).

// pendingHeld is one pending key a statement's write may break, with its rows broken before.
type pendingHeld struct {
	table, ref    string
	cols, refCols []string
	before        map[string]int
}

// holdPendingKeys runs q, a MySQL client's write with the session's checks on and keys
// pending, refusing it when it breaks a pending key.
func (s *session) holdPendingKeys(ctx context.Context, q *query.Request) (query.Rows, error) {
	s.holdingKeys = true
	defer func() { s.holdingKeys = false }()
	pending, err := pendingKeys(ctx, s.conn)
	if err != nil {
		s.fail()
		return nil, err
	}
	s.fkPending = len(pending) > 0
	named := namedWords(q.SQL)
	var held []pendingHeld
	for _, p := range pending {
		if !named[strings.ToLower(p[0])] && !named[strings.ToLower(p[1])] {
			continue
		}
		if own, err := tableExists(ctx, s.conn, p[0]); err != nil || !own {
			if err != nil {
				s.fail()
				return nil, err
			}
			continue
		}
		h, ok := readHeld(p)
		if !ok {
			continue
		}
		if h.before, err = brokenKeyValues(ctx, s.conn, h); err != nil {
			s.fail()
			return nil, err
		}
		held = append(held, h)
	}
	if len(held) == 0 {
		return s.Execute(ctx, q)
	}
	own := s.status == 'I'
	if own {
		if err := s.exec(ctx, "BEGIN TRANSACTION"); err != nil {
			return nil, err
		}
		s.status = 'T'
	}
	rows, err := s.Execute(ctx, q)
	if err == nil && s.status == 'T' {
		if err = s.checkHeld(ctx, q, held); err != nil {
			rows = nil
			s.fail()
		}
	}
	if !own {
		return rows, err
	}
	failed := s.status == 'E'
	s.status, s.written, s.deferral = 'I', nil, deferral{}
	defer s.endTx()
	if !failed {
		if cerr := s.exec(ctx, "COMMIT"); cerr != nil {
			_ = s.exec(context.Background(), "ROLLBACK") // DuckDB has rolled back; make sure
			return nil, cerr
		}
		return rows, err
	}
	if rerr := s.exec(ctx, "ROLLBACK"); rerr != nil {
		s.clean = false
	}
	return nil, err
}

// checkHeld is the refusal of q when it left a held key's value broken more often than before.
func (s *session) checkHeld(ctx context.Context, q *query.Request, held []pendingHeld) error {
	named := namedWords(q.SQL)
	parentSide := sqltok.FirstKeywordIs(q.SQL, sqltok.MySQL, "delete", "truncate")
	for _, h := range held {
		after, err := brokenKeyValues(ctx, s.conn, h)
		if err != nil {
			return err
		}
		for k, n := range after {
			if n <= h.before[k] {
				continue
			}
			key := heldKeyName(ctx, s.conn, h) + "FOREIGN KEY (" + mysqlIdents(h.cols) + ") REFERENCES " + mysqlIdent(h.ref) + " (" + mysqlIdents(h.refCols) + ")"
			if parentSide || !named[strings.ToLower(h.table)] {
				return &query.Error{Code: "23000", Message: "Cannot delete or update a parent row: a foreign key constraint fails (" + key + ") (MySQL error 1451)"}
			}
			return &query.Error{Code: "23000", Message: "Cannot add or update a child row: a foreign key constraint fails (" + key + ") (MySQL error 1452)"}
		}
	}
	return nil
}

// heldKeyName is `db`.`table`, CONSTRAINT `name` as MariaDB's refusal names h (the name
// recorded by foreignKeyNames), then a space; without the name when none is recorded.
func heldKeyName(ctx context.Context, conn *sql.Conn, h pendingHeld) string {
	var db string
	var name sql.NullString
	err := conn.QueryRowContext(ctx, "SELECT current_schema(), (SELECT any_value(name) FROM "+declaredSchema+
		".constraints WHERE schema_name = current_schema() AND table_name = lower(?) AND kind = 'f' AND columns = "+
		declaredConstraint{columns: h.cols}.columnList()+")", h.table).Scan(&db, &name)
	out := mysqlIdent(h.table) + ", "
	if err == nil {
		out = mysqlIdent(db) + "." + out
		if name.Valid {
			out += "CONSTRAINT " + mysqlIdent(name.String) + " "
		}
	}
	return out
}

// mysqlIdents is names quoted as MariaDB names them, comma-separated.
func mysqlIdents(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = mysqlIdent(n)
	}
	return strings.Join(q, ", ")
}

// namedWords are the words and quoted names of a MySQL statement, lower-cased: the tables it
// may name.
func namedWords(sqlText string) map[string]bool {
	named := map[string]bool{}
	for _, t := range sqltok.SignificantTokens(sqlText, sqltok.MySQL) {
		if t.Kind == sqltok.Word || t.Kind == sqltok.QuotedIdent {
			named[strings.ToLower(identText(t))] = true
		}
	}
	return named
}

// readHeld reads a pending key (its table, referenced table and DuckDB's clause); false when
// the clause is not FOREIGN KEY (cols) REFERENCES t (cols).
func readHeld(p [3]string) (pendingHeld, bool) {
	cols, refCols, ref, ok := keyClauseParts(p[2])
	if !ok {
		return pendingHeld{}, false
	}
	if ref == "" {
		ref = p[1]
	}
	return pendingHeld{table: p[0], ref: ref, cols: cols, refCols: refCols}, true
}

// keyClauseParts reads DuckDB's FOREIGN KEY (cols) REFERENCES [s.]t (cols): its columns, the
// referenced columns and table.
func keyClauseParts(clause string) (cols, refCols []string, ref string, ok bool) {
	toks := sqltok.SignificantTokens(clause, sqltok.Postgres)
	at := slices.IndexFunc(toks, func(t sqltok.Token) bool { return t.IsWord("references") })
	if at < 0 || at+1 >= len(toks) {
		return nil, nil, "", false
	}
	r := at + 1
	if r+2 < len(toks) && toks[r+1].Text == "." {
		r += 2
	}
	cols, refCols = keyColumnsAs(toks[:at], pgIdent), keyColumnsAs(toks[r+1:], pgIdent)
	return cols, refCols, pgIdent(toks[r]), len(cols) > 0 && len(cols) == len(refCols)
}

// brokenKeyValues counts h's table's rows that break it by their key values: all of the key's
// columns set and no row of the referenced table with them (every such row when that table
// does not exist).
func brokenKeyValues(ctx context.Context, conn *sql.Conn, h pendingHeld) (map[string]int, error) {
	refExists, err := tableExists(ctx, conn, h.ref)
	if err != nil {
		return nil, err
	}
	var set, match, vals []string
	for i, c := range h.cols {
		set = append(set, "c."+quoteIdent(c)+" IS NOT NULL")
		match = append(match, "r."+quoteIdent(h.refCols[i])+" = c."+quoteIdent(c))
		vals = append(vals, "c."+quoteIdent(c)+"::VARCHAR")
	}
	where := strings.Join(set, " AND ")
	if refExists {
		where += " AND NOT EXISTS (SELECT 1 FROM " + quoteIdent(h.ref) + " r WHERE " + strings.Join(match, " AND ") + ")"
	}
	rows, err := conn.QueryContext(ctx, "SELECT concat_ws(chr(31), "+strings.Join(vals, ", ")+") AS k, count(*) FROM "+
		quoteIdent(h.table)+" c WHERE "+where+" GROUP BY k")
	if err != nil {
		return nil, wrapErr(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			return nil, wrapErr(err)
		}
		out[k] = n
	}
	return out, wrapErr(rows.Err())
}

// anyPending reports whether the connection keeps pending keys.
func anyPending(ctx context.Context, conn *sql.Conn) bool {
	var n int
	err := conn.QueryRowContext(ctx, "SELECT len(coalesce(getvariable('qf_fk_pending'), []::VARCHAR[]))").Scan(&n)
	return err == nil && n > 0
}
