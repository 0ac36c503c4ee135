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

// A foreign key's ON DELETE CASCADE, SET NULL or SET DEFAULT (kept in the declared catalog,
// pgdeclared.go; DuckDB's own key is NO ACTION). A PostgreSQL client's DELETE that DuckDB
// refuses because a key with an action references a row it deletes is performed, outside a
// transaction, with the action, in one transaction (pgrefatomic.go): the referencing rows the
// DELETE's WHERE reaches deleted, or their columns set NULL / to their default. In a client's
// transaction the actions run from the start (pgrefintx.go); a statement that reached DuckDB's
// refusal there (its transaction failed with it) tells the client (0A000) which key's action
// DuckDB does not perform, not a foreign key violation PostgreSQL would not have raised. The
// actions chain: the rows a CASCADE deletes have the actions of the keys referencing them
// performed in turn (A <- B <- C, to maxActionDepth levels), deepest first, each on the rows
// its parent's step is about to delete.

// refDelete is DELETE FROM [ONLY] t [[AS] a] [WHERE cond] of a PostgreSQL client, as DuckDB runs
// it (p.sqlText), without USING or RETURNING.
type refDelete struct {
	schema, table string
	alias         string      // the name the WHERE knows the table by
	where         string      // cond, or "" for none
	reached       []refAction // after cascade: every action it performed, at any level
}

// pgRefDelete reads such a DELETE; nil for any other statement.
func pgRefDelete(client *query.Request, sqlText string) *refDelete {
	toks := pgRefTokens(client, sqlText, "delete", "using", "returning")
	if toks == nil {
		return nil
	}
	r := sqltok.NewWalker(toks)
	if !r.Word("delete") || !r.Word("from") {
		return nil
	}
	r.Word("only")
	name := nameParts(r)
	if len(name) == 0 || len(name) > 3 {
		return nil
	}
	d := &refDelete{table: name[len(name)-1]}
	if len(name) >= 2 {
		d.schema = duckSchema(name[len(name)-2])
	}
	d.alias = qualified(d.schema, d.table)
	if r.Word("as") || r.More() && !isWord(r.Peek(), "where") {
		a := r.Peek()
		if a.Kind != sqltok.Word && a.Kind != sqltok.QuotedIdent {
			return nil
		}
		r.Next()
		d.alias = a.Text
	}
	if !r.More() {
		return d
	}
	w := r.Peek()
	if !r.Word("where") || !r.More() || isWord(r.Peek(), "current") { // WHERE CURRENT OF cursor
		return nil
	}
	d.where = strings.TrimSpace(sqlText[w.Pos+len(w.Text) : toks[len(toks)-1].Pos+len(toks[len(toks)-1].Text)])
	return d
}

// stillReferenced reports whether err is DuckDB's refusal to delete a row a key references.
func stillReferenced(err error) bool {
	qe, ok := err.(*query.Error)
	return ok && qe.Code == sqlstate.ForeignKeyViolation && strings.Contains(qe.Message, "still referenced by a foreign key")
}

// refAction is a foreign key to the deleted table with a declared ON DELETE action.
type refAction struct {
	schema, table string   // the referencing table
	columns, refs []string // its key's columns, and those they reference
	action        byte     // 'c', 'n' or 'd'
	name          string   // the key's name
}

// actions reads the keys with an ON DELETE action that reference d's table.
func (d *refDelete) actions(ctx context.Context, conn *sql.Conn) (acts []refAction, err error) {
	return referencingActions(ctx, conn, d.schema, d.table, "on_delete")
}

