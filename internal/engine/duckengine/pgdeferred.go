package duckengine

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Deferred foreign keys. PostgreSQL checks a key declared DEFERRABLE INITIALLY DEFERRED
// (Django's every key), or DEFERRABLE and deferred by SET CONSTRAINTS, when the transaction
// commits: fixtures loaded child-first (Django's loaddata, then its check_constraints' SET
// CONSTRAINTS ALL IMMEDIATE) commit, and a row left referencing nothing fails the COMMIT
// (23503, the transaction rolled back). DuckDB checks every key as each statement runs, and
// its refusal aborts the transaction. So, in a PostgreSQL client's transaction, before an
// INSERT or UPDATE of a table with a key deferred now, the rows it writes are checked first
// (probe: an INSERT runs into an empty copy of the table, an UPDATE's key values are read);
// when one references nothing, the table is created again without its deferred keys (its
// family, pgrebuild.go, in the client's transaction) and the statement runs. SET CONSTRAINTS
// ... IMMEDIATE and COMMIT check what such rows reference and create the table again with
// its keys (DuckDB checking every row once more); a violation fails the transaction. A
// ROLLBACK takes the table back as it was. Outside a transaction a key is checked as each
// statement ends, which is DuckDB's check.
//
// The cost falls on the transactions that write a row before what it references: a copy of
// the table (and of the tables referencing it) twice. Others pay the probe: one small
// statement more per INSERT or key-setting UPDATE of a table with deferred keys, asked only
// while the engine may have one (deferrableMaybe).

// deferral is a transaction's SET CONSTRAINTS and the tables whose deferred keys are set aside.
type deferral struct {
	all      byte            // 'D' (DEFERRED) or 'I' (IMMEDIATE) after SET CONSTRAINTS ALL; 0 before
	named    map[string]byte // SET CONSTRAINTS name: 'D' or 'I', since the last ALL
	detached []detachedTable // tables created again without their deferred keys, in order
}

// deferredKey is a deferrable foreign key as DuckDB and the declared catalog describe it.
type deferredKey struct {
	table, name   string   // the table the key is a key of, DuckDB's name
	deferral      byte     // declaredConstraint.deferral
	cols, refCols []string // DuckDB's names
	refTable      string
}

// detachedTable is a table created again without keys, and those keys' text (DuckDB's).
type detachedTable struct {
	schema, table string
	keys          []deferredKey
	clauses       []string
}

// deferred reports whether k is checked at commit now.
func (d *deferral) deferred(k deferredKey) bool {
	if k.deferral == 0 {
		return false
	}
	if m, ok := d.named[strings.ToLower(k.name)]; ok {
		return m == 'D'
	}
	if d.all != 0 {
		return d.all == 'D'
	}
	return k.deferral == 'd'
}

// noteDeferrable marks the engine as maybe having a deferrable key when client's statement,
// one the engine runs as its own DDL, may declare one.
func (e *Engine) noteDeferrable(client *query.Request) {
	if client.Protocol == query.ProtocolPostgres && !e.deferrableMaybe.Load() && containsFold(client.SQL, "deferr") {
		e.deferrableMaybe.Store(true)
	}
}

// noteDeclaredDeferrable marks the engine as maybe having a deferrable key when db's declared
// catalog holds one (or cannot be read).
func (e *Engine) noteDeclaredDeferrable(db *sql.DB) {
	var n int
	err := db.QueryRow("SELECT count(*) FROM " + declaredSchema + ".constraints WHERE kind = 'f' AND deferral IN ('i', 'd')").Scan(&n)
	if err != nil || n > 0 {
		e.deferrableMaybe.Store(true)
	}
}

// setConstraints is a PostgreSQL client's SET CONSTRAINTS {ALL | name, ...} {DEFERRED |
// IMMEDIATE}: the names (nil for ALL) and 'D' or 'I'; ok is false for any other statement.
type setConstraints struct {
	names []string
	mode  byte
}

