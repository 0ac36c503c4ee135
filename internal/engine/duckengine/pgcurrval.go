package duckengine

import (
	"cmp"
	"database/sql"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// currval after setval, as PostgreSQL answers it. setval moves a DuckDB sequence by taking its
// values, or creates it again (pgsetval.go), so DuckDB's currval would then answer the last
// value taken (n - 1 after setval(s, n, false), where PostgreSQL keeps the value the sequence
// gave before) or no value at all (a sequence created again, where PostgreSQL answers n). The
// engine keeps, per sequence, what currval answers while DuckDB's last value is still the one
// setval left; a PostgreSQL client's currval('name') is written so (currvalCall), when the
// client has no session of its own (query.Request.Sequences: pgsessionseq.go answers it then).

// currvalNote is what currval of sequence schema.name returns while DuckDB's last value for it
// is whileLast (NULL: none): the value in answer, or, when answer is NULL, PostgreSQL's 55000
// error (currval of a sequence nextval has not given a value). uncalled marks a setval(s, n, false): answer is then the value
// currval returned before it, and lastBefore is DuckDB's last value at that time.
type currvalNote struct {
	schema, name      string
	whileLast, answer sql.NullInt64
	uncalled          bool
	lastBefore        sql.NullInt64
}

// currvalNotes are an engine's notes, by "schema.name".
type currvalNotes struct {
	mu    sync.Mutex
	notes map[string]currvalNote
	n     atomic.Int32 // len(notes), read without the lock on every statement
}

func (c *currvalNotes) note(n currvalNote) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.notes == nil {
		c.notes = map[string]currvalNote{}
	}
	key := n.schema + "." + n.name
	if n.uncalled {
		n.answer = n.lastBefore // what DuckDB's currval answered, unless a note answered it
		if old, ok := c.notes[key]; ok && old.whileLast == n.lastBefore {
			n.answer = old.answer
		}
	}
	c.notes[key] = n
	c.n.Store(int32(len(c.notes)))
}

// written is q (client's statement as compatRequest wrote it) with each currval('[schema.]name')
// of a noted sequence written as the noted answer while it holds; q itself for any other.
func (c *currvalNotes) written(client, q *query.Request) *query.Request {
	if c.n.Load() == 0 || client.Protocol != query.ProtocolPostgres || client.Sequences != nil || !containsFold(q.SQL, "currval") {
		return q
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	toks := sqltok.Tokenize(q.SQL, sqltok.Postgres)
	var b strings.Builder
	for i := 0; i < len(toks); i++ {
		if text, end, ok := c.currvalCall(toks, i); ok {
			b.WriteString(text)
			i = end
			continue
		}
		b.WriteString(toks[i].Text)
	}
	if b.String() == q.SQL {
		return q
	}
	w := *q
	w.SQL = b.String()
	return &w
}

// currvalCall reads currval('name') at toks[i] (its ")" at end): the expression answering it
// when name is noted.
func (c *currvalNotes) currvalCall(toks []sqltok.Token, i int) (text string, end int, ok bool) {
	if !isWord(toks[i], "currval") || i+3 >= len(toks) || toks[i+1].Text != "(" || toks[i+2].Kind != sqltok.String || toks[i+3].Text != ")" {
		return "", 0, false
	}
	schema, name := regclassName(plainString(toks[i+2].Text))
	n, ok := c.notes[cmp.Or(schema, "main")+"."+name]
	if !ok {
		return "", 0, false
	}
	answer := "error('currval of sequence \"" + strings.ReplaceAll(name, "'", "''") + "\" is not yet defined in this session')"
	if n.answer.Valid {
		answer = strconv.FormatInt(n.answer.Int64, 10)
	}
	ref := quoteString(quoteIdent(n.schema) + "." + quoteIdent(n.name))
	if n.whileLast.Valid { // DuckDB's own currval, evaluated where the client's is (after a nextval in the same row)
		return "(CASE WHEN currval(" + ref + ") = " + strconv.FormatInt(n.whileLast.Int64, 10) + " THEN " + answer +
			" ELSE currval(" + ref + ") END)", i + 3, true
	}
	// no value taken since the sequence was created again: DuckDB's currval would fail
	return "(CASE WHEN (SELECT last_value FROM duckdb_sequences() WHERE database_name = current_database() AND schema_name = " +
		quoteString(n.schema) + " AND sequence_name = " + quoteString(n.name) + ") IS NULL THEN " + answer +
		" ELSE currval(" + ref + ") END)", i + 3, true
}