// referencingActions reads the keys with an action (event: on_delete or on_update) that
// reference table schema.table.
func referencingActions(ctx context.Context, conn *sql.Conn, schema, table, event string) (acts []refAction, err error) {
	rows, err := conn.QueryContext(ctx, `SELECT k.schema_name, k.table_name, CAST(k.constraint_column_names AS VARCHAR[]), CAST(k.referenced_column_names AS VARCHAR[]),
			coalesce((SELECT any_value(c.`+event+`) FROM `+declaredSchema+`.constraints c WHERE c.schema_name = k.schema_name
				AND c.table_name = lower(k.table_name) AND c.kind = 'f' AND c.columns = list_transform(k.constraint_column_names, x -> lower(x))), 'a'),
			coalesce((SELECT any_value(c.name) FROM `+declaredSchema+`.constraints c WHERE c.schema_name = k.schema_name
				AND c.table_name = lower(k.table_name) AND c.kind = 'f' AND c.columns = list_transform(k.constraint_column_names, x -> lower(x))), '')
		FROM duckdb_constraints() k WHERE k.constraint_type = 'FOREIGN KEY' AND k.database_name = current_database()
		AND k.schema_name = coalesce(nullif(?, ''), current_schema()) AND lower(k.referenced_table) = lower(?)`, schema, table)
	if err != nil {
		return nil, wrapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var a refAction
		var cols, refs []any
		var action string
		if err := rows.Scan(&a.schema, &a.table, &cols, &refs, &action, &a.name); err != nil {
			return nil, wrapErr(err)
		}
		for _, c := range cols {
			a.columns = append(a.columns, fmt.Sprint(c))
		}
		for _, c := range refs {
			a.refs = append(a.refs, fmt.Sprint(c))
		}
		switch action {
		case "c", "n", "d":
			a.action = action[0]
			acts = append(acts, a)
		}
	}
	return acts, wrapErr(rows.Err())
}

// deleteRows is the temporary table of the rows a DELETE reaches (their rowid, qf_row, and
// the columns keys reference, qf_k0...), read before any step: PostgreSQL evaluates the
// WHERE once, on the tables as they were, and the actions hide or drop the referencing
// tables a WHERE may read (NOT EXISTS (SELECT 1 FROM child ...)).
const deleteRows = "temp.main.qf_delete_rows"

// referencedColumns are the referenced columns acts' keys name, each once, in order.
func referencedColumns(acts []refAction) []string {
	var out []string
	for _, a := range acts {
		for _, ref := range a.refs {
			if !slices.ContainsFunc(out, func(c string) bool { return strings.EqualFold(c, ref) }) {
				out = append(out, ref)
			}
		}
	}
	return out
}

// chosen is the statement (with the DELETE's parameters) that fills deleteRows.
func (d *refDelete) chosen(keys []string) step {
	cols := []string{d.alias + ".rowid AS qf_row"}
	for i, k := range keys {
		cols = append(cols, fmt.Sprintf("%s.%s AS qf_k%d", d.alias, quoteIdent(k), i))
	}
	alias, where := "", ""
	if d.alias != qualified(d.schema, d.table) {
		alias = " AS " + d.alias
	}
	if d.where != "" {
		where = " WHERE " + d.where
	}
	return step{"CREATE OR REPLACE TEMPORARY TABLE " + strings.TrimPrefix(deleteRows, "temp.main.") + " AS SELECT " + strings.Join(cols, ", ") +
		" FROM " + qualified(d.schema, d.table) + alias + where, true}
}

// reach is the condition, over the referencing table named alias, of the rows the DELETE's
// rows (deleteRows, keys its columns) are referenced by.
func (d *refDelete) reach(a refAction, keys []string, alias string) string {
	var on []string
	for i, c := range a.columns {
		k := slices.IndexFunc(keys, func(k string) bool { return strings.EqualFold(k, a.refs[i]) })
		on = append(on, fmt.Sprintf("qf_del.qf_k%d = %s.%s", k, alias, quoteIdent(c)))
	}
	return "EXISTS (SELECT 1 FROM " + deleteRows + " AS qf_del WHERE " + strings.Join(on, " AND ") + ")"
}

// maxActionDepth is how many levels of actions a DELETE's chain performs (PostgreSQL's has no
// bound; a deeper one is refused, 0A000).
const maxActionDepth = 8

