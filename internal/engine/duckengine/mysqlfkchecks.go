package duckengine

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// FOREIGN_KEY_CHECKS=0, as mysqldump and mariadb-dump files set it: their tables come in name
// order, so a table's foreign key may name a table created later (books before the publishers
// it references), which MariaDB accepts with the checks off and DuckDB refuses (it declares a
// key only in CREATE TABLE, to a table that exists). While the session's checks are off
// (mysqlvars.go), a MySQL client's CREATE TABLE leaves out each foreign key to a table that
// does not exist yet, or to one whose own keys wait, and keeps it in the connection's
// variable qf_fk_pending; SET FOREIGN_KEY_CHECKS=1 (the dump's last lines) then adds them:
// each such table is created again with its keys and its rows copied back, referenced
// tables first (DuckDB drops no table another key references). A key that rows break stays
// pending and the SET is answered, as MariaDB leaves such rows; a client that never sets the
// checks back leaves its tables without those keys. Keys to tables that exist are declared at once,
// and checked on every row, as DuckDB always does.

// tableKey is one foreign key of a MySQL client's CREATE TABLE.
type tableKey struct {
	clause string   // as DuckDB reads it, without referential actions (pgrefactions.go)
	ref    string   // the table it references
	name   string   // CONSTRAINT name, "" when not given
	cols   []string // its columns, unquoted
	// onDelete and onUpdate are its actions as pg_constraint's letters; 'r' (RESTRICT, as
	// MariaDB says) when none is declared.
	onDelete, onUpdate byte
}

// readTableKey reads a CREATE TABLE definition that is a foreign key: [CONSTRAINT [c]] FOREIGN
// KEY [name] (cols) REFERENCES [db.]t (cols) [ON ...].
func readTableKey(d []sqltok.Token) (tableKey, bool) {
	foreign := -1
	for i := 0; i < len(d) && i < 3; i++ {
		if d[i].IsWord("foreign") {
			foreign = i
		}
	}
	if foreign < 0 || !d[0].IsWord("constraint", "foreign") {
		return tableKey{}, false
	}
	for i := foreign; i+1 < len(d); i++ {
		if !d[i].IsWord("references") {
			continue
		}
		ref := d[i+1]
		if i+3 < len(d) && d[i+2].Text == "." {
			ref = d[i+3]
		}
		clause, _ := withoutReferentialActions(mysqlCompat(joinTokens(d)))
		k := tableKey{clause: clause, ref: identText(ref), cols: keyColumns(d[foreign:i]), onDelete: 'r', onUpdate: 'r'}
		for j := i + 2; j+2 < len(d); j++ {
			switch {
			case d[j].IsWord("on") && d[j+1].IsWord("delete"):
				k.onDelete = referentialAction(d[j+2:])
			case d[j].IsWord("on") && d[j+1].IsWord("update"):
				k.onUpdate = referentialAction(d[j+2:])
			}
		}
		if foreign == 2 && d[0].IsWord("constraint") {
			k.name = identText(d[1])
		}
		return k, true
	}
	return tableKey{}, false
}

// keyColumns are the names in the first parentheses of d (FOREIGN KEY [name] (cols)).
func keyColumns(d []sqltok.Token) []string { return keyColumnsAs(d, identText) }

// keyColumnsAs is keyColumns with each name read by name (pgIdent for DuckDB's own clauses,
// whose names are double-quoted).
func keyColumnsAs(d []sqltok.Token, name func(sqltok.Token) string) []string {
	var cols []string
	in := false
	for _, t := range d {
		switch {
		case t.Text == "(":
			in = true
		case t.Text == ")":
			return cols
		case in && t.Text != ",":
			cols = append(cols, name(t))
		}
	}
	return cols
}

// foreignKeyNames are the statements that record the names of table's foreign keys keys as
// MariaDB names them (DuckDB keeps none): CONSTRAINT's name, else <table>_ibfk_<n> for the nth
// key without one, over any names recorded for an earlier table of the name.
func foreignKeyNames(table string, keys []tableKey) []string {
	stmts := []string{"DELETE FROM " + declaredSchema + ".constraints WHERE schema_name = current_schema() AND table_name = lower(" +
		quoteString(table) + ") AND kind = 'f'"}
	unnamed := 0
	for _, k := range keys {
		name := k.name
		if name == "" {
			unnamed++
			name = table + "_ibfk_" + strconv.Itoa(unnamed)
		}
		c := declaredConstraint{kind: 'f', columns: k.cols, name: name, onDelete: k.onDelete, onUpdate: k.onUpdate}
		stmts = append(stmts, c.insert("", table))
	}
	return stmts
}

