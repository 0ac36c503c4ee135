package duckengine

import (
	"context"
	"database/sql"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's INSERT into a table with an AUTO_INCREMENT column (mysqlddl.go) gets the
// ids MariaDB (InnoDB, innodb_autoinc_lock_mode 1) gives:
//   - a row whose column is omitted, NULL, 0 or DEFAULT takes the table's next value; an
//     explicit value at or above it moves the counter past it, so the next generated id is
//     max+1 and never collides with it;
//   - a multi-row INSERT reserves as many values as it has rows the first time it needs one,
//     and as many as it has rows left when an explicit value ran past its reservation, as
//     InnoDB does (the values reserved and not used are lost, as there);
//   - the OK packet's insert id is the first generated id, or, when none was generated, the
//     last explicit value; LAST_INSERT_ID() takes only a generated one (insertTag's tag).
//
// The counter is the column's sequence (its DEFAULT nextval), and an offset in the sequence's
// comment: DuckDB cannot set a sequence, so a counter moved by less than aiConsumeMax is moved
// by taking values, and by more, by raising the offset the ids a MySQL client's INSERT gets
// are computed with. The ids are computed before the INSERT runs and written into it; an
// INSERT whose values are not plain (literals, NULL, DEFAULT, a parameter) runs as written,
// its missing ids from the column's DEFAULT, and moves the counter past the largest id it
// returned.

// aiConsumeMax is how far the counter is moved by taking sequence values (about 0.1 µs each).
const aiConsumeMax = 1 << 16

// aiColumn is a table's AUTO_INCREMENT column.
type aiColumn struct {
	name    string   // its name
	seq     string   // its sequence, as nextval names it
	columns []string // the table's columns, in order
	// timeDefaults are the columns whose DEFAULT is the current time, and that DEFAULT
	// (mysqlnowdefault.go).
	timeDefaults []timeDefault
}

// aiInsert is how a MySQL client's INSERT into a table with an AUTO_INCREMENT column runs.
type aiInsert struct {
	conn *sql.Conn
	col  aiColumn
	// planned: the ids were computed and written into the statement; okID and generated say
	// what its OK packet carries. Otherwise they come from what the statement returns, and
	// unless byDefault (every id from the column's DEFAULT, which InnoDB's counter would
	// give) the counter moves past them.
	planned, byDefault bool
	okID               uint64
	generated          bool
	// fromSelect: an INSERT ... SELECT whose ids are all generated, from selectStart on;
	// InnoDB reserves them 1, 2, 4, ... at a time (selectReserved).
	fromSelect  bool
	selectStart int64
	// refused is what a refusal of the statement needs to spend the ids MariaDB spends
	// (mysqlaispent.go); nil when its rows were not read.
	refused *aiRefusal
}

// mysqlInsert is q (a MySQL client's, as compatRequest wrote it) as it runs when it is an
// INSERT (or a REPLACE) into a table with an AUTO_INCREMENT column (ai non-nil), returning that column for
// insertTag.
func mysqlInsert(ctx context.Context, conn *sql.Conn, client, q *query.Request) (*query.Request, *aiInsert) {
	if !isMySQL(client) || !sqltok.FirstKeywordIs(client.SQL, sqltok.MySQL, "insert", "replace") {
		return q, nil
	}
	db, table, ok := insertTarget(sqltok.SignificantTokens(client.SQL, sqltok.MySQL))
	if !ok {
		return q, nil
	}
	col, ok := cachedAI(ctx, conn, db, table)
	q = pinTimeDefaults(ctx, q, col) // mysqlnowdefault.go
	if !ok || idsGiven(ctx) {
		return q, nil // no such column, or no such table: the INSERT says so itself
	}
	ai := &aiInsert{conn: conn, col: col}
	planned, ok := ai.plan(ctx, client, q)
	if !ok {
		noteUnplanned(ctx) // mysqlstmtundo.go
	}
	q = planned
	c := *q
	c.SQL = strings.TrimRight(strings.TrimSpace(q.SQL), ";") + " RETURNING " + quoteIdent(col.name)
	return &c, ai
}

// lookupAI finds the AUTO_INCREMENT column of table db.table (db "": the current database).
func lookupAI(ctx context.Context, conn *sql.Conn, db, table string) (aiColumn, bool) {
	col, ok, _ := readAI(ctx, conn, db, table)
	return col, ok
}

// readAI is lookupAI, with the error that left the answer unknown.
func readAI(ctx context.Context, conn *sql.Conn, db, table string) (aiColumn, bool, error) {
	rows, err := conn.QueryContext(ctx, "SELECT column_name, coalesce(column_default, '') FROM duckdb_columns() WHERE "+
		inSchema("database_name", "schema_name", db)+" AND lower(table_name) = lower(?) ORDER BY column_index", table)
	if err != nil {
		return aiColumn{}, false, err
	}
	defer rows.Close()
	var col aiColumn
	for rows.Next() {
		var name, dflt string
		if err := rows.Scan(&name, &dflt); err != nil {
			return aiColumn{}, false, err
		}
		col.columns = append(col.columns, name)
		if isTimeDefault(dflt) {
			col.timeDefaults = append(col.timeDefaults, timeDefault{name, dflt})
		}
		if seq, ok := strings.CutPrefix(dflt, "nextval('"); ok && col.name == "" && strings.Contains(seq, aiPrefix) {
			if end := strings.Index(seq, "'"); end > 0 {
				col.name, col.seq = name, seq[:end]
			}
		}
	}
	if err := rows.Err(); err != nil {
		return aiColumn{}, false, err
	}
	return col, col.name != "", nil
}

// counter is the state of an AUTO_INCREMENT column's counter.
type counter struct {
	next   int64 // the value the sequence gives next
	offset int64 // what a MySQL client's generated ids add to the sequence's values
}

// value is the id the counter gives next.
func (c counter) value() int64 { return c.next + c.offset }

// readCounter reads the counter of the sequence seq.
func readCounter(ctx context.Context, conn *sql.Conn, seq string) (counter, error) {
	db, name := "", seq
	if i := strings.LastIndexByte(seq, '.'); i >= 0 {
		db, name = seq[:i], seq[i+1:]
	}
	var c counter
	var comment sql.NullString
	err := conn.QueryRowContext(ctx, "SELECT coalesce(last_value + increment_by, start_value), comment FROM duckdb_sequences() WHERE "+
		inSchema("database_name", "schema_name", db)+" AND sequence_name = ?", name).Scan(&c.next, &comment)
	if err != nil {
		return counter{}, err
	}
	c.offset, _ = strconv.ParseInt(strings.TrimPrefix(comment.String, aiOffsetComment), 10, 64)
	return c, nil
}

// aiOffsetComment starts the comment of a sequence whose ids are offset.
const aiOffsetComment = "queryflux auto_increment offset "

// moveTo moves the counter c of sequence seq to at least target.
func moveTo(ctx context.Context, conn *sql.Conn, seq string, c *counter, target int64) error {
	d := target - c.value()
	switch {
	case d <= 0:
		return nil
	case d <= aiConsumeMax:
		var last int64
		err := conn.QueryRowContext(ctx, "SELECT max(nextval("+sqltok.StandardString(seq)+")) FROM range("+strconv.FormatInt(d, 10)+")").Scan(&last)
		if err != nil {
			return err
		}
		c.next = last + 1
		return nil
	}
	_, err := conn.ExecContext(ctx, "COMMENT ON SEQUENCE "+seq+" IS "+sqltok.StandardString(aiOffsetComment+strconv.FormatInt(c.offset+d, 10)))
	if err == nil {
		c.offset += d
	}
	return err
}

// reserve takes n values of the counter c of sequence seq: the first of them (they follow
// each other unless another connection took some at the same time).
func reserve(ctx context.Context, conn *sql.Conn, seq string, c *counter, n int64) (int64, error) {
	if id, ok := replayedID(ctx); ok { // the statement runs again, with the ids it had (mysqlstmtundo.go)
		return id, nil
	}
	var first, last int64
	err := conn.QueryRowContext(ctx, "SELECT min(v), max(v) FROM (SELECT nextval("+sqltok.StandardString(seq)+") AS v FROM range("+
		strconv.FormatInt(n, 10)+"))").Scan(&first, &last)
	if err != nil {
		return 0, err
	}
	c.next = last + 1
	noteID(ctx, first+c.offset)
	return first + c.offset, nil
}

// insertValues is an INSERT ... VALUES as read from its tokens.
type insertValues struct {
	columns   []sqltok.Token     // its column list, names only; nil without one
	closeCols sqltok.Token       // the column list's ")"
	rows      [][][]sqltok.Token // each row's values (their tokens), the parentheses left out
	closeRows []sqltok.Token     // each row's ")"
	openRows  []int              // where each row's "(" is
	aiSlot    int                // the AUTO_INCREMENT column's place in a row; -1 when it is not given
	table     [2]int             // where the table's name starts and ends
}

// readValues reads toks (a MySQL client's INSERT as DuckDB runs it) as INSERT [modifiers]
// name [(columns)] VALUES (row), ...; ok is false for any other form.
func readValues(toks []sqltok.Token, col aiColumn) (v insertValues, ok bool) {
	i := afterInsertModifiers(toks)
	if i < len(toks) && toks[i].IsWord("into") {
		i++
	}
	if i < len(toks) {
		v.table[0] = toks[i].Pos
	}
	for i < len(toks) && toks[i].Text != "(" && !toks[i].IsWord("values", "value") {
		i++
	}
	if i < len(toks) {
		v.table[1] = toks[i].Pos
	}
	if i < len(toks) && toks[i].Text == "(" {
		for i++; i < len(toks) && toks[i].Text != ")"; i++ {
			if toks[i].Text != "," {
				v.columns = append(v.columns, toks[i])
			}
		}
		if i == len(toks) {
			return v, false
		}
		v.closeCols = toks[i]
		i++
	}
	if i >= len(toks) || !toks[i].IsWord("values", "value") {
		return v, false
	}
	width := len(col.columns)
	v.aiSlot = -1
	if v.columns == nil {
		for j, name := range col.columns {
			if name == col.name {
				v.aiSlot = j
			}
		}
	} else {
		width = len(v.columns)
		for j, t := range v.columns {
			if strings.EqualFold(unquoteIdent(t), col.name) {
				v.aiSlot = j
			}
		}
	}
	for i++; i < len(toks); i++ {
		if toks[i].Text != "(" {
			return v, false
		}
		defs, end := definitions(toks, i)
		if end < 0 || len(defs) != width {
			return v, false
		}
		v.rows, v.closeRows, v.openRows = append(v.rows, defs), append(v.closeRows, toks[end]), append(v.openRows, toks[i].Pos)
		i = end + 1
		if i == len(toks) || toks[i].Text == ";" && i == len(toks)-1 {
			return v, len(v.rows) > 0
		}
		if toks[i].Text != "," {
			return v, false
		}
	}
	return v, false
}

// rowValue is what a row gives its AUTO_INCREMENT column: generate is true for nothing, NULL,
// 0 or DEFAULT; else explicit is the value; ok is false for a value not read before it runs.
func rowValue(def []sqltok.Token, args []any, paramAt int) (explicit int64, generate, ok bool) {
	switch {
	case len(def) == 1 && def[0].IsWord("null", "default"):
		return 0, true, true
	case len(def) == 1 && def[0].Kind == sqltok.Param:
		var n int
		if strings.HasPrefix(def[0].Text, "$") {
			n, _ = strconv.Atoi(def[0].Text[1:])
			n--
		} else if def[0].Text == "?" {
			n = paramAt
		} else {
			return 0, false, false
		}
		if n < 0 || n >= len(args) {
			return 0, false, false
		}
		return argValue(args[n])
	case len(def) == 1 && def[0].Kind == sqltok.String && !def[0].Unterminated && strings.HasPrefix(def[0].Text, "'"):
		return intValue(strings.ReplaceAll(def[0].Text[1:len(def[0].Text)-1], "''", "'"))
	case len(def) == 1 && def[0].Kind == sqltok.Number:
		return intValue(def[0].Text)
	case len(def) == 2 && def[1].Kind == sqltok.Number && (def[0].Text == "-" || def[0].Text == "+"):
		return intValue(def[0].Text + def[1].Text)
	}
	return 0, false, false
}

// argValue is rowValue's for a bound parameter.
func argValue(a any) (explicit int64, generate, ok bool) {
	switch a := a.(type) {
	case nil:
		return 0, true, true
	case int64:
		return a, a == 0, true
	case int:
		return int64(a), a == 0, true
	case int32:
		return int64(a), a == 0, true
	case int16:
		return int64(a), a == 0, true
	case int8:
		return int64(a), a == 0, true
	case uint32:
		return int64(a), a == 0, true
	case uint16:
		return int64(a), a == 0, true
	case uint8:
		return int64(a), a == 0, true
	case float64: // a JavaScript client's number
		if a != math.Trunc(a) || math.Abs(a) > 1<<53 {
			return 0, false, false
		}
		return int64(a), a == 0, true
	case uint64:
		if a > math.MaxInt64 {
			return 0, false, false
		}
		return int64(a), a == 0, true
	case string:
		return intValue(a)
	case []byte:
		return intValue(string(a))
	}
	return 0, false, false
}

// intValue is rowValue's for an integer written as text.
func intValue(s string) (explicit int64, generate, ok bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, false, false
	}
	return n, n == 0, true
}