// actionNode is a key's action a DELETE performs: set, a SET NULL / DEFAULT action's SET
// list; next, when it is a CASCADE, the actions of the keys referencing the rows it deletes.
type actionNode struct {
	a    refAction
	set  string
	next []actionNode
}

// actionTree reads acts' chain: for each CASCADE, the actions of the keys referencing its
// table, in turn. path is the tables above (a key back to one of them, or a chain deeper than
// maxActionDepth, is refused).
func (d *refDelete) actionTree(ctx context.Context, conn *sql.Conn, acts []refAction, path []string) ([]actionNode, error) {
	var nodes []actionNode
	for _, a := range acts {
		key := strings.ToLower(cmp.Or(a.schema, "main") + "." + a.table)
		if slices.Contains(path, key) {
			return nil, d.notPerformed(a, "; its rows are referenced by a key of a table above it")
		}
		if len(path) >= maxActionDepth {
			return nil, d.notPerformed(a, fmt.Sprintf("; the actions chain deeper than %d tables", maxActionDepth))
		}
		n := actionNode{a: a}
		var err error
		if a.action != 'c' {
			n.set, err = actionSet(ctx, conn, a)
		} else if next, err2 := referencingActions(ctx, conn, a.schema, a.table, "on_delete"); err2 != nil {
			err = err2
		} else {
			n.next, err = d.actionTree(ctx, conn, next, append(slices.Clip(path), key))
		}
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
		d.reached = append(d.reached, a)
	}
	return nodes, nil
}

// actionSteps are n's steps on the copies (copyOf), the rows it acts on those cond (over an
// alias) reaches: a CASCADE's children's first, on the rows of its table it is about to
// delete, then its own.
func actionSteps(n actionNode, cond func(alias string) string, copyOf func(schema, table string) string, depth int) []step {
	var steps []step
	if n.a.action == 'c' {
		parent := fmt.Sprintf("qf_p%d", depth)
		for _, c := range n.next {
			child := func(alias string) string {
				on := []string{cond(parent)}
				for i, col := range c.a.columns {
					on = append(on, parent+"."+quoteIdent(c.a.refs[i])+" = "+alias+"."+quoteIdent(col))
				}
				return "EXISTS (SELECT 1 FROM " + copyOf(n.a.schema, n.a.table) + " AS " + parent + " WHERE " + strings.Join(on, " AND ") + ")"
			}
			steps = append(steps, actionSteps(c, child, copyOf, depth+1)...)
		}
		return append(steps, step{"DELETE FROM " + copyOf(n.a.schema, n.a.table) + " AS qf_ref WHERE " + cond("qf_ref"), false})
	}
	return append(steps, step{"UPDATE " + copyOf(n.a.schema, n.a.table) + " AS qf_ref SET " + n.set + " WHERE " + cond("qf_ref"), false})
}

// deleteChosen is the DELETE of the rows in deleteRows, without parameters.
func (d *refDelete) deleteChosen() string {
	return "DELETE FROM " + qualified(d.schema, d.table) + " WHERE rowid IN (SELECT qf_row FROM " + deleteRows + ")"
}

// cascade performs d's actions and the DELETE (again, as the statement without parameters
// instead runs) in one transaction. first is DuckDB's refusal of the DELETE.
func (d *refDelete) cascade(ctx context.Context, conn *sql.Conn, inTx bool, args []any, first error, instead func(sqlText string) (query.Rows, error)) (query.Rows, error) {
	acts, err := d.actions(ctx, conn)
	if err != nil || len(acts) == 0 {
		return nil, first
	}
	for _, a := range acts {
		if strings.EqualFold(a.table, d.table) {
			return nil, d.notPerformed(a, "")
		}
	}
	d.reached = nil
	tree, err := d.actionTree(ctx, conn, acts, []string{strings.ToLower(cmp.Or(d.schema, "main") + "." + d.table)})
	if err != nil {
		return nil, err
	}
	rows, err := d.aside(ctx, conn, inTx, args, acts, tree, instead)
	if err == errOrphans || err != nil && isForeignKeyViolation(err) {
		// a key without an action references a deleted row (at any level): PostgreSQL's refusal
		return nil, first
	}
	return rows, err
}