// withKeys is the CREATE TABLE statement create with the foreign keys added to its definitions.
func withKeys(create string, keys []tableKey) string {
	end := strings.LastIndex(create, ")")
	if len(keys) == 0 || end < 0 {
		return create
	}
	clauses := make([]string, len(keys))
	for i, k := range keys {
		clauses[i] = k.clause
	}
	return create[:end] + ", " + strings.Join(clauses, ", ") + create[end:]
}

// pendingSep separates a pending key's table, referenced table and clause in qf_fk_pending.
const pendingSep = "\x1f"

// deferKeys splits table's keys into those declared now and those deferred: with the
// session's checks on, none is deferred.
func deferKeys(ctx context.Context, conn *sql.Conn, table string, keys []tableKey) (keep, deferred []tableKey, err error) {
	if len(keys) == 0 {
		return nil, nil, nil
	}
	var checks int
	if err := conn.QueryRowContext(ctx, "SELECT "+sessionVarRef("foreign_key_checks")).Scan(&checks); err != nil {
		return nil, nil, wrapErr(err)
	}
	if checks != 0 {
		return keys, nil, nil
	}
	waiting, err := pendingKeys(ctx, conn)
	if err != nil {
		return nil, nil, err
	}
	for _, k := range keys {
		exists, err := tableExists(ctx, conn, k.ref)
		if err != nil {
			return nil, nil, err
		}
		if strings.EqualFold(k.ref, table) || exists && !slices.ContainsFunc(waiting, func(p [3]string) bool { return strings.EqualFold(p[0], k.ref) }) {
			keep = append(keep, k)
		} else {
			deferred = append(deferred, k)
		}
	}
	return keep, deferred, nil
}

// tableExists reports whether the current schema has a table of the name (any case, as
// DuckDB resolves names).
func tableExists(ctx context.Context, conn *sql.Conn, name string) (bool, error) {
	var n int
	err := conn.QueryRowContext(ctx, `SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database()
		AND schema_name = current_schema() AND lower(table_name) = lower(?)`, name).Scan(&n)
	return n > 0, wrapErr(err)
}

// pendingKeys reads qf_fk_pending: each key's table, referenced table and clause, in the
// order they were deferred.
func pendingKeys(ctx context.Context, conn *sql.Conn) ([][3]string, error) {
	rows, err := conn.QueryContext(ctx, "SELECT unnest(coalesce(getvariable('qf_fk_pending'), []::VARCHAR[]))")
	if err != nil {
		return nil, wrapErr(err)
	}
	defer rows.Close()
	var out [][3]string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, wrapErr(err)
		}
		if parts := strings.SplitN(s, pendingSep, 3); len(parts) == 3 {
			out = append(out, [3]string{parts[0], parts[1], parts[2]})
		}
	}
	return out, wrapErr(rows.Err())
}

// noteDeferred adds table's deferred keys to qf_fk_pending.
func noteDeferred(ctx context.Context, conn *sql.Conn, table string, keys []tableKey) error {
	if len(keys) == 0 {
		return nil
	}
	items := make([]string, len(keys))
	for i, k := range keys {
		items[i] = sqltok.StandardString(table + pendingSep + k.ref + pendingSep + k.clause)
	}
	_, err := conn.ExecContext(ctx, "SET VARIABLE qf_fk_pending = list_concat(coalesce(getvariable('qf_fk_pending'), []::VARCHAR[]), ["+
		strings.Join(items, ", ")+"])")
	return wrapErr(err)
}

