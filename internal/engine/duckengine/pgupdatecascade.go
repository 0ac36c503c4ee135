package duckengine

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A foreign key's ON UPDATE CASCADE, SET NULL or SET DEFAULT (Sequelize declares ON UPDATE
// CASCADE on every association), performed as the ON DELETE actions are (pgcascade.go), with
// the client's UPDATE in one transaction (pgrefatomic.go), outside a client's transaction, when
// DuckDB refuses a PostgreSQL client's UPDATE of a referenced key ("still referenced by a
// foreign key"): for each key with an action, a temporary table maps each reached row's key
// before to after (the UPDATE's SET expressions over its WHERE's rows); the referencing rows
// whose key changes take the new key (CASCADE) or NULL / their default. A SET expression that
// is volatile (random(), clock_timestamp()) is read once for the map and again by the UPDATE.
// RESTRICT and NO ACTION are DuckDB's own refusal (23503), as PostgreSQL's.

// refUpdate is UPDATE [ONLY] t [[AS] a] SET c = e, ... [WHERE cond] of a PostgreSQL client, as
// DuckDB runs it, without FROM or RETURNING.
type refUpdate struct {
	refDelete                // the table, its alias and the WHERE
	sets      map[string]int // column (lower case) -> its new value's expression's index in exprs
	columns   []string       // the columns SET, in order
	exprs     []string       // their new values' expressions
}

// pgRefUpdate reads such an UPDATE; nil for any other statement.
func pgRefUpdate(client *query.Request, sqlText string) *refUpdate {
	toks := pgRefTokens(client, sqlText, "update", "from", "returning")
	if toks == nil {
		return nil
	}
	set := sqltok.TopLevel(toks, func(t sqltok.Token) bool { return isWord(t, "set") })
	where := len(toks)
	if set >= 0 {
		if w := sqltok.TopLevel(toks[set:], func(t sqltok.Token) bool { return isWord(t, "where") }); w >= 0 {
			where = set + w
		}
	}
	if set < 0 || set+1 >= where {
		return nil
	}
	r := sqltok.NewWalker(toks[:set])
	if !r.Word("update") {
		return nil
	}
	r.Word("only")
	name := nameParts(r)
	if len(name) == 0 || len(name) > 3 {
		return nil
	}
	u := &refUpdate{sets: map[string]int{}}
	u.table = name[len(name)-1]
	if len(name) >= 2 {
		u.schema = duckSchema(name[len(name)-2])
	}
	u.alias = qualified(u.schema, u.table)
	if r.Word("as") || r.More() {
		a := r.Peek()
		if a.Kind != sqltok.Word && a.Kind != sqltok.QuotedIdent {
			return nil
		}
		r.Next()
		if r.More() {
			return nil
		}
		u.alias = a.Text
	}
	// SET c = e, ...: plain columns only (no (a, b) = ..., no subscripts)
	for _, part := range sqltok.SplitAtCommas(toks[set+1 : where]) {
		if len(part) < 3 || part[0].Kind != sqltok.Word && part[0].Kind != sqltok.QuotedIdent || part[1].Text != "=" {
			return nil
		}
		if isWord(part[2], "default") && len(part) == 3 {
			return nil // SET c = DEFAULT: not an expression to read
		}
		last := part[len(part)-1]
		expr := sqlText[part[2].Pos : last.Pos+len(last.Text)]
		u.sets[strings.ToLower(pgIdent(part[0]))] = len(u.exprs)
		u.columns, u.exprs = append(u.columns, pgIdent(part[0])), append(u.exprs, expr)
	}
	if where < len(toks) {
		if where+1 >= len(toks) || isWord(toks[where+1], "current") {
			return nil
		}
		last := toks[len(toks)-1]
		u.where = strings.TrimSpace(sqlText[toks[where].Pos+len(toks[where].Text) : last.Pos+len(last.Text)])
	}
	return u
}

// step is a statement of the steps, with the UPDATE's parameters or without.
type step struct {
	sql  string
	args bool
}

// cascade performs u's ON UPDATE actions and the UPDATE (again, as the statement without
// parameters instead runs) in one transaction; first is DuckDB's refusal of it.
func (u *refUpdate) cascade(ctx context.Context, conn *sql.Conn, inTx bool, args []any, first error, instead func(sqlText string) (query.Rows, error)) (query.Rows, error) {
	acts, err := referencingActions(ctx, conn, u.schema, u.table, "on_update")
	if err != nil || len(acts) == 0 {
		return nil, first
	}
	for _, a := range acts {
		if strings.EqualFold(a.table, u.table) {
			return nil, u.notPerformed(a, "")
		}
	}
	tree, err := u.updateTree(ctx, conn, acts, []string{strings.ToLower(cmp.Or(u.schema, "main") + "." + u.table)}, "temp.main.qf_update_map")
	if err != nil {
		return nil, err
	}
	keys := referencedColumns(acts)
	defer conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+updateRows) //nolint:errcheck // gone with a rollback
	for _, m := range mapNames(tree) {
		defer conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+m) //nolint:errcheck // gone with a rollback
	}
	before := []step{u.chosen(keys)}
	for _, n := range tree {
		before = append(before, step{u.keyMap(n.a, keys, n.mapName), false})
	}
	rows, err := withReferencingAside(ctx, conn, inTx, u.schema, u.table, args, before, func(copyOf func(schema, table string) string) []step {
		return chainSteps(tree, copyOf)
	}, true, func() (query.Rows, error) { return instead(u.updateChosen()) })
	if err == errOrphans || err != nil && isForeignKeyViolation(err) {
		return nil, first // a key without an action references a changed row (at any level): PostgreSQL's refusal
	}
	return rows, err
}

