package duckengine

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// setval(seq, n [, is_called]) of a PostgreSQL client: what pg_dump's restore, Django's
// sequence reset (sqlsequencereset, loaddata) and Rails' reset_pk_sequence! send after rows
// were written with explicit ids, so that a serial column's next id is past them. DuckDB has no
// setval and cannot alter a sequence, so a statement of the form
//
//	SELECT [pg_catalog.]setval(seq, n [, is_called]) [[AS] name] [FROM ...]
//
// is run in two steps: its arguments are read first (SELECT seq, n, is_called FROM ..., the
// client's parameters and all), and each sequence is moved so that its next value is
// PostgreSQL's next one (n + increment, or n when is_called is false), by taking values from it
// (nextval over a range: about 0.1 µs a value); then the statement itself runs with the call
// written qfpg_setval, a macro that answers n. A sequence set back (or moved by more than
// setvalTakeMax) is created again with its new start, and the tables whose defaults take its
// values with it (their rows copied: the cost of a table's copy). Any other form of a setval call is left to
// DuckDB, which refuses it (no such function): never a setval that silently did nothing.
// Like PostgreSQL's, the move is not undone by a rollback.

// setvalTakeMax is how far a sequence is moved by taking its values.
const setvalTakeMax = 1 << 26

// setvalCall is SELECT fn(args...) [[AS] name] [FROM ...], where at is the function name's
// token, and rest the text from FROM on ("" for none).
type setvalCall struct {
	toks     []sqltok.Token
	at       int // the function's name
	args     [][2]int
	rest     string
	qualFrom int // the first token of the call, pg_catalog's when qualified
}

// readSetval reads sqlText as SELECT fn(seq, n [, is_called]) [[AS] name] [FROM ...].
func readSetval(sqlText, fn string) (c setvalCall, ok bool) {
	if !containsFold(sqlText, fn) {
		return c, false
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.Postgres)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	if len(toks) < 6 || !isWord(toks[0], "select") {
		return c, false
	}
	at := 1
	c.qualFrom = at
	if isWord(toks[at], "pg_catalog") && toks[at+1].Text == "." {
		at += 2
	}
	if at+1 >= len(toks) || !isWord(toks[at], fn) || toks[at+1].Text != "(" {
		return c, false
	}
	c.toks, c.at = toks, at
	depth, start := 0, at+2
	end := -1
	for i := at + 1; i < len(toks) && end < 0; i++ {
		switch toks[i].Text {
		case "(", "[":
			depth++
		case ")", "]":
			if depth--; depth == 0 {
				c.args = append(c.args, [2]int{start, i})
				end = i
			}
		case ",":
			if depth == 1 {
				c.args = append(c.args, [2]int{start, i})
				start = i + 1
			}
		}
	}
	if end < 0 || len(c.args) < 2 || len(c.args) > 3 {
		return c, false
	}
	for _, a := range c.args {
		if a[0] >= a[1] {
			return c, false
		}
	}
	i := end + 1
	if i < len(toks) && isWord(toks[i], "as") {
		i++
	}
	if i < len(toks) && !isWord(toks[i], "from") && (toks[i].Kind == sqltok.Word || toks[i].Kind == sqltok.QuotedIdent) {
		i++ // the column's name
	}
	if i < len(toks) {
		if !isWord(toks[i], "from") {
			return c, false // another select item, a WHERE without FROM...
		}
		c.rest = sqlText[toks[i].Pos:]
	}
	return c, true
}

// arg is the text of the call's argument i.
func (c setvalCall) arg(sqlText string, i int) string {
	a := c.args[i]
	last := c.toks[a[1]-1]
	return sqlText[c.toks[a[0]].Pos : last.Pos+len(last.Text)]
}

// setvalCompat writes a PostgreSQL client's setval call of that form (s, as pgCompat wrote it,
// which found the call) as qfpg_setval, whose answer is n; s is returned as it is otherwise.
func setvalCompat(s string) string {
	c, ok := readSetval(s, "setval")
	if !ok {
		return s
	}
	from, name := c.toks[c.qualFrom], c.toks[c.at]
	return s[:from.Pos] + macroPrefix + "setval" + s[name.Pos+len(name.Text):]
}