// readSetConstraints reads client's statement as SET CONSTRAINTS.
func readSetConstraints(client *query.Request) (sc setConstraints, ok bool, err error) {
	if client.Protocol != query.ProtocolPostgres || !sqltok.FirstKeywordIs(client.SQL, sqltok.Postgres, "set") || !containsFold(client.SQL, "constraints") {
		return sc, false, nil
	}
	toks := sqltok.SignificantTokens(client.SQL, sqltok.Postgres)
	if len(toks) > 0 && toks[len(toks)-1].Text == ";" {
		toks = toks[:len(toks)-1]
	}
	if len(toks) < 4 || !isWord(toks[1], "constraints") {
		return sc, false, nil
	}
	switch last := toks[len(toks)-1]; {
	case isWord(last, "deferred"):
		sc.mode = 'D'
	case isWord(last, "immediate"):
		sc.mode = 'I'
	default:
		return sc, true, &query.Error{Code: sqlstate.SyntaxError, Message: "SET CONSTRAINTS needs DEFERRED or IMMEDIATE at its end"}
	}
	if len(toks) == 4 && isWord(toks[2], "all") {
		return sc, true, nil
	}
	for i, t := range toks[2 : len(toks)-1] {
		if t.Text != "," && t.Text != "." && (i+3 >= len(toks) || toks[i+3].Text != ".") { // schema.name: the name
			sc.names = append(sc.names, strings.ToLower(pgIdent(t)))
		}
	}
	return sc, true, nil
}

// setConstraintsOutside answers SET CONSTRAINTS outside a transaction, where it changes
// nothing (PostgreSQL warns: only in transaction blocks).
func setConstraintsOutside(client *query.Request) (ownRun, bool, error) {
	_, ok, err := readSetConstraints(client)
	return func(context.Context, *sql.Conn, bool) (query.Rows, error) {
		return engine.TagRows("SET CONSTRAINTS"), nil
	}, ok, err
}

// setConstraints answers SET CONSTRAINTS in a session; handled is false for any other
// statement.
func (s *session) setConstraints(ctx context.Context, client *query.Request) (rows query.Rows, handled bool, err error) {
	sc, ok, err := readSetConstraints(client)
	switch {
	case !ok:
		return nil, false, nil
	case s.status == 'E':
		return nil, true, errAborted
	case err != nil:
		s.fail()
		return nil, true, err
	case s.status == 'I':
		return engine.TagRows("SET CONSTRAINTS"), true, nil
	}
	if sc.names == nil {
		s.deferral.all, s.deferral.named = sc.mode, nil
	} else if err := s.setNamed(ctx, sc.names, sc.mode); err != nil {
		s.fail()
		return nil, true, err
	}
	if sc.mode == 'I' {
		if err := s.checkDeferred(ctx, false); err != nil {
			s.fail()
			return nil, true, err
		}
	}
	return engine.TagRows("SET CONSTRAINTS"), true, nil
}

// setNamed sets the named constraints' mode, each a deferrable key of the declared catalog
// (the last name of a schema-qualified one).
func (s *session) setNamed(ctx context.Context, names []string, mode byte) error {
	for _, name := range names {
		var deferral []byte
		err := s.conn.QueryRowContext(ctx, "SELECT coalesce(max(coalesce(deferral, '-')), '') FROM "+declaredSchema+
			".constraints WHERE kind = 'f' AND lower(name) = ?", name).Scan(&deferral)
		switch {
		case err != nil:
			return wrapErr(err)
		case len(deferral) == 0:
			return &query.Error{Code: sqlstate.UndefinedObject, Message: fmt.Sprintf("constraint %q does not exist", name)}
		case deferral[0] == '-':
			return &query.Error{Code: "42809", Message: fmt.Sprintf("constraint %q is not deferrable", name)}
		}
		if s.deferral.named == nil {
			s.deferral.named = map[string]byte{}
		}
		s.deferral.named[name] = mode
	}
	return nil
}

// deferredKeys are the keys of table schema.name (DuckDB's schema; "" the current one) that
// are checked at commit now and not yet set aside.
func (s *session) deferredKeys(ctx context.Context, schema, name string) ([]deferredKey, error) {
	return s.deferredKeysWhere(ctx, "lower(k.table_name) = lower(?)", schema, name)
}

// referencingTable is a table and its deferred keys referencing another.
type referencingTable struct {
	table string
	keys  []deferredKey
}

// referencingKeys are the keys without an ON DELETE action referencing table schema.name that
// are checked at commit now and not yet set aside, by the table they are keys of.
func (s *session) referencingKeys(ctx context.Context, schema, name string) ([]referencingTable, error) {
	// a key with an ON DELETE action acts at once, deferred or not: only NO ACTION waits
	keys, err := s.deferredKeysWhere(ctx, "lower(k.referenced_table) = lower(?) AND coalesce(d.on_delete, 'a') = 'a'", schema, name)
	var out []referencingTable
	for _, k := range keys {
		if n := len(out); n > 0 && out[n-1].table == k.table {
			out[n-1].keys = append(out[n-1].keys, k)
		} else {
			out = append(out, referencingTable{table: k.table, keys: []deferredKey{k}})
		}
	}
	return out, err
}