// aside performs acts' chain (tree) and the DELETE of the rows its WHERE reaches (instead runs
// it, without parameters) with the referencing tables hidden or created again, in one
// transaction (the client's when inTx): errOrphans when a row is left referencing none.
func (d *refDelete) aside(ctx context.Context, conn *sql.Conn, inTx bool, args []any, acts []refAction, tree []actionNode,
	instead func(sqlText string) (query.Rows, error)) (query.Rows, error) {
	keys := referencedColumns(acts)
	defer conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+deleteRows) //nolint:errcheck // gone with a rollback
	before := []step{d.chosen(keys)}
	return withReferencingAside(ctx, conn, inTx, d.schema, d.table, args, before, func(copyOf func(schema, table string) string) []step {
		var steps []step
		for _, n := range tree {
			steps = append(steps, actionSteps(n, func(alias string) string { return d.reach(n.a, keys, alias) }, copyOf, 0)...)
		}
		return steps
	}, false, func() (query.Rows, error) { return instead(d.deleteChosen()) })
}

// runInstead runs sqlText, a statement without parameters, on conn in place of q (p's kind:
// its count tag).
func runInstead(ctx context.Context, conn *sql.Conn, q *query.Request, p *prepared, sqlText string) (query.Rows, error) {
	plain := *q
	plain.Args = nil
	return run(ctx, conn, &plain, &prepared{sqlText: sqlText, kind: p.kind}, func() {})
}

// notPerformed is the error of a DELETE whose key's action DuckDB cannot perform here.
func (d *refDelete) notPerformed(a refAction, why string) error {
	what := map[byte]string{'c': "CASCADE", 'n': "SET NULL", 'd': "SET DEFAULT"}[a.action]
	return &query.Error{Code: sqlstate.FeatureNotSupported, Message: fmt.Sprintf(`delete on table "%s" needs ON DELETE %s of foreign key "%s" on table "%s", `+
		"which DuckDB does not perform here%s: it performs it for a DELETE of one table (no USING, no RETURNING)",
		d.table, what, a.name, a.table, why)}
}

// inTransaction is the error of such a DELETE in a client's transaction, read on another
// connection (the transaction's is failed): the key's action named when there is one.
func (d *refDelete) inTransaction(ctx context.Context, conn *sql.Conn, first error) error {
	acts, err := d.actions(ctx, conn)
	if err != nil || len(acts) == 0 {
		return first
	}
	return d.notPerformed(acts[0], " (in a transaction: DuckDB cannot delete the referencing rows and the referenced one in the same transaction)")
}

// retryDelete is what follows DuckDB's refusal (first) of a PostgreSQL client's DELETE of a
// referenced row: outside a transaction (conn idle, nil to take one of the engine's) the
// declared actions performed in steps; in one (inTx) the error naming the action, read on
// another connection.
func (e *Engine) retryDelete(ctx context.Context, conn *sql.Conn, inTx bool, client, q *query.Request, p *prepared, first error) (query.Rows, error) {
	d := pgRefDelete(client, p.sqlText)
	if d == nil {
		return e.retryUpdate(ctx, conn, inTx, client, q, p, first)
	}
	if conn == nil || inTx {
		c, err := e.conn(ctx)
		if err != nil {
			return nil, first
		}
		defer release(c, false)
		if inTx {
			return nil, d.inTransaction(ctx, c, first)
		}
		conn = c
	}
	args, err := coerceArgs(p.params, q.Args, q.Protocol == query.ProtocolPostgres)
	if err != nil {
		return nil, first
	}
	return d.cascade(ctx, conn, false, args, first, func(sqlText string) (query.Rows, error) { return runInstead(ctx, conn, q, p, sqlText) })
}
