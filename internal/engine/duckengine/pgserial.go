package duckengine

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A PostgreSQL client's CREATE TABLE as ORMs write it, which DuckDB refuses, is written as
// DuckDB reads it (pgCreateTable):
//   - a serial column (smallserial, serial, bigserial, serial2/4/8) is an integer of that size,
//     NOT NULL, whose DEFAULT takes the next value of a sequence of its own named as
//     PostgreSQL names it (<table>_<column>_seq, in the table's schema), made with the table;
//   - a column GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY (Django's, SQLAlchemy's Identity)
//     is the same with the type it was given (DuckDB has no identity columns: ALWAYS does not
//     refuse an explicit value);
//   - storage parameters, WITH (fillfactor=100) (pgbench -i), are left out: they tune
//     PostgreSQL's heap, and the table is the same without.

// serialTypes are PostgreSQL's serial pseudo-types and the integer type each stands for.
var serialTypes = map[string]string{"smallserial": "SMALLINT", "serial2": "SMALLINT",
	"serial": "INTEGER", "serial4": "INTEGER", "bigserial": "BIGINT", "serial8": "BIGINT"}

// pgCreateTable is sqlText, a PostgreSQL CREATE TABLE, as the statements DuckDB runs for it
// (its columns' sequences first); ok is false for any other statement, or one with nothing to
// translate.
func pgCreateTable(sqlText string) (stmts []string, fresh *freshSequences, ok bool) {
	h, ok := readCreateTable(sqlText, sqltok.Postgres)
	if !ok {
		return nil, nil, false
	}
	sqlText, noActions := withoutReferentialActions(sqlText)
	sqlText, notDeferrable := withoutDeferrability(sqlText)
	if noActions = noActions || notDeferrable; noActions {
		h, _ = readCreateTable(sqlText, sqltok.Postgres)
	}
	toks, name, at, temporary, ifNotExists := h.toks, h.name, h.open, h.temporary, h.ifNotExists
	defs, end := definitions(toks, at)
	if end < 0 {
		return nil, nil, false
	}
	tail, changed := sqlText[toks[end].Pos+1:], noActions
	if w := end + 1; w+1 < len(toks) && strings.EqualFold(toks[w].Text, "with") && toks[w+1].Text == "(" {
		if _, close := definitions(toks, w+1); close > 0 {
			tail, changed = sqlText[toks[close].Pos+1:], true
		}
	}
	var cols, seqs, options []string
	for _, d := range defs {
		text, seq, opts := serialColumn(sqlText, name, d)
		if seq != "" {
			seqs, options = append(seqs, seq), append(options, opts)
		}
		changed = changed || text != sqlText[d[0].Pos:d[len(d)-1].Pos+len(d[len(d)-1].Text)]
		cols = append(cols, text)
	}
	if !changed {
		return nil, nil, false
	}
	if ifNotExists && len(seqs) > 0 {
		fresh = &freshSequences{name: pgIdent(name[len(name)-1]), temporary: temporary}
		if len(name) >= 3 {
			fresh.schema = duckSchema(pgIdent(name[len(name)-3]))
		}
	}
	create := "CREATE SEQUENCE "
	if temporary {
		create = "CREATE TEMPORARY SEQUENCE "
	}
	for i, seq := range seqs {
		if ifNotExists {
			fresh.drops = append(fresh.drops, "DROP SEQUENCE IF EXISTS "+seq)
			stmts = append(stmts, create+"IF NOT EXISTS "+seq+options[i])
			continue
		}
		// A sequence left by a dropped table of the name goes (DuckDB drops no sequence with
		// its table); a table of the name that still exists keeps its own (serialTableExists).
		stmts = append(stmts, "DROP SEQUENCE IF EXISTS "+seq, create+seq+options[i])
	}
	table := sqlText[:toks[at].Pos] + "(" + strings.Join(cols, ", ") + ")" + tail
	return append(stmts, pgCompat(&query.Request{SQL: table, Protocol: query.ProtocolPostgres})), fresh, true
}

// freshSequences are the sequences of a CREATE TABLE IF NOT EXISTS's serial columns, which
// start afresh when no table of the name exists: a table of the name dropped before left them
// (DuckDB drops no sequence with its table; PostgreSQL drops the ones its columns own), and
// Sequelize's sync({force: true}), DROP TABLE IF EXISTS then CREATE TABLE IF NOT EXISTS, numbered
// the new table's rows on from the old one's.
type freshSequences struct {
	schema, name string // the table's; schema "" for the current one
	temporary    bool
	drops        []string
}

