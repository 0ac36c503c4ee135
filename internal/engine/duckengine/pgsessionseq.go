package duckengine

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strconv"
	"strings"
	"sync"
	"weak"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// currval and lastval per client session, as PostgreSQL answers them. DuckDB's currval is the
// database's: one client's nextval changes what another's currval answers, and DuckDB has no
// lastval. A PostgreSQL client's connection keeps its own (query.SessionSequences), and the
// engine notes in it every value nextval gives the client's statements:
//   - an explicit nextval('s') of the client's is run as qf_seq_took(session, 's', nextval('s')),
//     a Go function that notes the value as DuckDB computes it (a streamed SELECT included);
//   - a column's DEFAULT nextval (a serial or identity column an INSERT or a COPY FROM leaves
//     out) is read off the table's sequences before and after the INSERT, with defaultsTaking
//     held, so that no other client's INSERT takes a value between the two reads (an INSERT
//     ... RETURNING's result is whole when DuckDB answers: the lock is not held while its
//     client reads it).
// currval('s') and lastval() of the client's are then the session's values, written into the
// statement as constants (or PostgreSQL's 55000 when the session has none); a currval of a
// sequence the same statement takes a value of is left to DuckDB, which answers in the row the
// value it just gave.

// The Go functions of a session's sequences (volatile: DuckDB calls them as each row is made,
// never once when the statement is planned). Named qfpg_<PostgreSQL's name>__...: a result
// column is named as PostgreSQL names the client's call (pgFunctionName).
const (
	seqTookFunction    = macroPrefix + "nextval__took"    // (session, sequence, value): value, noted as the session's
	seqCurrvalFunction = macroPrefix + "currval__session" // (session, sequence, name): the session's currval, or 55000
	seqLastvalFunction = macroPrefix + "lastval__session" // (session): the session's lastval, or 55000
	// currval($1), nextval($1): the sequence's name is the parameter's text, read when it runs
	seqCurrvalNamedFunction = macroPrefix + "currval__named" // (session, name, exists): the session's currval, or 55000 (42P01: not exists)
	seqTookNamedFunction    = macroPrefix + "nextval__named" // (session, name, value): value, noted as the session's
	seqKeyFunction          = macroPrefix + "sequence__key"  // (name): "schema.name" (sequenceKey)
)

// defaultsTaking is held while an INSERT (or COPY FROM) of a PostgreSQL client's takes its
// table's defaults' values, from one read of their sequences to the next. One for the process:
// an INSERT of another engine's waits only as long as one INSERT runs.
var defaultsTaking sync.Mutex

// seqSessions are the sessions a statement may name to these functions, by ID. A client's
// connection owns its SessionSequences: once it is gone, so is the entry (weakly held, swept as
// the map grows).
var seqSessions struct {
	mu    sync.Mutex
	m     map[uint64]weak.Pointer[query.SessionSequences]
	sweep int // len(m) at which dead entries are swept next
}

// seqSessionID registers s for the functions and returns its ID.
func seqSessionID(s *query.SessionSequences) uint64 {
	id := s.ID()
	seqSessions.mu.Lock()
	defer seqSessions.mu.Unlock()
	if _, ok := seqSessions.m[id]; ok {
		return id
	}
	if seqSessions.m == nil {
		seqSessions.m = map[uint64]weak.Pointer[query.SessionSequences]{}
	}
	if len(seqSessions.m) >= seqSessions.sweep {
		for k, p := range seqSessions.m { //determinism:ok deleting dead entries; the order changes nothing
			if p.Value() == nil {
				delete(seqSessions.m, k)
			}
		}
		seqSessions.sweep = 2*len(seqSessions.m) + 64
	}
	seqSessions.m[id] = weak.Make(s)
	return id
}

// seqSession is the session of id; a session gone answers as one that took nothing.
func seqSession(id int64) *query.SessionSequences {
	seqSessions.mu.Lock()
	defer seqSessions.mu.Unlock()
	if s := seqSessions.m[uint64(id)].Value(); s != nil {
		return s
	}
	return new(query.SessionSequences)
}