// deferredKeysWhere are the deferred keys of schema's tables (cond on duckdb_constraints() k
// with the argument name) that are checked at commit now and not yet set aside, by table.
func (s *session) deferredKeysWhere(ctx context.Context, cond, schema, name string) ([]deferredKey, error) {
	rows, err := s.conn.QueryContext(ctx, `SELECT k.table_name, d.name, d.deferral, CAST(k.constraint_column_names AS VARCHAR[]), k.referenced_table,
		CAST(k.referenced_column_names AS VARCHAR[]) FROM duckdb_constraints() k JOIN `+declaredSchema+`.constraints d
		ON d.schema_name = k.schema_name AND d.table_name = lower(k.table_name) AND d.kind = 'f'
		AND d.columns = list_transform(k.constraint_column_names, c -> lower(c))
		WHERE k.constraint_type = 'FOREIGN KEY' AND k.database_name = current_database() AND d.deferral IN ('i', 'd')
		AND k.schema_name = coalesce(nullif(?, ''), current_schema()) AND `+cond+` ORDER BY k.table_name, d.name`, schema, name)
	if err != nil {
		return nil, wrapErr(err)
	}
	defer rows.Close()
	var keys []deferredKey
	for rows.Next() {
		var k deferredKey
		var deferral string
		var cols, refCols duckdb.Composite[[]string]
		if err := rows.Scan(&k.table, &k.name, &deferral, &cols, &k.refTable, &refCols); err != nil {
			return nil, wrapErr(err)
		}
		k.deferral, k.cols, k.refCols = deferral[0], cols.Get(), refCols.Get()
		if s.deferral.deferred(k) {
			keys = append(keys, k)
		}
	}
	return keys, wrapErr(rows.Err())
}

// deferWrite sets aside the deferred keys of the table a PostgreSQL client's INSERT or UPDATE
// q (p prepared) writes, in a transaction, when a row it writes references nothing; before a
// DELETE, those referencing the rows it deletes (deferDelete).
func (s *session) deferWrite(ctx context.Context, client, q *query.Request, p *prepared) error {
	if client.Protocol != query.ProtocolPostgres || s.status != 'T' || !s.e.deferrableMaybe.Load() || p == nil {
		return nil
	}
	if p.kind == duckdb.STATEMENT_TYPE_DELETE {
		return s.deferDelete(ctx, q, p)
	}
	if p.kind != duckdb.STATEMENT_TYPE_INSERT && p.kind != duckdb.STATEMENT_TYPE_UPDATE {
		return nil
	}
	w, ok := readKeyWrite(p.sqlText)
	if !ok {
		return nil
	}
	keys, err := s.deferredKeys(ctx, w.schema, w.table)
	if err != nil || len(keys) == 0 {
		return err
	}
	schema := w.schema
	if err := s.conn.QueryRowContext(ctx, "SELECT coalesce(nullif(?, ''), current_schema())", schema).Scan(&schema); err != nil {
		return wrapErr(err)
	}
	args, err := coerceArgs(p.params, q.Args, true)
	if err != nil {
		return err
	}
	if orphans, err := w.probe(ctx, s, schema, keys, args); err != nil || !orphans {
		return err
	}
	return s.detach(ctx, schema, w.table, keys)
}

// keyWrite is an INSERT or UPDATE as DuckDB runs it: its table and where its text goes on.
type keyWrite struct {
	insert        bool
	schema, table string
	toks          []sqltok.Token
	sqlText       string
	after         int // the first token after the table's name
}

// readKeyWrite reads INSERT INTO [schema.]t ... and UPDATE [schema.]t SET ....
func readKeyWrite(sqlText string) (keyWrite, bool) {
	w := keyWrite{toks: sqltok.SignificantTokens(sqlText, sqltok.Postgres), sqlText: sqlText}
	i := 1
	if len(w.toks) > 2 && isWord(w.toks[0], "insert") && isWord(w.toks[1], "into") {
		w.insert, i = true, 2
	} else if len(w.toks) < 2 || !isWord(w.toks[0], "update") {
		return w, false
	}
	name := func(i int) bool {
		return i < len(w.toks) && (w.toks[i].Kind == sqltok.Word || w.toks[i].Kind == sqltok.QuotedIdent)
	}
	if !name(i) {
		return w, false
	}
	w.table, w.after = pgIdent(w.toks[i]), i+1
	if w.after+1 < len(w.toks) && w.toks[w.after].Text == "." && name(w.after+1) {
		w.schema, w.table, w.after = duckSchema(w.table), pgIdent(w.toks[w.after+1]), w.after+2
	}
	return w, true
}