// plan computes the ids of q's rows and writes them into it (ok), when q is an INSERT ...
// VALUES whose AUTO_INCREMENT values are plain; the counter moves as InnoDB's does. A plain
// INSERT ... SELECT that leaves the column out (planSelect) is not planned, its ids from the
// counter on.
func (ai *aiInsert) plan(ctx context.Context, client, q *query.Request) (*query.Request, bool) {
	toks := sqltok.SignificantTokens(q.SQL, sqltok.Generic)
	v, ok := readValues(toks, ai.col)
	c, err := readCounter(ctx, ai.conn, ai.col.seq)
	if err != nil {
		return q, false
	}
	if !ok {
		return ai.planSelect(client, q, toks, c), false
	}
	if v.aiSlot < 0 && c.offset == 0 && !recordingIDs(ctx) { // recorded: the ids written in, to be given again (mysqlstmtundo.go)
		ai.byDefault = true // the column's DEFAULT gives each row the id InnoDB would
		ai.refused = &aiRefusal{text: q.SQL, args: len(q.Args), start: c.value(), explicit: make([]int64, len(v.rows)), generate: make([]bool, len(v.rows))}
		for r := range ai.refused.generate {
			ai.refused.generate[r] = true
		}
		return q, false
	}
	explicit := make([]int64, len(v.rows))
	generate := make([]bool, len(v.rows))
	params := 0
	for r, row := range v.rows {
		for s, d := range row {
			if s == v.aiSlot {
				var ok bool
				explicit[r], generate[r], ok = rowValue(d, q.Args, params)
				if !ok {
					return q, false
				}
			}
			for _, t := range d {
				if t.Kind == sqltok.Param {
					params++
				}
			}
		}
		if v.aiSlot < 0 {
			generate[r] = true
		}
	}
	start := c.value()
	ids, err := ai.assign(ctx, &c, explicit, generate)
	if err != nil {
		return q, false
	}
	var b strings.Builder
	at := 0
	write := func(upTo int, text string) {
		b.WriteString(q.SQL[at:upTo])
		b.WriteString(text)
		at = upTo
	}
	if v.aiSlot < 0 {
		write(v.closeCols.Pos, ", "+quoteIdent(ai.col.name))
	}
	for r, row := range v.rows {
		if !generate[r] {
			continue
		}
		id := strconv.FormatInt(ids[r], 10)
		if v.aiSlot < 0 {
			write(v.closeRows[r].Pos, ", "+id)
			continue
		}
		d := row[v.aiSlot]
		start, end := d[0].Pos, d[len(d)-1].Pos+len(d[len(d)-1].Text)
		if d[len(d)-1].Kind == sqltok.Param {
			id = "coalesce(" + id + ", " + d[len(d)-1].Text + ")" // the client's parameter stays bound
		}
		write(start, id)
		at = end
	}
	b.WriteString(q.SQL[at:])
	planned := *q
	planned.SQL = b.String()
	ai.planned = true
	ai.refused = &aiRefusal{text: planned.SQL, args: len(q.Args), start: start, explicit: explicit, generate: generate}
	return &planned, true
}