// notYetDefined is PostgreSQL's 55000 as a Go function raises it (missingState reads the code).
func notYetDefined(message string) error {
	return errors.New(raisedPrefix + sqlstate.ObjectNotInPrerequisiteState + " " + message)
}

func init() {
	big, text := duckdb.TYPE_BIGINT, duckdb.TYPE_VARCHAR
	scalars[seqTookFunction] = scalar{in: []duckdb.Type{big, text, big}, out: big, volatile: true,
		f: func(a []driver.Value) (any, error) {
			seqSession(a[0].(int64)).Took(a[1].(string), a[2].(int64))
			return a[2], nil
		}}
	scalars[seqCurrvalFunction] = scalar{in: []duckdb.Type{big, text, text}, out: big, volatile: true,
		f: func(a []driver.Value) (any, error) {
			if v, ok := seqSession(a[0].(int64)).Currval(a[1].(string)); ok {
				return v, nil
			}
			return nil, notYetDefined(`currval of sequence "` + a[2].(string) + `" is not yet defined in this session`)
		}}
	scalars[seqLastvalFunction] = scalar{in: []duckdb.Type{big}, out: big, volatile: true,
		f: func(a []driver.Value) (any, error) {
			if v, ok := seqSession(a[0].(int64)).Lastval(); ok {
				return v, nil
			}
			return nil, notYetDefined("lastval is not yet defined in this session")
		}}
	scalars[seqCurrvalNamedFunction] = scalar{in: []duckdb.Type{big, text, duckdb.TYPE_BOOLEAN}, out: big, volatile: true,
		f: func(a []driver.Value) (any, error) {
			key, name := sequenceKey(a[1].(string))
			if v, ok := seqSession(a[0].(int64)).Currval(key); ok {
				return v, nil
			}
			if !a[2].(bool) {
				return nil, errors.New(raisedPrefix + sqlstate.UndefinedTable + ` relation "` + a[1].(string) + `" does not exist`)
			}
			return nil, notYetDefined(`currval of sequence "` + name + `" is not yet defined in this session`)
		}}
	scalars[seqKeyFunction] = scalar{in: []duckdb.Type{text}, out: text,
		f: func(a []driver.Value) (any, error) {
			key, _ := sequenceKey(a[0].(string))
			return key, nil
		}}
	scalars[seqTookNamedFunction] = scalar{in: []duckdb.Type{big, text, big}, out: big, volatile: true,
		f: func(a []driver.Value) (any, error) {
			key, _ := sequenceKey(a[1].(string))
			seqSession(a[0].(int64)).Took(key, a[2].(int64))
			return a[2], nil
		}}
}

// sequenceKey is a session's key of the sequence a regclass's text names ("schema.name",
// DuckDB's schema; main when unqualified), and its name.
func sequenceKey(regclass string) (key, name string) {
	schema, name := regclassName(regclass)
	return cmp.Or(schema, "main") + "." + name, name
}