// probe reports whether a row the statement writes references nothing by one of keys (or the
// statement is not of a form the probe reads: the table is then set aside all the same).
func (w keyWrite) probe(ctx context.Context, s *session, schema string, keys []deferredKey, args []any) (bool, error) {
	if !w.insert {
		return w.updateProbe(ctx, s, schema, keys, args)
	}
	end := len(w.toks)
	depth := 0
	for i := w.after; i < len(w.toks); i++ {
		switch t := w.toks[i]; {
		case t.Text == "(":
			depth++
		case t.Text == ")":
			depth--
		case depth == 0 && (isWord(t, "on") || isWord(t, "returning") || t.Text == ";"):
			end = min(end, i)
		case i >= end && t.Kind == sqltok.Param:
			return true, nil // a parameter of ON CONFLICT or RETURNING: the probe could not run without it
		}
	}
	if w.after >= end || isWord(w.toks[w.after], "as") || isWord(w.toks[w.after], "default") {
		return isWord(w.toks[w.after], "as"), nil
	}
	if callsVolatile(w.toks[w.after:end]) {
		return true, nil // the probe would run nextval() or random() once more than the client asked
	}
	if volatile, err := s.callsVolatileMacro(ctx, w.toks[w.after:end]); err != nil || volatile {
		return volatile, err // a function of the client's that does
	}
	source := w.sqlText[w.toks[w.after].Pos : w.toks[end-1].Pos+len(w.toks[end-1].Text)]
	const probe = "temp.main.qf_deferred_probe"
	stmts := []string{"CREATE OR REPLACE TEMPORARY TABLE qf_deferred_probe AS SELECT * FROM " + qualified(schema, w.table) + " LIMIT 0"}
	if err := runAll(ctx, s.conn, stmts, true); err != nil {
		return false, err
	}
	defer func() {
		_ = runAll(context.WithoutCancel(ctx), s.conn, []string{"DROP TABLE IF EXISTS " + probe}, true)
	}()
	if _, err := s.conn.ExecContext(ctx, "INSERT INTO "+probe+" "+source, args...); err != nil {
		return false, wrapErr(err) // the client's INSERT would fail so too
	}
	for _, k := range keys {
		if _, found, err := s.orphan(ctx, probe, schema, k); err != nil || found {
			return found, err
		}
	}
	return false, nil
}

// volatileFunctions change something or answer anew each call: a probe must not call them.
var volatileFunctions = []string{"nextval", "setval", "random", "gen_random_uuid", "uuid", "uuidv4", "uuidv7", "random_uuid",
	"txid_current", "pg_advisory_lock", "pg_advisory_xact_lock", "pg_sleep"}

// callsVolatile reports whether toks call one of volatileFunctions.
func callsVolatile(toks []sqltok.Token) bool {
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].Kind == sqltok.Word && toks[i+1].Text == "(" && slices.ContainsFunc(volatileFunctions, func(f string) bool { return isWord(toks[i], f) }) {
			return true
		}
	}
	return false
}

// callsVolatileMacro reports whether toks call a function of the client's (a DuckDB macro:
// CREATE FUNCTION ... LANGUAGE sql here) whose body, or the body of one it calls, calls one of
// volatileFunctions: the probe would run it once more than the client asked (a nextval in it
// taking one more number).
func (s *session) callsVolatileMacro(ctx context.Context, toks []sqltok.Token) (bool, error) {
	seen := map[string]bool{}
	for range 4 { // macros calling macros, as deep as schemas go
		var names []string
		for i := 0; i+1 < len(toks); i++ {
			if name := strings.ToLower(pgIdent(toks[i])); (toks[i].Kind == sqltok.Word || toks[i].Kind == sqltok.QuotedIdent) &&
				toks[i+1].Text == "(" && !seen[name] {
				seen[name] = true
				names = append(names, quoteString(name))
			}
		}
		if len(names) == 0 {
			return false, nil
		}
		bodies, err := queryStrings(ctx, s.conn, `SELECT coalesce(macro_definition, '') FROM duckdb_functions() WHERE NOT internal
			AND database_name = current_database() AND lower(function_name) IN (`+strings.Join(names, ", ")+`)`)
		if err != nil || len(bodies) == 0 {
			return false, err
		}
		toks = sqltok.SignificantTokens(strings.Join(bodies, " "), sqltok.Postgres)
		if callsVolatile(toks) {
			return true, nil
		}
	}
	return true, nil // deeper than looked: as if it did
}