// planSelect is q, a plain INSERT ... SELECT (its tokens toks) that leaves the AUTO_INCREMENT
// column out, as it runs: its rows take the ids from the counter c on (the column's DEFAULT
// gives them; with the counter offset, the offset is added to the sequence's values in the
// SELECT's stead), and insertTag moves the counter past what InnoDB reserved for them. Any
// other INSERT is q as it is.
func (ai *aiInsert) planSelect(client, q *query.Request, toks []sqltok.Token, c counter) *query.Request {
	if !sqltok.FirstKeywordIs(client.SQL, sqltok.MySQL, "insert") || isInsertIgnore(client.SQL) || len(toks) < 3 || !toks[1].IsWord("into") {
		return q
	}
	i := 3
	if i+1 < len(toks) && toks[i].Text == "." {
		i += 2
	}
	if i >= len(toks) || toks[i].Text != "(" || i+1 < len(toks) && toks[i+1].IsWord("select", "with") {
		return q // no column list: the SELECT gives the column
	}
	cols, end := definitions(toks, i)
	if end < 0 || end+1 >= len(toks) {
		return q
	}
	for _, d := range cols {
		if len(d) != 1 || strings.EqualFold(unquoteIdent(d[0]), ai.col.name) {
			return q
		}
	}
	from := toks[end+1]
	if !from.IsWord("select", "with") && from.Text != "(" {
		return q
	}
	for _, t := range toks[end+1:] {
		if t.IsWord("conflict", "duplicate", "returning") {
			return q
		}
	}
	ai.fromSelect, ai.selectStart = true, c.value()
	if c.offset == 0 {
		return q
	}
	body := strings.TrimRight(strings.TrimSpace(q.SQL[from.Pos:]), ";")
	w := *q
	w.SQL = q.SQL[:toks[end].Pos] + ", " + quoteIdent(ai.col.name) + ") SELECT qf_ai_rows.*, nextval(" + sqltok.StandardString(ai.col.seq) + ") + " +
		strconv.FormatInt(c.offset, 10) + " FROM (" + body + ") AS qf_ai_rows"
	return &w
}