// applyDeferredKeys adds the keys qf_fk_pending holds (SET FOREIGN_KEY_CHECKS=1): each table
// created again with its keys and its rows, a table before those whose keys reference it. A
// key to a table that does not exist (dropped with the checks off and not created again, or
// never created) stays pending, as MariaDB keeps it, until a CREATE TABLE of that table
// (applyKeysTo); the other keys of its table are added. So does a key that rows already there
// break (keyBroken), as MariaDB checks only the rows written after: until a later SET
// FOREIGN_KEY_CHECKS=1 finds its rows mended. A table that fails leaves its keys and those not
// yet added pending.
func applyDeferredKeys(ctx context.Context, conn *sql.Conn, inTx bool) error {
	pending, err := pendingKeys(ctx, conn)
	if err != nil || len(pending) == 0 {
		return err
	}
	byTable := map[string][]tableKey{}
	var order []string
	var waiting []tableKey // keys to a missing table, with their table in name
	for _, p := range pending {
		if own, err := tableExists(ctx, conn, p[0]); err != nil {
			return err
		} else if !own {
			continue // the key's table was dropped since
		}
		exists, err := tableExists(ctx, conn, p[1])
		if err != nil {
			return err
		}
		if !exists {
			waiting = append(waiting, tableKey{name: p[0], ref: p[1], clause: p[2]})
			continue
		}
		if broken, err := keyBroken(ctx, conn, p[0], p[2]); err != nil {
			return err
		} else if broken {
			// rows written with the checks off break it: MariaDB checks no row already there
			// when the checks go back on, so the SET is answered and the key waits
			waiting = append(waiting, tableKey{name: p[0], ref: p[1], clause: p[2]})
			continue
		}
		t := strings.ToLower(p[0])
		if _, seen := byTable[t]; !seen {
			order = append(order, p[0])
		}
		byTable[t] = append(byTable[t], tableKey{ref: p[1], clause: p[2]})
	}
	var failed error
	for len(order) > 0 {
		next := slices.IndexFunc(order, func(t string) bool {
			return !slices.ContainsFunc(byTable[strings.ToLower(t)], func(k tableKey) bool {
				return !strings.EqualFold(k.ref, t) && slices.ContainsFunc(order, func(o string) bool { return strings.EqualFold(o, k.ref) })
			})
		})
		if next < 0 {
			next = 0 // keys in a cycle: DuckDB refuses the second table's
		}
		t := order[next]
		if failed = recreateWithKeys(ctx, conn, t, byTable[strings.ToLower(t)], inTx); failed != nil {
			break
		}
		order = slices.Delete(order, next, next+1)
	}
	if _, err := conn.ExecContext(ctx, "RESET VARIABLE qf_fk_pending"); err != nil {
		return wrapErr(err)
	}
	for _, t := range order {
		if err := noteDeferred(ctx, conn, t, byTable[strings.ToLower(t)]); err != nil {
			return err
		}
	}
	for _, k := range waiting {
		if err := noteDeferred(ctx, conn, k.name, []tableKey{k}); err != nil {
			return err
		}
	}
	return failed
}

// applyKeysTo adds the pending keys once table, which some of them reference, is created with
// the session's checks on (a CREATE TABLE after SET FOREIGN_KEY_CHECKS=1 of a table dropped
// with them off).
func applyKeysTo(ctx context.Context, conn *sql.Conn, table string, inTx bool) error {
	pending, err := pendingKeys(ctx, conn)
	if err != nil || !slices.ContainsFunc(pending, func(p [3]string) bool { return strings.EqualFold(p[1], table) }) ||
		foreignKeyChecksOff(ctx, conn) {
		return err
	}
	for _, p := range pending {
		if own, err := tableExists(ctx, conn, p[0]); err != nil || !own {
			if err != nil {
				return err
			}
			continue
		}
		if broken, err := keyBroken(ctx, conn, p[0], p[2]); err != nil || broken {
			return err // rows reference rows not there (yet): the keys stay pending
		}
	}
	return applyDeferredKeys(ctx, conn, inTx)
}

// keyBroken reports whether a row of table breaks the key clause (DuckDB's FOREIGN KEY (cols)
// REFERENCES t (cols)): its columns all set and no row of t has them. A clause not read so is
// not broken.
func keyBroken(ctx context.Context, conn *sql.Conn, table, clause string) (bool, error) {
	cols, refCols, ref, ok := keyClauseParts(clause)
	if !ok {
		return false, nil
	}
	var set, match []string
	for i := range cols {
		set = append(set, "c."+quoteIdent(cols[i])+" IS NOT NULL")
		match = append(match, "r."+quoteIdent(refCols[i])+" = c."+quoteIdent(cols[i]))
	}
	var n int
	err := conn.QueryRowContext(ctx, "SELECT count(*) FROM "+quoteIdent(table)+" c WHERE "+strings.Join(set, " AND ")+
		" AND NOT EXISTS (SELECT 1 FROM "+quoteIdent(ref)+" r WHERE "+strings.Join(match, " AND ")+")").Scan(&n)
	return n > 0, wrapErr(err)
}

// recreateWithKeys creates table again with keys, its rows and indexes kept (and the tables
// whose keys reference it, which DuckDB would not let it be dropped under); a table dropped
// since is left.
func recreateWithKeys(ctx context.Context, conn *sql.Conn, table string, keys []tableKey, inTx bool) error {
	exists, err := tableExists(ctx, conn, table)
	if err != nil || !exists {
		return err
	}
	family, _, err := tableFamily(ctx, conn, "", table)
	if err != nil || len(family) == 0 {
		return err
	}
	stmts := rebuildFamily(family, func(t familyTable) string {
		ddl := strings.TrimSuffix(strings.TrimSpace(t.ddl), ";")
		if strings.EqualFold(t.name, table) {
			return withKeys(ddl, keys)
		}
		return ddl
	}, func(_ familyTable, s string) string { return s }, func(t familyTable) string { return t.name })
	if err := runAll(ctx, conn, stmts, inTx); err != nil {
		return &query.Error{Code: sqlstate.ForeignKeyViolation, Message: "Cannot add the foreign keys of table '" + table +
			"' back (FOREIGN_KEY_CHECKS stays 0, the keys pending): " + err.Error()}
	}
	return nil
}
