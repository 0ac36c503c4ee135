package duckengine

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A foreign key's ON UPDATE CASCADE, SET NULL or SET DEFAULT (Sequelize declares ON UPDATE
// CASCADE on every association), performed as the ON DELETE actions are (pgcascade.go), in
// steps, outside a transaction, when DuckDB refuses a PostgreSQL client's UPDATE of a
// referenced key ("still referenced by a foreign key"):
//
//  1. one transaction reads, for each key with an action, the referenced rows the UPDATE
//     reaches, their key before and after (the UPDATE's SET expressions over its WHERE's rows,
//     in a temporary table), copies the referencing rows whose key changes, and deletes them
//     (CASCADE) or sets their columns NULL or to their default; it commits;
//  2. the client's UPDATE runs again;
//  3. CASCADE's rows go back with the new key; if the UPDATE failed (a key without an action
//     references a changed row, as PostgreSQL refuses it too), every copy goes back as it was
//     and the client gets the UPDATE's error.
//
// Not atomic (between 1 and 3 another client sees the referencing rows gone or NULL); a SET
// expression that is volatile (random(), clock_timestamp()) is read once in 1 and again by
// the UPDATE. RESTRICT and NO ACTION are DuckDB's own refusal (23503), as PostgreSQL's.

// refUpdate is UPDATE [ONLY] t [[AS] a] SET c = e, ... [WHERE cond] of a PostgreSQL client, as
// DuckDB runs it, without FROM or RETURNING.
type refUpdate struct {
	refDelete                   // the table, its alias and the WHERE
	sets      map[string]string // column (lower case) -> its new value's expression
	exprs     []string          // every SET expression, in order (the map reads each: parameters)
}