// selectReserved is how many values InnoDB reserves for n generated ids of a statement whose
// rows it does not count first (INSERT ... SELECT): 1, 2, 4, ... at a time.
func selectReserved(n int64) int64 {
	var total int64
	for i := 0; total < n; i++ {
		total += reservation(i)
	}
	return total
}

// reservation is the number of values InnoDB reserves after intervals reservations of a
// statement, or at the first of one whose rows it does not count
// (handler::update_auto_increment's nb_desired_values).
func reservation(intervals int) int64 {
	return min(int64(1)<<min(intervals, 16), 65535)
}

// assign gives each row its id as InnoDB does (explicit[r] for a row that does not generate
// one), moving the counter c, and sets what the OK packet carries.
func (ai *aiInsert) assign(ctx context.Context, c *counter, explicit []int64, generate []bool) ([]int64, error) {
	seq := ai.col.seq
	ids, high, err := assignIDs(c.value(), explicit, generate, len(explicit), func(high, n int64) (int64, error) {
		if err := moveTo(ctx, ai.conn, seq, c, high); err != nil {
			return 0, err
		}
		return reserve(ctx, ai.conn, seq, c, n)
	})
	if err != nil {
		return nil, err
	}
	for r, id := range ids {
		if generate[r] {
			ai.okID, ai.generated = uint64(id), true
			break
		}
		ai.okID = uint64(id)
	}
	return ids, moveTo(ctx, ai.conn, seq, c, high)
}