// updateRows is deleteRows' for an UPDATE: the rows it reaches (qf_row), their referenced
// columns before (qf_k0...) and every SET expression's value (qf_e0...), read once, before
// any step, on the tables as they were. A volatile expression (random()) is read once.
const updateRows = "temp.main.qf_update_rows"

// chosen is the statement (with the UPDATE's parameters) that fills updateRows.
func (u *refUpdate) chosen(keys []string) step {
	s := u.refDelete.chosen(keys)
	var values []string
	for j, e := range u.exprs {
		values = append(values, fmt.Sprintf("(%s) AS qf_e%d", e, j))
	}
	s.sql = strings.Replace(s.sql, strings.TrimPrefix(deleteRows, "temp.main."), strings.TrimPrefix(updateRows, "temp.main."), 1)
	s.sql = strings.Replace(s.sql, " AS qf_row", " AS qf_row, "+strings.Join(values, ", "), 1)
	return s
}

// updateChosen is the UPDATE of the rows in updateRows to their values there, without
// parameters.
func (u *refUpdate) updateChosen() string {
	var sets []string
	for j, c := range u.columns {
		sets = append(sets, fmt.Sprintf("%s = qf_u.qf_e%d", quoteIdent(c), j))
	}
	return "UPDATE " + qualified(u.schema, u.table) + " AS qf_target SET " + strings.Join(sets, ", ") + " FROM " + updateRows +
		" AS qf_u WHERE qf_target.rowid = qf_u.qf_row"
}

// keyMap is the statement that creates the temporary table mapName from updateRows (keys its
// referenced columns): each row whose key a references changes, that key before (o0...) and
// after (n0...).
func (u *refUpdate) keyMap(a refAction, keys []string, mapName string) string {
	var cols, changed []string
	for j, ref := range a.refs {
		k := slices.IndexFunc(keys, func(k string) bool { return strings.EqualFold(k, ref) })
		before := fmt.Sprintf("qf_u.qf_k%d", k)
		next := before
		if e, ok := u.sets[strings.ToLower(ref)]; ok {
			next = fmt.Sprintf("qf_u.qf_e%d", e)
		}
		cols = append(cols, fmt.Sprintf("%s AS o%d, %s AS n%d", before, j, next, j))
		changed = append(changed, fmt.Sprintf("o%d IS DISTINCT FROM n%d", j, j))
	}
	return "CREATE OR REPLACE TEMPORARY TABLE " + strings.TrimPrefix(mapName, "temp.main.") + " AS SELECT * FROM (SELECT " +
		strings.Join(cols, ", ") + " FROM " + updateRows + " AS qf_u) WHERE " + strings.Join(changed, " OR ")
}

// orderedColumns are the table's columns, in order (schema: a PostgreSQL client's).
func orderedColumns(ctx context.Context, conn *sql.Conn, schema, table string) ([]string, error) {
	rows, err := conn.QueryContext(ctx, `SELECT column_name FROM duckdb_columns() WHERE database_name = current_database()
		AND schema_name = coalesce(nullif(?, ''), current_schema()) AND table_name = ? ORDER BY column_index`, schema, table)
	if err != nil {
		return nil, wrapErr(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, wrapErr(err)
		}
		out = append(out, c)
	}
	return out, wrapErr(rows.Err())
}

// notPerformed is the error of an UPDATE whose key's action DuckDB cannot perform here.
func (u *refUpdate) notPerformed(a refAction, why string) error {
	what := map[byte]string{'c': "CASCADE", 'n': "SET NULL", 'd': "SET DEFAULT"}[a.action]
	return &query.Error{Code: sqlstate.FeatureNotSupported, Message: fmt.Sprintf(`update on table "%s" needs ON UPDATE %s of foreign key "%s" on table "%s", `+
		"which DuckDB does not perform here%s: it performs it only outside a transaction, for an UPDATE of one table "+
		"(no FROM, no RETURNING, plain SET columns)", u.table, what, a.name, a.table, why)}
}

// retryUpdate is retryDelete's for an UPDATE DuckDB refused (first): the declared ON UPDATE
// actions performed in steps outside a transaction; in one, the error naming the action.
func (e *Engine) retryUpdate(ctx context.Context, conn *sql.Conn, inTx bool, client, q *query.Request, p *prepared, first error) (query.Rows, error) {
	u := pgRefUpdate(client, p.sqlText)
	if u == nil {
		return nil, first
	}
	if conn == nil || inTx {
		c, err := e.conn(ctx)
		if err != nil {
			return nil, first
		}
		defer release(c, false)
		if inTx {
			acts, err := referencingActions(ctx, c, u.schema, u.table, "on_update")
			if err != nil || len(acts) == 0 {
				return nil, first
			}
			return nil, u.notPerformed(acts[0], " (in a transaction: DuckDB cannot change the referencing rows and the referenced one in the same transaction)")
		}
		conn = c
	}
	args, err := coerceArgs(p.params, q.Args, q.Protocol == query.ProtocolPostgres)
	if err != nil {
		return nil, first
	}
	return u.cascade(ctx, conn, false, args, first, func(sqlText string) (query.Rows, error) { return runInstead(ctx, conn, q, p, sqlText) })
}