// updateProbe reports whether an UPDATE may set a key column of keys to a value referencing
// nothing: yes unless every key column it sets is set to a parameter, a literal or NULL, and
// each key so set references a row that is there.
func (w keyWrite) updateProbe(ctx context.Context, s *session, schema string, keys []deferredKey, args []any) (bool, error) {
	if w.after >= len(w.toks) || !isWord(w.toks[w.after], "set") {
		return true, nil
	}
	set := map[string]sqltok.Token{} // a key column and the one token it is set to
	for _, i := range setTargets(w.toks, w.after) {
		col := strings.ToLower(pgIdent(w.toks[i]))
		if !slices.ContainsFunc(keys, func(k deferredKey) bool {
			return slices.ContainsFunc(k.cols, func(c string) bool { return strings.EqualFold(c, col) })
		}) {
			continue
		}
		if i+3 < len(w.toks) && w.toks[i+3].Text != "," && !isWord(w.toks[i+3], "where") && !isWord(w.toks[i+3], "returning") {
			return true, nil // an expression
		}
		if i+2 >= len(w.toks) {
			return true, nil
		}
		set[col] = w.toks[i+2]
	}
	for _, k := range keys {
		if found, err := k.references(ctx, s, schema, set, args); err != nil || !found {
			return !found, err
		}
	}
	return false, nil
}

// references reports whether the values set gives k's columns reference a row that is there
// (or leave k alone, or set one NULL); false for values it cannot read.
func (k deferredKey) references(ctx context.Context, s *session, schema string, set map[string]sqltok.Token, args []any) (bool, error) {
	var match []string
	var vals []any
	for i, c := range k.cols {
		t, ok := set[strings.ToLower(c)]
		switch {
		case !ok && len(match) == 0 && i == len(k.cols)-1:
			return true, nil // not set
		case !ok:
			return false, nil // part of a key set
		case isWord(t, "null"):
			return true, nil
		case t.Kind == sqltok.Param:
			n := 0
			if _, err := fmt.Sscanf(strings.TrimPrefix(t.Text, "$"), "%d", &n); err != nil || n < 1 || n > len(args) {
				return false, nil
			}
			if args[n-1] == nil {
				return true, nil
			}
			match, vals = append(match, "r."+quoteIdent(k.refCols[i])+" = ?"), append(vals, args[n-1])
		case t.Kind == sqltok.Number || t.Kind == sqltok.String:
			match = append(match, "r."+quoteIdent(k.refCols[i])+" = "+t.Text)
		default:
			return false, nil
		}
	}
	var n int
	err := s.conn.QueryRowContext(ctx, "SELECT count(*) FROM "+qualified(schema, k.refTable)+" r WHERE "+strings.Join(match, " AND "), vals...).Scan(&n)
	return n > 0, wrapErr(err)
}

// orphan finds a row of table (a temporary one, or schema's) whose key k references nothing:
// found, and its key's values as PostgreSQL's message writes them.
func (s *session) orphan(ctx context.Context, table, schema string, k deferredKey) (values string, found bool, err error) {
	var notNull, match, vals []string
	for i, c := range k.cols {
		notNull = append(notNull, "c."+quoteIdent(c)+" IS NOT NULL")
		match = append(match, "r."+quoteIdent(k.refCols[i])+" = c."+quoteIdent(c))
		vals = append(vals, "CAST(c."+quoteIdent(c)+" AS VARCHAR)")
	}
	err = s.conn.QueryRowContext(ctx, "SELECT concat_ws(', ', "+strings.Join(vals, ", ")+") FROM "+table+" c WHERE "+
		strings.Join(notNull, " AND ")+" AND NOT EXISTS (SELECT 1 FROM "+qualified(schema, k.refTable)+" r WHERE "+
		strings.Join(match, " AND ")+") LIMIT 1").Scan(&values)
	if err != nil && strings.Contains(err.Error(), "no rows") {
		return "", false, nil
	}
	return values, err == nil, wrapErr(err)
}