// assignIDs is InnoDB's ids for the first rows of a statement's (explicit[r] for a row that
// does not generate one) from the counter at start; take(high, n) reserves n values with the
// counter at high at least, answering the first. high is the counter after those rows.
func assignIDs(start int64, explicit []int64, generate []bool, rows int, take func(high, n int64) (int64, error)) (ids []int64, high int64, err error) {
	ids = make([]int64, rows)
	// high is InnoDB's table counter; next, end: the handler's next id and the end of the
	// values it reserved (next 0: none yet); left: InnoDB's n_autoinc_rows, the statement's
	// rows at its first reservation, less one a row written since; reserved: the end of its
	// last reservation.
	high = start
	var next, end, left, reserved int64
	for r := range rows {
		if generate[r] {
			if next == 0 || next >= end {
				if left == 0 {
					left = int64(len(explicit)) // InnoDB's first reservation: the statement's rows, however many are written
				}
				first, err := take(high, left)
				if err != nil {
					return nil, 0, err
				}
				next, end, reserved = first, first+left, first+left
				high = max(high, end)
			}
			ids[r] = next
			next++
		} else {
			v := explicit[r]
			ids[r] = v
			if next > 0 && v >= next {
				next = v + 1
			}
			if v >= reserved && v > 0 {
				high = max(high, v+1)
			}
		}
		if left > 0 {
			left--
		}
	}
	return ids, high, nil
}