// statements are the drops to run before the CREATE TABLE, none when the table exists.
func (f *freshSequences) statements(ctx context.Context, conn *sql.Conn) ([]string, error) {
	if f == nil {
		return nil, nil
	}
	var n int
	err := conn.QueryRowContext(ctx, `SELECT count(*) FROM duckdb_tables() WHERE table_name = ?
		AND schema_name = coalesce(nullif(?, ''), current_schema())
		AND (database_name = current_database() OR ? AND database_name = 'temp')`, f.name, f.schema, f.temporary).Scan(&n)
	if err != nil || n > 0 {
		return nil, wrapErr(err)
	}
	return f.drops, nil
}

// pgCreateIndex is a PostgreSQL client's CREATE INDEX as DuckDB takes it: an index with no name
// gets the one PostgreSQL would give it (t_a_b_idx), which DuckDB requires, and USING method
// (btree, hash, gin...) and a column's operator class are left out, DuckDB having one kind of
// index; ok is false when there is nothing to change.
func pgCreateIndex(sqlText string) (stmt string, ok bool) {
	toks := sqltok.SignificantTokens(sqlText, sqltok.Postgres)
	at := 1
	word := func(w string) bool {
		if at < len(toks) && toks[at].Kind == sqltok.Word && strings.EqualFold(toks[at].Text, w) {
			at++
			return true
		}
		return false
	}
	word("unique")
	if !word("index") {
		return "", false
	}
	word("concurrently")
	named := !word("on")
	on := at - 1
	if named {
		for on < len(toks) && !strings.EqualFold(toks[on].Text, "on") {
			on++
		}
		at = on + 1
	}
	word("only")
	nameEnd := at
	for nameEnd < len(toks) && toks[nameEnd].Text != "(" && !strings.EqualFold(toks[nameEnd].Text, "using") {
		nameEnd++
	}
	open := nameEnd
	for open < len(toks) && toks[open].Text != "(" { // USING method
		open++
	}
	if on >= len(toks) || nameEnd == at || open == len(toks) {
		return "", false
	}
	defs, end := definitions(toks, open)
	if end < 0 || len(defs) == 0 {
		return "", false
	}
	columns, opclasses := withoutOpclasses(sqlText, defs)
	if named && open == nameEnd && !opclasses {
		return "", false
	}
	out := sqlText[:toks[on].Pos]
	if !named {
		name := pgIdent(toks[nameEnd-1])
		for _, d := range defs {
			if d[0].Kind == sqltok.Word || d[0].Kind == sqltok.QuotedIdent {
				name += "_" + pgIdent(d[0])
			} else {
				name += "_expr"
			}
		}
		out += `"` + strings.ReplaceAll(name+"_idx", `"`, `""`) + `" `
	}
	return out + sqlText[toks[on].Pos:toks[nameEnd-1].Pos+len(toks[nameEnd-1].Text)] + " (" + columns + sqlText[toks[end].Pos:], true
}

// withoutOpclasses is an index's column list (defs, its elements) without their operator
// classes (Django's varchar_pattern_ops, text_pattern_ops for LIKE 'x%'), which DuckDB's index
// has no use for, and whether it had any.
func withoutOpclasses(sqlText string, defs [][]sqltok.Token) (string, bool) {
	span := func(ts []sqltok.Token) string {
		if len(ts) == 0 {
			return ""
		}
		return sqlText[ts[0].Pos : ts[len(ts)-1].Pos+len(ts[len(ts)-1].Text)]
	}
	cols, found := make([]string, len(defs)), false
	for i, d := range defs {
		cols[i] = span(d)
		for j := 1; j < len(d); j++ {
			if d[j].Kind == sqltok.Word && strings.HasSuffix(strings.ToLower(d[j].Text), "_ops") {
				cols[i], found = span(d[:j])+tailText(span, d[j+1:]), true
				break
			}
		}
	}
	return strings.Join(cols, ", "), found
}