// sequenceCalls is a PostgreSQL client's statement with its nextval('s'), currval('s') and
// lastval() calls (a literal name, ::regclass or not) written as calls of the functions above,
// naming its session; client itself when it has none. It runs before compatRequest, which
// would write a regclass cast as a subquery DuckDB's functions do not take.
func sequenceCalls(client *query.Request) (*query.Request, error) {
	if client.Sequences == nil || client.Protocol != query.ProtocolPostgres || !containsFold(client.SQL, "val") {
		return client, nil
	}
	if containsFold(client.SQL, "val__") && containsFold(client.SQL, macroPrefix) {
		// the engine's own: a client naming them could note values in another's session
		return nil, &query.Error{Code: sqlstate.UndefinedFunction, Message: "function " + seqTookFunction + " does not exist"}
	}
	toks := sqltok.Tokenize(client.SQL, sqltok.Postgres)
	var b strings.Builder
	id := ""
	session := func() string {
		if id == "" {
			id = strconv.FormatUint(seqSessionID(client.Sequences), 10)
		}
		return id
	}
	for i := 0; i < len(toks); i++ {
		if isWord(toks[i], "pg_catalog") && (i == 0 || toks[i-1].Text != ".") { // pg_catalog.nextval(...): the call without its schema
			if dot := nextSignificant(toks, i+1); dot < len(toks) && toks[dot].Text == "." {
				if fn := nextSignificant(toks, dot+1); fn < len(toks) && (isWord(toks[fn], "nextval") || isWord(toks[fn], "currval") || isWord(toks[fn], "lastval")) {
					toks[fn].Pos = -1 // read as unqualified below
					i = fn - 1
					continue
				}
			}
		}
		if key, ref, end, ok := sequenceCall(toks, i, "nextval"); ok {
			if key == "" { // a parameter
				b.WriteString(seqTookNamedFunction + "(" + session() + ", " + ref + ", nextval(" + ref + "))")
			} else {
				b.WriteString(seqTookFunction + "(" + session() + ", " + quoteString(key) + ", nextval(" + ref + "))")
			}
			i = end
			continue
		}
		if key, ref, end, ok := sequenceCall(toks, i, "currval"); ok {
			if key == "" {
				b.WriteString(seqCurrvalNamedFunction + "(" + session() + ", " + ref + ", EXISTS (SELECT 1 FROM duckdb_sequences() WHERE database_name = current_database()" +
					" AND schema_name || '.' || sequence_name = " + seqKeyFunction + "(" + ref + ")))")
			} else {
				_, name, _ := strings.Cut(key, ".")
				b.WriteString(seqCurrvalFunction + "(" + session() + ", " + quoteString(key) + ", " + quoteString(name) + ")")
			}
			i = end
			continue
		}
		if isWord(toks[i], "lastval") && (i == 0 || toks[i-1].Text != "." || toks[i].Pos < 0) {
			if j := nextSignificant(toks, i+1); j < len(toks) && toks[j].Text == "(" {
				if k := nextSignificant(toks, j+1); k < len(toks) && toks[k].Text == ")" {
					b.WriteString(seqLastvalFunction + "(" + session() + ")")
					i = k
					continue
				}
			}
		}
		b.WriteString(toks[i].Text)
	}
	if id == "" {
		return client, nil
	}
	w := *client
	w.SQL = b.String()
	return &w, nil
}

// sequenceCall reads fn('[schema.]name' [::regclass]) at toks[i] (all tokens, blanks included):
// the sequence's key ("schema.name", DuckDB's schema; main when unqualified), its name as
// DuckDB's nextval takes it, and the index of the call's ")". fn($n [::regclass|::text]) is
// read with no key and ref the parameter as text.
func sequenceCall(toks []sqltok.Token, i int, fn string) (key, ref string, end int, ok bool) {
	if !isWord(toks[i], fn) || i > 0 && toks[i-1].Text == "." && toks[i].Pos >= 0 {
		return "", "", 0, false
	}
	open := nextSignificant(toks, i+1)
	if open >= len(toks) || toks[open].Text != "(" {
		return "", "", 0, false
	}
	lit := nextSignificant(toks, open+1)
	if lit >= len(toks) || toks[lit].Kind != sqltok.String && !(toks[lit].Kind == sqltok.Param && strings.HasPrefix(toks[lit].Text, "$")) {
		return "", "", 0, false
	}
	end = nextSignificant(toks, lit+1)
	if end < len(toks) && toks[end].Text == "::" {
		if cast := nextSignificant(toks, end+1); cast < len(toks) && (isWord(toks[cast], "regclass") || toks[lit].Kind == sqltok.Param && isWord(toks[cast], "text")) {
			end = nextSignificant(toks, cast+1)
		}
	}
	if end >= len(toks) || toks[end].Text != ")" {
		return "", "", 0, false
	}
	if toks[lit].Kind == sqltok.Param {
		return "", "CAST(" + toks[lit].Text + " AS VARCHAR)", end, true
	}
	schema, name := regclassName(plainString(toks[lit].Text))
	ref = quoteIdent(name)
	if schema != "" {
		ref = quoteIdent(schema) + "." + ref
	}
	return cmp.Or(schema, "main") + "." + name, quoteString(ref), end, true
}