// insertTag reads what an INSERT ... RETURNING (mysqlInsert) returned: the statement's
// command tag, with the OK packet's insert id where PostgreSQL's has an oid: "INSERT 5 2"
// when 5 was generated (LAST_INSERT_ID() takes it), "INSERT explicit:7 1" when the rows had
// their ids given (the last one). An INSERT whose ids were not computed before it ran moves
// the counter past the largest it returned.
func (ai *aiInsert) insertTag(ctx context.Context, rows query.Rows) (query.Rows, error) {
	defer rows.Close()
	var first, largest int64
	smallest := int64(math.MaxInt64)
	n := 0
	for {
		b, err := rows.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		for r := 0; r < int(b.NumRows()); r++ {
			if !b.Column(0).IsValid(r) {
				continue
			}
			id, err := strconv.ParseInt(b.Column(0).ValueStr(r), 10, 64)
			if err != nil {
				continue
			}
			if n == 0 && r == 0 {
				first = id
			}
			largest, smallest = max(largest, id), min(smallest, id)
		}
		n += int(b.NumRows())
	}
	if n == 0 {
		return engine.TagRows("INSERT 0 0"), nil // nothing inserted (INSERT IGNORE): no insert id, as MySQL's
	}
	if ai.planned {
		if !ai.generated {
			return engine.TagRows("INSERT explicit:" + strconv.FormatUint(ai.okID, 10) + " " + strconv.Itoa(n)), nil
		}
		return engine.TagRows("INSERT " + strconv.FormatUint(ai.okID, 10) + " " + strconv.Itoa(n)), nil
	}
	if ai.fromSelect {
		c, err := readCounter(ctx, ai.conn, ai.col.seq)
		if err != nil {
			return nil, err
		}
		if err := moveTo(ctx, ai.conn, ai.col.seq, &c, max(ai.selectStart+selectReserved(int64(n)), largest+1)); err != nil {
			return nil, err
		}
		return engine.TagRows("INSERT " + strconv.FormatInt(smallest, 10) + " " + strconv.Itoa(n)), nil
	}
	if ai.byDefault {
		return engine.TagRows("INSERT " + strconv.FormatInt(first, 10) + " " + strconv.Itoa(n)), nil
	}
	if c, err := readCounter(ctx, ai.conn, ai.col.seq); err == nil && largest >= c.value() {
		_ = moveTo(ctx, ai.conn, ai.col.seq, &c, largest+1) // the rows are in: a counter not moved only risks a later collision
	}
	return engine.TagRows("INSERT " + strconv.FormatInt(first, 10) + " " + strconv.Itoa(n)), nil
}

// unquoteIdent is a name token of DuckDB's as the name it is.
func unquoteIdent(t sqltok.Token) string {
	if t.Kind == sqltok.QuotedIdent && len(t.Text) >= 2 && t.Text[0] == '"' {
		return strings.ReplaceAll(t.Text[1:len(t.Text)-1], `""`, `"`)
	}
	return identText(t)
}