// pgRefUpdate reads such an UPDATE; nil for any other statement.
func pgRefUpdate(client *query.Request, sqlText string) *refUpdate {
	if client.Protocol != query.ProtocolPostgres || !strings.EqualFold(sqltok.FirstWord(client.Analysis().Tokens), "update") {
		return nil
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.Postgres)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	if sqltok.TopLevel(toks, func(t sqltok.Token) bool {
		return isWord(t, "from") || isWord(t, "returning") || t.Text == ";"
	}) >= 0 {
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
	u := &refUpdate{sets: map[string]string{}}
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
		u.sets[strings.ToLower(pgIdent(part[0]))] = expr
		u.exprs = append(u.exprs, expr)
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

// cascade performs u's ON UPDATE actions around the UPDATE (again); first is DuckDB's
// refusal of it.
func (u *refUpdate) cascade(ctx context.Context, conn *sql.Conn, args []any, first error, again func() (query.Rows, error)) (query.Rows, error) {
	acts, err := referencingActions(ctx, conn, u.schema, u.table, "on_update")
	if err != nil || len(acts) == 0 {
		return nil, first
	}
	for _, a := range acts {
		if strings.EqualFold(a.table, u.table) || a.action != 'c' && len(a.primary) == 0 {
			return nil, u.notPerformed(a, "")
		}
	}
	var steps []step
	var after, restore, drops []string
	for i, a := range acts {
		mapName, copyName := quoteIdent(fmt.Sprintf("qf_update_map_%d", i)), quoteIdent(fmt.Sprintf("qf_cascade_%d", i))
		table := qualified(a.schema, a.table)
		drops = append(drops, "DROP TABLE IF EXISTS temp.main."+mapName, "DROP TABLE IF EXISTS temp.main."+copyName)
		// the map: each reached row's key before (o0...) and after (n0...), and every SET
		// expression (e0...) so that the statement holds all of the UPDATE's parameters
		var cols, changed, match []string
		for j, ref := range a.refs {
			before := u.alias + "." + quoteIdent(ref)
			next := before
			if e, ok := u.sets[strings.ToLower(ref)]; ok {
				next = "(" + e + ")"
			}
			cols = append(cols, fmt.Sprintf("%s AS o%d, %s AS n%d", before, j, next, j))
			changed = append(changed, fmt.Sprintf("o%d IS DISTINCT FROM n%d", j, j))
			match = append(match, fmt.Sprintf("qf_map.o%d = qf_ref.%s", j, quoteIdent(a.columns[j])))
		}
		for j, e := range u.exprs {
			cols = append(cols, fmt.Sprintf("(%s) AS e%d", e, j))
		}
		alias := ""
		if u.alias != qualified(u.schema, u.table) {
			alias = " AS " + u.alias
		}
		mapSQL := "CREATE OR REPLACE TEMPORARY TABLE " + mapName + " AS SELECT * FROM (SELECT " + strings.Join(cols, ", ") + " FROM " +
			qualified(u.schema, u.table) + alias
		if u.where != "" {
			mapSQL += " WHERE " + u.where
		}
		mapSQL += ") WHERE " + strings.Join(changed, " OR ")
		reach := "EXISTS (SELECT 1 FROM temp.main." + mapName + " AS qf_map WHERE " + strings.Join(match, " AND ") + ")"
		steps = append(steps, step{mapSQL, true},
			step{"CREATE OR REPLACE TEMPORARY TABLE " + copyName + " AS SELECT * FROM " + table + " AS qf_ref WHERE " + reach, false})
		if a.action == 'c' {
			columns, err := orderedColumns(ctx, conn, a.schema, a.table)
			if err != nil {
				return nil, err
			}
			var values, on []string
			for _, c := range columns {
				v := "qf_ref." + quoteIdent(c)
				for j, k := range a.columns {
					if strings.EqualFold(k, c) {
						v = fmt.Sprintf("qf_map.n%d", j)
					}
				}
				values = append(values, v)
			}
			for j, k := range a.columns {
				on = append(on, fmt.Sprintf("qf_map.o%d = qf_ref.%s", j, quoteIdent(k)))
			}
			steps = append(steps, step{"DELETE FROM " + table + " AS qf_ref WHERE " + reach, false})
			after = append(after, "INSERT INTO "+table+" SELECT "+strings.Join(values, ", ")+" FROM temp.main."+copyName+" AS qf_ref JOIN temp.main."+
				mapName+" AS qf_map ON "+strings.Join(on, " AND "))
			restore = append(restore, "INSERT INTO "+table+" SELECT * FROM temp.main."+copyName)
			continue
		}
		set, back := setNullSteps(a, reach, copyName)
		steps, restore = append(steps, step{set, false}), append(restore, back)
	}
	defer func() {
		for _, s := range drops {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), s)
		}
	}()
	if err := runSteps(ctx, conn, steps, args); err != nil {
		if stillReferenced(err) {
			// the rows changed here are referenced in turn: DuckDB refuses their delete (CASCADE
			// here deletes and inserts again) or the change of an indexed column, where
			// PostgreSQL changes them in place
			return nil, u.notPerformed(acts[0], "; the rows it reaches are referenced in turn")
		}
		return nil, err
	}
	rows, err := again()
	if err == nil {
		if aerr := runArgs(ctx, conn, after, nil); aerr != nil {
			return nil, &query.Error{Code: sqlstate.ForeignKeyViolation, Message: fmt.Sprintf("the rows the foreign keys' ON UPDATE CASCADE "+
				"deleted could not be put back with the new key: %v", aerr)}
		}
		return rows, nil
	}
	if rerr := runArgs(ctx, conn, restore, nil); rerr != nil {
		return nil, &query.Error{Code: sqlstate.ForeignKeyViolation, Message: fmt.Sprintf("%v; the rows the foreign keys' ON UPDATE actions changed "+
			"could not be put back: %v", err, rerr)}
	}
	return nil, err
}

// runSteps runs steps in one transaction, those that hold the UPDATE's parameters with args.
func runSteps(ctx context.Context, conn *sql.Conn, steps []step, args []any) error {
	if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return wrapErr(err)
	}
	for _, s := range steps {
		var a []any
		if s.args {
			a = args
		}
		if _, err := conn.ExecContext(ctx, s.sql, a...); err != nil {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
			return wrapErr(err)
		}
	}
	_, err := conn.ExecContext(ctx, "COMMIT")
	if err != nil {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	}
	return wrapErr(err)
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
		"(no FROM, no RETURNING, plain SET columns), one level deep, a SET NULL or SET DEFAULT on a table with a primary key", u.table, what, a.name, a.table, why)}
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
	return u.cascade(ctx, conn, args, first, func() (query.Rows, error) { return run(ctx, conn, q, p, func() {}) })
}
