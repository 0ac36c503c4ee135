package pgengine

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/sqltok"
	"github.com/queryflux/queryflux/internal/trinopg"
)

// A MySQL client's sort key that cannot be NULL goes without the NULLS mysqlNullsOrder writes:
// with NULLS FIRST on an ascending key PostgreSQL cannot read a plain btree index in order, so
// `ORDER BY id LIMIT 10` on a primary key would read and sort the whole table. A key is taken
// for one that cannot be NULL only when it names a NOT NULL column (pg_attribute's attnotnull)
// of a statement that reads one table and nothing else: one SELECT (EXPLAIN of it too), its
// FROM one table (no join, which could make the column NULL; no subquery, union, ROLLUP or
// CUBE), and no select item named as the column but another expression. Each table's NOT NULL
// columns are read once on the statement's connection and kept (notNullCache) until a
// statement through this engine changes a table's definition: CREATE, ALTER or DROP (inside a
// transaction, also at its COMMIT). A change made outside the proxy (another worker's, or
// directly on PostgreSQL) is seen when a statement written from the old definition fails
// (forgetStale): the cache is read again and the statement, outside a transaction, runs again.
//
// A column made nullable outside the proxy fails no statement: its NULLs would sort last,
// silently. So a statement outside a transaction that leaves a key without NULLS checks, as it
// runs, that the key's columns are NOT NULL still (notNullGuard: a one-time filter of the
// statement itself, no round trip more), and is refused (staleNotNull) before it reads a row
// when one is not; it then runs again written from the catalog as it is now. Inside a
// transaction a refusal would end the transaction, so the first statement of a transaction to
// sort a table reads its columns again (columnsInTx); the table it then reads is locked
// against ALTER until the transaction ends.

// notNullCache is the NOT NULL columns of the tables MySQL clients sort, by the table's
// qualified name as the statement's connection resolves it.
type notNullCache struct {
	mu     sync.Mutex
	tables map[string]tableColumns
	// boolNames are the names of the database's boolean columns, read once (see
	// boolColumnNames); nil until then.
	boolNames *columnNames
}

// tableColumns is what the cache keeps of a table: its NOT NULL columns, its boolean columns
// (mysqlboolsums.go, mysqlboolliterals.go) and its generated column (a serial or identity one,
// the first of them; mysqlinsertid.go).
type tableColumns struct {
	notNull, booleans map[string]bool
	generated         generatedColumn
	order             []string // the table's columns in order (an INSERT without its column list)
}

// notNullTablesMax bounds the tables kept: past it the cache starts again (names of tables that
// do not exist are kept too, as having no NOT NULL column).
const notNullTablesMax = 4096

// notNullSQL reads a table's columns in order ($1: its name, qualified): whether each is NOT
// NULL, boolean, generated (a serial or identity one, NOT NULL) and the generated one's sequence.
const notNullSQL = `SELECT attname, attnotnull, atttypid = 'pg_catalog.bool'::pg_catalog.regtype, g, ` +
	`CASE WHEN g THEN pg_catalog.pg_get_serial_sequence($1, attname) END FROM (SELECT attname, attnotnull, atttypid, attnum, ` +
	`attidentity <> '' OR EXISTS (SELECT 1 FROM pg_catalog.pg_attrdef d WHERE d.adrelid = attrelid AND d.adnum = attnum ` +
	`AND pg_catalog.pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%') AS g FROM pg_catalog.pg_attribute ` +
	`WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped) a ORDER BY attnum`

// columns is table's NOT NULL columns, read on db once; nil when the catalog cannot be read.
func (c *notNullCache) columns(ctx context.Context, db querier, table string) map[string]bool {
	return c.table(ctx, db, table).notNull
}

// booleans is table's boolean columns, read on db once; nil when the catalog cannot be read.
func (c *notNullCache) booleans(ctx context.Context, db querier, table string) map[string]bool {
	return c.table(ctx, db, table).booleans
}

// order is table's columns in order, read on db once; nil when the catalog cannot be read.
func (c *notNullCache) order(ctx context.Context, db querier, table string) []string {
	return c.table(ctx, db, table).order
}

// generated is table's generated column, read on db once; its name "" for none.
func (c *notNullCache) generated(ctx context.Context, db querier, table string) generatedColumn {
	return c.table(ctx, db, table).generated
}