// pgSetval moves the sequences q's setval calls name (q as compatRequest wrote it), before
// q runs; nothing for any other statement.
func (e *Engine) pgSetval(ctx context.Context, conn *sql.Conn, inTx bool, client, q *query.Request, p *prepared) error {
	if client.Protocol != query.ProtocolPostgres || q == client || !strings.Contains(q.SQL, macroPrefix+"setval") { // q is client when nothing was written
		return nil
	}
	c, ok := readSetval(q.SQL, macroPrefix+"setval")
	if !ok {
		return nil
	}
	called := "true"
	if len(c.args) == 3 {
		called = "CAST((" + c.arg(q.SQL, 2) + ") AS BOOLEAN)"
	}
	text := "SELECT CAST((" + c.arg(q.SQL, 0) + ") AS VARCHAR), CAST((" + c.arg(q.SQL, 1) + ") AS BIGINT), " + called
	if c.rest != "" {
		text += " " + c.rest
	}
	args, err := coerceArgs(p.params, q.Args, true)
	if err != nil {
		return err
	}
	rows, err := conn.QueryContext(ctx, text, args...)
	if err != nil {
		return wrapErr(err)
	}
	type move struct {
		seq    sql.NullString
		n      sql.NullInt64
		called sql.NullBool
	}
	var moves []move
	for rows.Next() {
		var m move
		if err := rows.Scan(&m.seq, &m.n, &m.called); err != nil {
			rows.Close()
			return wrapErr(err)
		}
		moves = append(moves, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return wrapErr(err)
	}
	for _, m := range moves {
		if !m.seq.Valid || !m.n.Valid || !m.called.Valid {
			continue // setval is strict: NULL in, NULL out, nothing moved
		}
		note, err := setSequence(ctx, conn, inTx, m.seq.String, m.n.Int64, m.called.Bool)
		if err != nil {
			return err
		}
		e.currvals.note(note)
		if client.Sequences != nil && !note.uncalled { // PostgreSQL's currval after setval(seq, n): n, the session's
			client.Sequences.Set(note.schema+"."+note.name, m.n.Int64)
		}
	}
	return nil
}

// sequenceState is a DuckDB sequence, as duckdb_sequences() tells it.
type sequenceState struct {
	schema, name                 string
	last                         sql.NullInt64
	start, increment, minV, maxV int64
	cycle                        bool
}

// next is the value nextval gives next.
func (s sequenceState) next() int64 {
	if s.last.Valid {
		return s.last.Int64 + s.increment
	}
	return s.start
}

// ref is the sequence's name as nextval takes it.
func (s sequenceState) ref() string {
	return quoteString(quoteIdent(s.schema) + "." + quoteIdent(s.name))
}

// regclassName reads text as PostgreSQL reads a regclass's text: [schema.]name, each part
// folded to lower case unless quoted.
func regclassName(text string) (schema, name string) {
	var parts []string
	for _, t := range sqltok.SignificantTokens(text, sqltok.Postgres) {
		if t.Text != "." {
			parts = append(parts, pgIdent(t))
		}
	}
	if len(parts) == 0 {
		return "", text
	}
	if len(parts) >= 2 {
		schema = duckSchema(parts[len(parts)-2])
	}
	return schema, parts[len(parts)-1]
}

// readSequence finds the sequence seq names (a regclass's text, or its oid).
func readSequence(ctx context.Context, conn *sql.Conn, seq string) (s sequenceState, err error) {
	schema, name := regclassName(seq)
	if _, err := strconv.ParseInt(seq, 10, 64); err == nil {
		schema, name = "", ""
	}
	err = conn.QueryRowContext(ctx, `SELECT schema_name, sequence_name, last_value, start_value, increment_by, min_value, max_value, cycle
		FROM duckdb_sequences() WHERE database_name = current_database() AND (CAST(sequence_oid AS VARCHAR) = ?
		OR schema_name = coalesce(nullif(?, ''), current_schema()) AND sequence_name = ?)`, seq, schema, name).Scan(
		&s.schema, &s.name, &s.last, &s.start, &s.increment, &s.minV, &s.maxV, &s.cycle)
	if err == sql.ErrNoRows {
		return s, &query.Error{Code: sqlstate.UndefinedTable, Message: fmt.Sprintf(`relation "%s" does not exist`, seq)}
	}
	return s, wrapErr(err)
}

// setSequence gives sequence seq PostgreSQL's state after setval(seq, n, called): its next
// value n + increment, or n. The note says what currval answers after it, where DuckDB's
// currval would not answer so (pgcurrval.go).
func setSequence(ctx context.Context, conn *sql.Conn, inTx bool, seq string, n int64, called bool) (currvalNote, error) {
	s, err := readSequence(ctx, conn, seq)
	if err != nil {
		return currvalNote{}, err
	}
	if n < s.minV || n > s.maxV {
		return currvalNote{}, &query.Error{Code: sqlstate.NumericValueOutOfRange, Message: fmt.Sprintf(`setval: value %d is out of bounds for sequence "%s" (%d..%d)`,
			n, s.name, s.minV, s.maxV)}
	}
	want := n
	if called {
		want = n + s.increment
	}
	// PostgreSQL's currval after setval(seq, n) is n; after setval(seq, n, false) the value the
	// sequence gave last, as before
	note := currvalNote{schema: s.schema, name: s.name, answer: sql.NullInt64{Int64: n, Valid: true}, lastBefore: s.last, uncalled: !called}
	distance := want - s.next()
	if takes := distance / s.increment; distance == 0 || distance%s.increment == 0 && takes > 0 && takes <= setvalTakeMax {
		if distance != 0 {
			_, err = conn.ExecContext(ctx, "SELECT max(nextval("+s.ref()+")) FROM range("+strconv.FormatInt(takes, 10)+")")
		}
		note.whileLast = sql.NullInt64{Int64: want - s.increment, Valid: want != s.start}
		return note, wrapErr(err)
	}
	return note, recreateSequence(ctx, conn, inTx, s, want) // DuckDB's last value none
}

// recreateSequence creates s again, its next value want. DuckDB drops no sequence a column's
// default names: the tables whose defaults take its values (and their families, pgrebuild.go)
// are created again around it, their rows kept.
func recreateSequence(ctx context.Context, conn *sql.Conn, inTx bool, s sequenceState, want int64) error {
	users, err := queryStrings(ctx, conn, `SELECT DISTINCT table_name FROM duckdb_columns() WHERE database_name = current_database()
		AND schema_name = ? AND (column_default LIKE '%nextval(''' || ? || '''%' OR column_default LIKE '%nextval(''%.' || ? || '''%'
		OR column_default LIKE '%nextval(''%"' || ? || '"''%')`, s.schema, s.name, s.name, s.name)
	if err != nil {
		return err
	}
	name := quoteIdent(s.schema) + "." + quoteIdent(s.name)
	create := fmt.Sprintf("CREATE SEQUENCE %s INCREMENT BY %d MINVALUE %d MAXVALUE %d START WITH %d", name, s.increment, s.minV, s.maxV, want)
	if s.cycle {
		create += " CYCLE"
	}
	stmts := []string{"DROP SEQUENCE " + name, create}
	if len(users) > 0 {
		family, _, err := tableFamily(ctx, conn, s.schema, users...)
		if err != nil {
			return err
		}
		same := func(t familyTable) string { return t.ddl }
		stmts = rebuildFamily(family, same, func(_ familyTable, create string) string { return create }, func(t familyTable) string { return t.name }, stmts...)
	}
	return runAll(ctx, conn, stmts, inTx)
}

// queryStrings are the first column's values of sqlText's rows.
func queryStrings(ctx context.Context, conn *sql.Conn, sqlText string, args ...any) ([]string, error) {
	rows, err := conn.QueryContext(ctx, sqlText, args...)
	if err != nil {
		return nil, wrapErr(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, wrapErr(err)
		}
		out = append(out, v)
	}
	return out, wrapErr(rows.Err())
}

// setvalMacroSQL answers n once pgSetval moved the sequence.
var setvalMacroSQL = `CREATE MACRO {c}.main.qfpg_setval(s, n) AS CASE WHEN s IS NULL THEN NULL ELSE CAST(n AS BIGINT) END,
	(s, n, c) AS CASE WHEN s IS NULL OR c IS NULL THEN NULL ELSE CAST(n AS BIGINT) END`