// detach creates table schema.name again without keys, the tables referencing it with it.
func (s *session) detach(ctx context.Context, schema, name string, keys []deferredKey) error {
	d := detachedTable{schema: schema, table: name, keys: keys}
	err := s.rebuildOne(ctx, schema, name, func(ddl string) string {
		var out string
		out, d.clauses = withoutKeys(ddl, keys)
		return out
	})
	if err != nil {
		return err
	}
	s.deferral.detached = append(s.deferral.detached, d)
	return nil
}

// rebuildOne creates table schema.name again as ddl writes DuckDB's text of it, in the
// client's transaction, the tables referencing it with it.
func (s *session) rebuildOne(ctx context.Context, schema, name string, ddl func(string) string) error {
	stmts, err := rebuiltWith(ctx, s.conn, schema, name, ddl)
	if err != nil {
		return err
	}
	return runAll(ctx, s.conn, stmts, true)
}

// rebuiltWith are the statements that create table schema.name again as ddl writes DuckDB's
// text of it, the tables referencing it with it.
func rebuiltWith(ctx context.Context, conn *sql.Conn, schema, name string, ddl func(string) string) ([]string, error) {
	family, _, err := tableFamily(ctx, conn, schema, name)
	if err != nil {
		return nil, err
	}
	return rebuildFamily(family, func(t familyTable) string {
		if strings.EqualFold(t.name, name) {
			return ddl(t.ddl)
		}
		return t.ddl
	}, func(_ familyTable, index string) string { return index }, func(t familyTable) string { return t.name }), nil
}

// withoutKeys is ddl, DuckDB's CREATE TABLE, without the FOREIGN KEY elements of keys, and
// those elements' text, clauses[i] keys[i]'s ("" when ddl has none).
func withoutKeys(ddl string, keys []deferredKey) (string, []string) {
	toks := sqltok.SignificantTokens(ddl, sqltok.Postgres)
	var out strings.Builder
	clauses := make([]string, len(keys))
	last, depth, start := 0, 0, -1 // start: the "(" or "," before the element being read
	for i, t := range toks {
		switch t.Text {
		case "(":
			if depth++; depth == 1 {
				start = i
			}
			continue
		case ")":
			if depth--; depth != 0 {
				continue
			}
		case ",":
			if depth != 1 {
				continue
			}
		default:
			continue
		}
		if k := keyElement(toks[start+1:i], keys); k >= 0 && start+1 < i {
			clauses[k] = ddl[toks[start+1].Pos : toks[i-1].Pos+len(toks[i-1].Text)]
			if toks[start].Text == "," { // drop ", element"
				out.WriteString(ddl[last:toks[start].Pos])
				last = t.Pos
			} else if t.Text == "," { // the first element: drop "element, "
				out.WriteString(ddl[last:toks[start+1].Pos])
				last = toks[i+1].Pos
			}
		}
		start = i
	}
	out.WriteString(ddl[last:])
	return out.String(), clauses
}

// keyElement is the index in keys of el, FOREIGN KEY (cols) REFERENCES ...; -1 when el is
// none of them.
func keyElement(el []sqltok.Token, keys []deferredKey) int {
	if len(el) < 3 || !isWord(el[0], "foreign") || !isWord(el[1], "key") {
		return -1
	}
	var cols []string
	for i := 2; i < len(el) && el[i].Text != ")"; i++ {
		if el[i].Text != "(" && el[i].Text != "," {
			cols = append(cols, pgIdent(el[i]))
		}
	}
	return slices.IndexFunc(keys, func(k deferredKey) bool { return slices.EqualFunc(k.cols, cols, strings.EqualFold) })
}