// table is what the cache keeps of table, read on db once; empty when the catalog cannot be read.
func (c *notNullCache) table(ctx context.Context, db querier, table string) tableColumns {
	c.mu.Lock()
	cols, ok := c.tables[table]
	c.mu.Unlock()
	if ok {
		return cols
	}
	rows, err := db.Query(ctx, notNullSQL, pgx.QueryExecModeExec, table)
	if err != nil {
		return tableColumns{}
	}
	cols = tableColumns{notNull: map[string]bool{}, booleans: map[string]bool{}}
	for pos := 0; rows.Next(); pos++ {
		var name string
		var notNull, boolean, generated bool
		var seq *string
		if rows.Scan(&name, &notNull, &boolean, &generated, &seq) != nil {
			rows.Close()
			return tableColumns{}
		}
		cols.order = append(cols.order, name)
		if notNull {
			cols.notNull[name] = true
		}
		if boolean {
			cols.booleans[name] = true
		}
		if generated && cols.generated.name == "" {
			cols.generated = generatedColumn{name: name, pos: pos}
			if seq != nil {
				cols.generated.seq = *seq
			}
		}
	}
	rows.Close()
	if rows.Err() != nil {
		return tableColumns{}
	}
	c.mu.Lock()
	if c.tables == nil || len(c.tables) >= notNullTablesMax {
		c.tables = map[string]tableColumns{}
	}
	c.tables[table] = cols
	c.mu.Unlock()
	return cols
}

// boolNamesSQL reads the names of the boolean columns of every table and view but the
// catalog's own, in any schema (a MySQL client names another database's table as db.t).
const boolNamesSQL = `SELECT DISTINCT a.attname FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid ` +
	`JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE a.atttypid = 'pg_catalog.bool'::pg_catalog.regtype ` +
	`AND a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ` +
	`AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_toast%'`

// boolColumnNames are the names of the database's boolean columns, read on db once: a
// statement naming none of them has no literal mysqlBoolLiterals writes, so it is not
// tokenized nor its table looked up. nil when the catalog cannot be read.
func (c *notNullCache) boolColumnNames(ctx context.Context, db querier) *columnNames {
	c.mu.Lock()
	names := c.boolNames
	c.mu.Unlock()
	if names != nil {
		return names
	}
	rows, err := db.Query(ctx, boolNamesSQL, pgx.QueryExecModeExec)
	if err != nil {
		return nil
	}
	var list []string
	for rows.Next() {
		var name string
		if rows.Scan(&name) != nil {
			rows.Close()
			return nil
		}
		list = append(list, name)
	}
	rows.Close()
	if rows.Err() != nil {
		return nil
	}
	names = newColumnNames(list)
	c.mu.Lock()
	c.boolNames = names
	c.mu.Unlock()
	return names
}

// readInTxKey is where a connection (pgconn's CustomData) keeps the tables whose columns its
// open transaction read again (columnsInTx).
const readInTxKey = "queryflux.read_in_tx"

// columnsInTx is table's NOT NULL columns for a statement on db inside a transaction: read again
// the first time the transaction asks, kept for the rest of it.
func (c *notNullCache) columnsInTx(ctx context.Context, db querier, table string) map[string]bool {
	data := connData(db)
	if data == nil {
		return c.columns(ctx, db, table)
	}
	read, _ := data[readInTxKey].(map[string]bool)
	if !read[table] {
		if read == nil {
			read = map[string]bool{}
			data[readInTxKey] = read
		}
		read[table] = true
		c.mu.Lock()
		delete(c.tables, table)
		c.mu.Unlock()
	}
	return c.columns(ctx, db, table)
}

// connData is db's connection's CustomData; nil for the pool.
func connData(db querier) map[string]any {
	if conn, ok := db.(interface{ Conn() *pgx.Conn }); ok {
		return conn.Conn().PgConn().CustomData()
	}
	return nil
}

// staleNotNull is the setting notNullGuard reads when a column the cache has NOT NULL is not:
// there is no such setting, so PostgreSQL refuses the statement (42704, naming it).
const staleNotNull = "queryflux.stale_not_null"