// serialColumn is one definition of a CREATE TABLE of the table name, as DuckDB reads it, and
// the sequence it takes its values from when it is a serial or identity column ("" otherwise),
// with the START and INCREMENT an identity column's options give it.
func serialColumn(sqlText string, name, d []sqltok.Token) (text, seq, opts string) {
	span := func(ts []sqltok.Token) string {
		if len(ts) == 0 {
			return ""
		}
		last := ts[len(ts)-1]
		return sqlText[ts[0].Pos : last.Pos+len(last.Text)]
	}
	text = span(d)
	if len(d) < 2 || d[0].Kind != sqltok.Word && d[0].Kind != sqltok.QuotedIdent {
		return text, "", ""
	}
	is := func(i int, w string) bool {
		return i < len(d) && d[i].Kind == sqltok.Word && strings.EqualFold(d[i].Text, w)
	}
	if is(0, "constraint") || is(0, "primary") || is(0, "unique") || is(0, "check") || is(0, "foreign") || is(0, "exclude") || is(0, "like") {
		return text, "", ""
	}
	if is(1, "jsonb") { // DuckDB's one JSON type
		return span(d[:1]) + " JSON" + tailText(span, d[2:]), "", ""
	}
	seq = serialSequence(name, d[0])
	def := " NOT NULL DEFAULT nextval('" + seq + "')"
	if typ, ok := serialTypes[strings.ToLower(d[1].Text)]; ok && d[1].Kind == sqltok.Word {
		return span(d[:1]) + " " + typ + def + tailText(span, d[2:]), seq, ""
	}
	for k := 2; k < len(d); k++ {
		if !is(k, "generated") {
			continue
		}
		j := k + 1
		switch {
		case is(j, "always"):
			j++
		case is(j, "by") && is(j+1, "default"):
			j += 2
		default:
			return text, "", ""
		}
		if !is(j, "as") || !is(j+1, "identity") {
			return text, "", ""
		}
		j += 2
		if j < len(d) && d[j].Text == "(" { // the sequence's options: START WITH n ...
			open := j
			for depth := 0; j < len(d); j++ {
				if d[j].Text == "(" {
					depth++
				} else if d[j].Text == ")" {
					if depth--; depth == 0 {
						break
					}
				}
			}
			opts = identityOptions(d[open+1 : min(j, len(d))])
			j++
		}
		return span(d[:k]) + def + tailText(span, d[min(j, len(d)):]), seq, opts
	}
	return text, "", ""
}

// identityOptions are the START and INCREMENT of an identity column's sequence options
// (START WITH 10 INCREMENT BY 5), as CREATE SEQUENCE takes them; the others (MINVALUE, CACHE...)
// are left to DuckDB's defaults.
func identityOptions(ts []sqltok.Token) string {
	var out string
	for i := 0; i < len(ts); i++ {
		kw := strings.ToLower(ts[i].Text)
		if kw != "start" && kw != "increment" {
			continue
		}
		j := i + 1
		if j < len(ts) && (strings.EqualFold(ts[j].Text, "with") || strings.EqualFold(ts[j].Text, "by")) {
			j++
		}
		sign := ""
		if j < len(ts) && ts[j].Text == "-" {
			sign, j = "-", j+1
		}
		if j < len(ts) && ts[j].Kind == sqltok.Number {
			out += " " + strings.ToUpper(kw) + " " + sign + ts[j].Text
			i = j
		}
	}
	return out
}

func tailText(span func([]sqltok.Token) string, ts []sqltok.Token) string {
	if len(ts) == 0 {
		return ""
	}
	return " " + span(ts)
}

// serialSequence is the sequence of column col of the table name (s.t or t), as PostgreSQL
// names it: <table>_<column>_seq, in the table's schema.
func serialSequence(name []sqltok.Token, col sqltok.Token) string {
	seq := pgIdent(name[len(name)-1]) + "_" + pgIdent(col) + "_seq"
	quoted := seq
	if !plainIdent(seq) {
		quoted = `"` + strings.ReplaceAll(seq, `"`, `""`) + `"`
	}
	for i := len(name) - 2; i >= 0; i-- { // the schema, s. or d.s.
		part := name[i].Text
		if i == len(name)-3 && pgIdent(name[i]) == "public" {
			part = "main" // PostgreSQL's public is main (pgschema.go)
		}
		quoted = part + quoted
	}
	return quoted
}

// plainIdent reports whether s reads as itself unquoted: lower-case letters, digits and _,
// not starting with a digit (a name ending in _seq is no keyword).
func plainIdent(s string) bool {
	for i, c := range s {
		if !('a' <= c && c <= 'z' || c == '_' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

// pgIdent is a name token's name as PostgreSQL folds it: lower case unless quoted.
func pgIdent(t sqltok.Token) string {
	if t.Kind == sqltok.QuotedIdent && len(t.Text) >= 2 && t.Text[0] == '"' {
		return strings.ReplaceAll(t.Text[1:len(t.Text)-1], `""`, `"`)
	}
	return strings.ToLower(t.Text)
}

// serialTableExists is the error of a CREATE TABLE with a serial column whose table exists
// already: DuckDB refused to drop the column's sequence, which the table uses. PostgreSQL
// says the relation exists.
func serialTableExists(err error) error {
	var qe *query.Error
	if errors.As(err, &qe) && strings.Contains(qe.Message, "Dependency Error") && strings.Contains(qe.Message, "_seq") {
		return &query.Error{Code: sqlstate.DuplicateTable, Message: "relation already exists: a table of this name has the serial column's sequence"}
	}
	return err
}