// defaultsWatch is an INSERT's watch of the sequences its table's defaults take values of.
type defaultsWatch struct {
	mu      *sync.Mutex // held from the first read to the second
	session *query.SessionSequences
	seqs    []watchedSequence
}

type watchedSequence struct {
	schema, name string
	before       sql.NullInt64
}

// watchDefaults starts the watch of a PostgreSQL client's INSERT (p), when its table has
// columns whose DEFAULT is a nextval: nil for any other statement. Its caller finishes it once
// DuckDB has answered (an INSERT ... RETURNING's result is whole then), before the client
// reads what it returns.
func watchDefaults(ctx context.Context, conn *sql.Conn, client *query.Request, p *prepared) *defaultsWatch {
	if client.Sequences == nil || client.Protocol != query.ProtocolPostgres || p == nil || p.kind != duckdb.STATEMENT_TYPE_INSERT {
		return nil
	}
	w, ok := readKeyWrite(p.sqlText)
	if !ok || !w.insert {
		return nil
	}
	return watchTable(ctx, conn, client.Sequences, w.schema, w.table)
}

// watchTable starts the watch of an INSERT into table schema.name (schema "": the current one)
// for session: nil when it has no DEFAULT nextval.
func watchTable(ctx context.Context, conn *sql.Conn, session *query.SessionSequences, schema, name string) *defaultsWatch {
	if session == nil {
		return nil
	}
	defaultsTaking.Lock()
	seqs, err := defaultSequences(ctx, conn, schema, name)
	if err != nil || len(seqs) == 0 {
		defaultsTaking.Unlock()
		return nil
	}
	return &defaultsWatch{mu: &defaultsTaking, session: session, seqs: seqs}
}

// defaultSequences are the sequences the DEFAULTs of table schema.name take values of, with
// their last values.
func defaultSequences(ctx context.Context, conn *sql.Conn, schema, name string) ([]watchedSequence, error) {
	rows, err := conn.QueryContext(ctx, `SELECT s.schema_name, s.sequence_name, s.last_value FROM
		(SELECT DISTINCT c.schema_name AS table_schema, regexp_extract(c.column_default, '^nextval\(''([^'']*)''', 1) AS seq
		 FROM duckdb_columns() c WHERE c.database_name = current_database() AND c.column_default LIKE 'nextval(%'
		 AND c.schema_name = coalesce(nullif(?, ''), current_schema()) AND c.table_name = ?) d
		JOIN duckdb_sequences() s ON s.database_name = current_database()
		 AND s.schema_name = CASE WHEN contains(d.seq, '.') THEN trim(string_split(d.seq, '.')[-2], '"') ELSE d.table_schema END
		 AND s.sequence_name = trim(string_split(d.seq, '.')[-1], '"')
		ORDER BY 1, 2`, schema, name)
	if err != nil {
		return nil, wrapErr(err)
	}
	defer rows.Close()
	var seqs []watchedSequence
	for rows.Next() {
		var s watchedSequence
		if err := rows.Scan(&s.schema, &s.name, &s.before); err != nil {
			return nil, wrapErr(err)
		}
		seqs = append(seqs, s)
	}
	return seqs, wrapErr(rows.Err())
}

// finish reads the watched sequences again and notes, in the client's session, each one the
// INSERT took values of; then it lets the next INSERT be watched. Nil does nothing.
func (w *defaultsWatch) finish(ctx context.Context, conn *sql.Conn) {
	if w == nil || w.mu == nil {
		return
	}
	defer w.mu.Unlock()
	w.mu = nil
	ctx = context.WithoutCancel(ctx) // a statement's timeout ended it, not what it took
	for _, s := range w.seqs {
		var after sql.NullInt64
		if conn.QueryRowContext(ctx, `SELECT last_value FROM duckdb_sequences() WHERE database_name = current_database()
			AND schema_name = ? AND sequence_name = ?`, s.schema, s.name).Scan(&after) != nil {
			continue // a failed transaction reads nothing: its client's currval is left as it was
		}
		if after.Valid && after != s.before {
			w.session.Took(s.schema+"."+s.name, after.Int64)
		}
	}
}