// notNullGuard is edits (of the statement toks are of, which reads table alone) and the edits
// that make its WHERE check that cols of table are NOT NULL: a condition of no column, which
// PostgreSQL runs once as the statement starts (an InitPlan, a one-time filter above the scan:
// the index stays in use), reading the setting staleNotNull when one of cols is not.
func notNullGuard(toks []sqltok.Token, table string, cols []string, edits []sqltok.Edit) []sqltok.Edit {
	var g strings.Builder
	g.WriteString("CASE WHEN (SELECT pg_catalog.count(*) FROM pg_catalog.pg_attribute WHERE attrelid = '")
	g.WriteString(strings.ReplaceAll(table, "'", "''"))
	g.WriteString("'::pg_catalog.regclass AND attnotnull AND attname IN (")
	for i, col := range cols {
		if i > 0 {
			g.WriteString(", ")
		}
		g.WriteString("'" + strings.ReplaceAll(col, "'", "''") + "'")
	}
	g.WriteString(")) = " + strconv.Itoa(len(cols)) + " THEN true ELSE pg_catalog.current_setting('" + staleNotNull + "')::pg_catalog.bool END")
	from, where, end, depth := -1, -1, len(toks), 0
scan:
	for i, t := range toks {
		depth += sqltok.ParenStep(t)
		switch {
		case depth != 0:
		case from < 0:
			if t.IsWord("from") {
				from = i
			}
		case t.IsWord("where") && where < 0:
			where = i
		case t.Text == ";" || t.IsWord("group", "having", "window", "order", "limit", "offset", "fetch", "for"):
			end = i
			break scan
		}
	}
	if from < 0 || end <= from+1 {
		return edits
	}
	var guard []sqltok.Edit
	if where >= 0 {
		guard = []sqltok.Edit{{From: tokEnd(toks[where]), To: tokEnd(toks[where]), Text: " " + g.String() + " AND ("},
			{From: tokEnd(toks[end-1]), To: tokEnd(toks[end-1]), Text: ")"}}
	} else {
		guard = []sqltok.Edit{{From: tokEnd(toks[end-1]), To: tokEnd(toks[end-1]), Text: " WHERE " + g.String()}}
	}
	edits = append(guard, edits...)
	slices.SortStableFunc(edits, func(a, b sqltok.Edit) int { return cmp.Compare(a.From, b.From) })
	return edits
}

// forget drops what the cache keeps: a table's definition may have changed.
func (c *notNullCache) forget() {
	c.mu.Lock()
	c.tables = nil
	c.boolNames = nil
	c.mu.Unlock()
}

// forgetStale drops what the cache keeps when err is PostgreSQL's refusal of a statement
// written from a table's definition that changed under the cache (through another worker or
// directly on PostgreSQL), and reports whether it did: an integer where a boolean goes, or a
// boolean where an integer now goes (42804; 42883: no boolean = integer operator), a column
// no longer there (42703: a generated column returned by its old name), NULL left in a
// generated column's new place (23502), a value for an identity column that refuses one
// (428C9), or notNullGuard's refusal of a column no longer NOT NULL (42704 naming staleNotNull).
func (c *notNullCache) forgetStale(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code {
	case "42804", "42883", "42703", "23502", "428C9":
		c.forget()
		return true
	case "42704":
		if strings.Contains(pe.Message, staleNotNull) {
			c.forget()
			return true
		}
	}
	return false
}

// ddlInTxKey marks a connection (pgconn's CustomData) whose open transaction changed a table's
// definition: its COMMIT makes the change seen, and the cache forgets again.
const ddlInTxKey = "queryflux.ddl_in_tx"

// followCommand keeps the cache right after a statement without rows ran on db (tag: its
// command tag).
func (c *notNullCache) followCommand(db querier, tag string) {
	word, _, _ := strings.Cut(tag, " ")
	data := connData(db)
	switch word {
	case "CREATE", "ALTER", "DROP":
		c.forget()
		if data != nil {
			data[ddlInTxKey] = true
		}
	case "COMMIT":
		if data != nil && data[ddlInTxKey] != nil {
			c.forget()
		}
		delete(data, ddlInTxKey)
		delete(data, readInTxKey)
	case "ROLLBACK":
		delete(data, ddlInTxKey)
		delete(data, readInTxKey)
	}
}