// checkDeferred checks the keys set aside (only those no longer deferred, unless all) and
// creates their tables again with them; a row referencing nothing is 23503.
func (s *session) checkDeferred(ctx context.Context, all bool) error {
	var kept []detachedTable
	for _, d := range s.deferral.detached {
		var back []string
		rest := detachedTable{schema: d.schema, table: d.table}
		for i, k := range d.keys {
			if !all && s.deferral.deferred(k) {
				rest.keys, rest.clauses = append(rest.keys, k), append(rest.clauses, d.clauses[i])
				continue
			}
			values, found, err := s.orphan(ctx, qualified(d.schema, d.table), d.schema, k)
			if err != nil {
				return err
			}
			if found {
				return &query.Error{Code: sqlstate.ForeignKeyViolation, Message: fmt.Sprintf(
					"insert or update on table %q violates foreign key constraint %q: Key (%s)=(%s) is not present in table %q",
					d.table, k.name, strings.Join(k.cols, ", "), values, k.refTable)}
			}
			if d.clauses[i] != "" {
				back = append(back, d.clauses[i])
			}
		}
		if len(back) > 0 {
			err := s.rebuildOne(ctx, d.schema, d.table, func(ddl string) string {
				end := strings.LastIndex(ddl, ")")
				return ddl[:end] + ", " + strings.Join(back, ", ") + ddl[end:]
			})
			if err != nil {
				return err
			}
		}
		if len(rest.keys) > 0 {
			kept = append(kept, rest)
		}
	}
	s.deferral.detached = kept
	return nil
}

// deferDelete sets aside, before a PostgreSQL client's DELETE of table w.table (p prepared) in
// a transaction, the deferred keys referencing it from the tables with a row referencing a row
// it deletes: PostgreSQL checks them at COMMIT (Django's delete() that fixes the referencing
// rows after), DuckDB as the DELETE runs. A DELETE whose rows the probe cannot read (USING, a
// parameter in RETURNING) sets every such table aside.
func (s *session) deferDelete(ctx context.Context, q *query.Request, p *prepared) error {
	toks := sqltok.SignificantTokens(p.sqlText, sqltok.Postgres)
	if len(toks) < 3 || !isWord(toks[0], "delete") || !isWord(toks[1], "from") {
		return nil
	}
	w, ok := readKeyWrite("INSERT INTO " + p.sqlText[toks[2].Pos:]) // the table's name as an INSERT's
	if !ok {
		return nil
	}
	referencing, err := s.referencingKeys(ctx, w.schema, w.table)
	if err != nil || len(referencing) == 0 {
		return err
	}
	schema := w.schema
	if err := s.conn.QueryRowContext(ctx, "SELECT coalesce(nullif(?, ''), current_schema())", schema).Scan(&schema); err != nil {
		return wrapErr(err)
	}
	// the rows it deletes: FROM t [[AS] alias] [WHERE ...], up to RETURNING
	rest := w.toks[w.after:]
	alias, i := "", 0
	if i < len(rest) && isWord(rest[i], "as") {
		i++
	}
	if i < len(rest) && (rest[i].Kind == sqltok.Word && !isWord(rest[i], "where") && !isWord(rest[i], "returning") && !isWord(rest[i], "using") ||
		rest[i].Kind == sqltok.QuotedIdent) {
		alias, i = rest[i].Text, i+1
	}
	probe := i == len(rest) || isWord(rest[i], "where") || isWord(rest[i], "returning")
	where := " WHERE true"
	if probe && i < len(rest) && isWord(rest[i], "where") {
		end, depth := len(rest), 0
		for j := i; j < len(rest); j++ {
			switch t := rest[j]; {
			case t.Text == "(":
				depth++
			case t.Text == ")":
				depth--
			case depth == 0 && (isWord(t, "returning") || t.Text == ";"):
				end = min(end, j)
			case j >= end && t.Kind == sqltok.Param:
				probe = false
			}
		}
		last := rest[end-1]
		where = " " + w.sqlText[rest[i].Pos:last.Pos+len(last.Text)]
	}
	var args []any
	if probe {
		if args, err = coerceArgs(p.params, q.Args, true); err != nil {
			return err
		}
	}
	deleted := cmp.Or(alias, quoteIdent(w.table))
	for _, r := range referencing {
		refers := !probe
		for _, k := range r.keys {
			if refers {
				break
			}
			var match []string
			for n, c := range k.cols {
				match = append(match, deleted+"."+quoteIdent(k.refCols[n])+" = c."+quoteIdent(c))
			}
			err := s.conn.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM "+qualified(schema, r.table)+" c WHERE EXISTS (SELECT 1 FROM "+
				qualified(schema, w.table)+" "+alias+where+" AND "+strings.Join(match, " AND ")+"))", args...).Scan(&refers)
			if err != nil {
				return wrapErr(err)
			}
		}
		if refers {
			if err := s.detach(ctx, schema, r.table, r.keys); err != nil {
				return err
			}
		}
	}
	return nil
}