// oneTable is the table toks (a statement's significant tokens, PostgreSQL's) reads when it
// reads one table and nothing else (see above): its qualified name as to_regclass reads it (an
// unqualified one in schema, the client's database; "" when it has none), and the names a
// column of it may be qualified with (the table's, or its alias). With searchPath an
// unqualified name in no database is the table's name alone, as the connection's search_path
// finds it. ok is false for any other statement.
func oneTable(toks []sqltok.Token, schema string, searchPath bool) (table string, qualifiers []string, ok bool) {
	if len(toks) < 4 {
		return "", nil, false
	}
	start := 0
	if toks[0].IsWord("explain") {
		start = 1
	}
	if !toks[start].IsWord("select") {
		return "", nil, false
	}
	from := -1
	for i, t := range toks[start+1:] {
		switch {
		case t.IsWord("select", "join", "union", "intersect", "except", "rollup", "cube", "grouping", "lateral"):
			return "", nil, false
		case t.IsWord("from"):
			if from >= 0 {
				return "", nil, false
			}
			from = start + 1 + i
		}
	}
	if from < 0 || from+1 >= len(toks) {
		return "", nil, false
	}
	name := toks[from+1 : from+2]
	i := from + 2
	if i+1 < len(toks) && toks[i].Text == "." {
		name, i = toks[from+1:i+2], i+2
	}
	for _, t := range name {
		if t.Text != "." && t.Kind != sqltok.Word && t.Kind != sqltok.QuotedIdent {
			return "", nil, false
		}
	}
	qualifiers = []string{identName(name[len(name)-1])}
	if i < len(toks) && toks[i].IsWord("as") {
		i++
	}
	if i < len(toks) && (toks[i].Kind == sqltok.QuotedIdent || toks[i].Kind == sqltok.Word && !aliasStops[strings.ToLower(toks[i].Text)]) {
		qualifiers, i = []string{identName(toks[i])}, i+1
	}
	if i < len(toks) && !endsFrom(toks[i]) && toks[i].Text != ";" {
		return "", nil, false
	}
	if len(name) == 1 {
		if schema == "" {
			return quoteIdent(identName(name[0])), qualifiers, searchPath
		}
		return quoteIdent(schema) + "." + quoteIdent(identName(name[0])), qualifiers, true
	}
	return quoteIdent(identName(name[0])) + "." + quoteIdent(identName(name[2])), qualifiers, true
}

// endsFrom reports whether t may follow a FROM's one table (mysqlnames.go's fromEnds, and
// PostgreSQL's OFFSET and FETCH).
func endsFrom(t sqltok.Token) bool {
	return t.Kind == sqltok.Word && (fromEnds[strings.ToLower(t.Text)] || t.IsWord("offset", "fetch"))
}

// identName is the name a Word or a QuotedIdent token stands for in PostgreSQL.
func identName(t sqltok.Token) string {
	if t.Kind == sqltok.QuotedIdent {
		return strings.ReplaceAll(t.Text[1:len(t.Text)-1], `""`, `"`)
	}
	return strings.ToLower(t.Text)
}

func quoteIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// keyColumn is the column key names (a bare or qualified column of the one table), "" for any
// other key.
func keyColumn(toks []sqltok.Token, k trinopg.SortKey, qualifiers []string) string {
	switch {
	case k.Hi == k.Lo+1 && (toks[k.Lo].Kind == sqltok.Word || toks[k.Lo].Kind == sqltok.QuotedIdent):
		return identName(toks[k.Lo])
	case k.Hi == k.Lo+3 && toks[k.Lo+1].Text == "." && toks[k.Lo+2].Kind != sqltok.Operator:
		for _, q := range qualifiers {
			if identName(toks[k.Lo]) == q {
				return identName(toks[k.Lo+2])
			}
		}
	}
	return ""
}

// namedOtherwise reports whether a select item of toks (the one SELECT's) other than the
// column itself ends with the name col (an alias, which ORDER BY would sort by instead).
func namedOtherwise(toks []sqltok.Token, col string) bool {
	depth, start := 0, -1
	for i, t := range toks {
		if start < 0 {
			if t.IsWord("select") {
				start = i + 1
			}
			continue
		}
		depth += sqltok.ParenStep(t)
		if depth != 0 || t.Text != "," && !t.IsWord("from") {
			continue
		}
		item := toks[start:i]
		if n := len(item); n > 0 && (item[n-1].Kind == sqltok.Word || item[n-1].Kind == sqltok.QuotedIdent) && identName(item[n-1]) == col &&
			n != 1 && (n != 3 || item[1].Text != ".") {
			return true
		}
		if t.IsWord("from") {
			return false
		}
		start = i + 1
	}
	return false
}
