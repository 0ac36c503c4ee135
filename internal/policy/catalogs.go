package policy

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// On a MySQL or MariaDB engine a catalog is a database, and a statement reaches any database
// by naming it (`SELECT * FROM other.t`), whatever database its session is in. An access rule
// that lists catalogs must therefore hold for every database a statement names, not only the
// session's. mysqlCatalogsNamed reads them as MySQL reads names:
//   - a name of three or more parts starts with a database (db.table.column);
//   - a name of two parts before "(" is a database's routine (db.f(), CALL db.p());
//   - a name of two parts where a table goes is db.table: after FROM, JOIN, UPDATE, INTO,
//     TABLE, DESCRIBE, ... and after the commas of a table list;
//   - SHOW TABLES / TABLE STATUS / TRIGGERS / EVENTS FROM db, and SHOW ... FROM t FROM db;
//   - the database of CREATE / DROP / ALTER / SHOW CREATE DATABASE (or SCHEMA);
//   - a name where only some statements put a table or routine: after ON in GRANT, REVOKE,
//     CREATE TRIGGER, CREATE and DROP INDEX, TO in RENAME and ALTER, LIKE in CREATE TABLE;
//     GRANT ... ON *.* names every database (catalogAll);
//   - the database of USE (sent to the engine when the frontend does not take it itself);
//   - table references in parentheses: FROM (db.t), JOIN (a JOIN db.t);
//   - past IF [NOT] EXISTS in DDL, sequences and CACHE INDEX (objectPosition);
//   - the text PREPARE and EXECUTE IMMEDIATE run (string literals; any other text, from a
//     variable or an expression, cannot be read: catalogUnreadable), and MySQL's and MariaDB's
//     executable comments (/*! and /*M!), read the same way;
//   - all of it read both with backslash escapes and without (NO_BACKSLASH_ESCAPES).
// Two-part names elsewhere are table.column, whose table the statement's own table list names.

// catalogTextDepthMax bounds how deep in text run as SQL the scan reads (PREPARE of text that
// PREPAREs...); deeper text is taken as naming catalogUnreadable.
const catalogTextDepthMax = 3

// catalogUnreadable stands for the catalogs of text too deep to read: no rule lists it, so a
// rule with catalogs does not match such a statement.
const catalogUnreadable = "(text run as SQL too deep to read)"

// catalogAll stands for every database (GRANT ... ON *.*): only a rule listing "*" allows it,
// and a deny rule with catalogs matches it (it covers theirs).
const catalogAll = "*"

// tablePositionWords are the words a table or routine name follows.
var tablePositionWords = []string{"from", "join", "straight_join", "update", "into", "table", "tables", "describe", "desc",
	"explain", "replace", "insert", "delete", "handler", "using", "view", "truncate", "procedure", "function", "trigger", "event"}

// clauseWords end a table list. Index hints (USE / FORCE / IGNORE INDEX (...)) and PARTITION
// (...) do not: a comma after them goes on with the list.
var clauseWords = []string{"select", "where", "on", "set", "group", "order", "having", "limit", "union", "values", "value",
	"window", "returning", "for", "lock", "except", "intersect", "natural"}

// databaseAlterWords start ALTER DATABASE's changes, which follow no name when it alters the
// session's database.
var databaseAlterWords = []string{"default", "character", "charset", "collate", "comment", "upgrade"}

// mysqlCatalogsNamed returns the databases the MySQL statement text sql names (as written,
// unquoted), each once.
func mysqlCatalogsNamed(sql string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	scanMySQLCatalogs(sql, 0, add)
	return out
}

// scanMySQLCatalogs reads sql twice: as a session with backslash escapes reads it, and as one
// with NO_BACKSLASH_ESCAPES (a client may SET it) does, where a string ends at another quote and
// what the first reading took for a string's inside is SQL ('x\' union select * from db.t -- ').
func scanMySQLCatalogs(sql string, depth int, add func(string)) {
	if depth > catalogTextDepthMax {
		add(catalogUnreadable)
		return
	}
	for _, otherEscapes := range []bool{false, true} {
		text := sqltok.ExpandEveryExecutableComment(sql, otherEscapes)
		toks := sqltok.Tokenize(text, sqltok.MySQL)
		if otherEscapes {
			toks = sqltok.TokenizeOtherEscapes(text, sqltok.MySQL)
		}
		for _, st := range splitAtSemicolons(significantTokens(toks)) {
			scanStatement(st, add)
			if text, ok := textRunAsSQL(st); !ok {
				add(catalogUnreadable)
			} else if text != "" {
				scanMySQLCatalogs(text, depth+1, add)
			}
		}
	}
}

// textRunAsSQL is the text PREPARE name FROM and EXECUTE IMMEDIATE run, when st is one of them:
// adjacent string literals, which MySQL joins into one ("" when st runs no text, or cannot be
// run at all). Text from anything else (@var, CONCAT(...), a hex literal: MariaDB takes any
// expression) cannot be read before it runs: ok false.
func textRunAsSQL(st []sqltok.Token) (string, bool) {
	var i int
	switch {
	case st[0].IsWord("prepare") && len(st) > 2 && st[2].IsWord("from"):
		i = 3
	case st[0].IsWord("execute") && len(st) > 1 && st[1].IsWord("immediate"):
		i = 2
	default:
		return "", true // not text run as SQL (EXECUTE name runs what its PREPARE had checked)
	}
	if i < len(st) && st[i].Kind == sqltok.Word && strings.HasPrefix(st[i].Text, "_") {
		i++ // a character set introducer: _utf8mb4'...'
	}
	if i == len(st) {
		return "", true // cut short: an error, nothing runs
	}
	var text strings.Builder
	j := i
	for ; j < len(st) && st[j].Kind == sqltok.String && !st[j].Unterminated && st[j].Text[0] == '\''; j++ {
		text.WriteString(sqltok.MySQLStringValue(st[j].Text))
	}
	if j == i || j < len(st) && !(st[0].IsWord("execute") && st[j].IsWord("using")) {
		return "", false
	}
	return text.String(), true
}

func significantTokens(toks []sqltok.Token) []sqltok.Token {
	out := toks[:0:0]
	for _, t := range toks {
		if t.Significant() {
			out = append(out, t)
		}
	}
	return out
}

func splitAtSemicolons(toks []sqltok.Token) [][]sqltok.Token {
	var out [][]sqltok.Token
	start := 0
	for i, t := range toks {
		if t.Kind == sqltok.Punct && t.Text == ";" {
			if i > start {
				out = append(out, toks[start:i])
			}
			start = i + 1
		}
	}
	if start < len(toks) {
		out = append(out, toks[start:])
	}
	return out
}

// scanStatement adds the databases the statement st (significant tokens) names.
func scanStatement(st []sqltok.Token, add func(string)) {
	tableList := map[int]bool{} // per parenthesis depth: in a table list
	depth := 0
	show := st[0].IsWord("show")
	showFroms := 0
	if show {
		showAcrossDatabases(st, add)
	}
	database := databaseNameIndex(st)
	for i := 0; i < len(st); i++ {
		t := st[i]
		if i > 0 && statementPositionAfter(st, i-1) && allDatabasesAt(st, i) {
			add(catalogAll)
		}
		switch {
		case t.Kind == sqltok.Punct && t.Text == "(":
			// A parenthesis where a table goes opens table references: FROM (db.t), JOIN (a JOIN db.t).
			opens := i > 0 && (tablePositionAfter(st, i-1) || st[i-1].Kind == sqltok.Punct && (st[i-1].Text == "," || st[i-1].Text == "(") && tableList[depth])
			depth++
			tableList[depth] = opens
			continue
		case t.Kind == sqltok.Punct && t.Text == ")":
			if depth > 0 {
				depth--
			}
			continue
		case t.IsWord(clauseWords...):
			tableList[depth] = false
		case tablePositionAfter(st, i):
			tableList[depth] = true
		}
		parts, ok := nameAt(st, i)
		if !ok {
			continue
		}
		prev := sqltok.Token{}
		if i > 0 {
			prev = st[i-1]
		}
		tablePosition := i > 0 && (tablePositionAfter(st, i-1) || statementPositionAfter(st, i-1) || objectPosition(st, i)) ||
			prev.Kind == sqltok.Punct && (prev.Text == "," || prev.Text == "(") && tableList[depth]
		next := i + 2*len(parts) - 1
		switch {
		case i == database, i == 1 && st[0].IsWord("use"):
			add(parts[0])
		case len(parts) >= 3:
			add(parts[0])
		case len(parts) == 2 && next < len(st) && st[next].Kind == sqltok.Punct && st[next].Text == "(":
			add(parts[0])
		case len(parts) == 2 && tablePosition:
			add(parts[0])
		case len(parts) == 2 && show && prev.IsWord("code"): // SHOW PROCEDURE | FUNCTION CODE db.p
			add(parts[0])
		case show && prev.IsWord("from", "in"):
			showFroms++
			if showFroms == 2 || showListsTables(st) {
				add(parts[0])
			}
		}
		i = next - 1
	}
}

// tablePositionAfter reports whether a table name may follow st[i]: one of tablePositionWords,
// but not the UPDATE of INSERT ... ON DUPLICATE KEY UPDATE, which assignments follow (t.a = 1
// names a column of table t).
func tablePositionAfter(st []sqltok.Token, i int) bool {
	if !st[i].IsWord(tablePositionWords...) {
		return false
	}
	return !st[i].IsWord("update") || i == 0 || !st[i-1].IsWord("key")
}

// objectPosition reports whether a name at st[i] is [db.]object by a place the table positions
// miss: a table, view, routine, trigger, event or sequence a DDL names past IF [NOT] EXISTS (DROP
// TABLE IF EXISTS db.t) or CREATE / DROP SEQUENCE names; a sequence drawn from (NEXT / PREVIOUS
// VALUE FOR, nextval(), lastval(), setval()); CACHE INDEX and LOAD INDEX INTO CACHE.
func objectPosition(st []sqltok.Token, i int) bool {
	prev := st[i-1]
	kind := i - 1
	for kind > 0 && st[kind].IsWord("if", "not", "exists") {
		kind--
	}
	ddl := st[0].IsWord("create", "drop", "alter")
	switch {
	case ddl && kind < i-1 && st[kind].IsWord(tablePositionWords...), ddl && prev.IsWord("sequence"):
		return true
	case prev.IsWord("for") && i >= 2 && st[i-2].IsWord("value"):
		return true
	case prev.Kind == sqltok.Punct && prev.Text == "(" && i >= 2 && st[i-2].IsWord("nextval", "lastval", "setval"):
		return true
	}
	return st[0].IsWord("cache") && prev.IsWord("index") || st[0].IsWord("load") && prev.IsWord("cache")
}

// statementPositionAfter reports whether a table or routine name follows st[i] in this kind of
// statement only: ON in GRANT, REVOKE and CREATE TRIGGER (elsewhere ON starts a join's
// condition), TO and RENAME in RENAME and ALTER, LIKE in CREATE TABLE.
func statementPositionAfter(st []sqltok.Token, i int) bool {
	switch {
	case st[i].IsWord("on"):
		return st[0].IsWord("grant", "revoke") || st[0].IsWord("create") && wordWithin(st, 8, "trigger", "index") ||
			st[0].IsWord("drop") && wordWithin(st, 2, "index")
	case st[i].IsWord("to", "rename"):
		return st[0].IsWord("rename", "alter")
	case st[i].IsWord("like"):
		return st[0].IsWord("create") && wordWithin(st, 4, "table")
	}
	return false
}

// wordWithin reports whether one of words is among st's first n tokens.
func wordWithin(st []sqltok.Token, n int, words ...string) bool {
	for _, t := range st[:min(n, len(st))] {
		if t.IsWord(words...) {
			return true
		}
	}
	return false
}

// allDatabasesAt reports whether *.* starts at st[i].
func allDatabasesAt(st []sqltok.Token, i int) bool {
	star := func(t sqltok.Token) bool { return t.Kind == sqltok.Operator && t.Text == "*" }
	return i+2 < len(st) && star(st[i]) && st[i+1].Kind == sqltok.Punct && st[i+1].Text == "." && star(st[i+2])
}

// databaseNameIndex is where the database of CREATE / DROP / ALTER DATABASE (or SCHEMA) and SHOW
// CREATE DATABASE is in st, past IF [NOT] EXISTS; -1 when st is none of these or names none.
func databaseNameIndex(st []sqltok.Token) int {
	if !st[0].IsWord("create", "drop", "alter", "show") {
		return -1
	}
	for k := 1; k < min(3, len(st)); k++ {
		if !st[k].IsWord("database", "schema") {
			continue
		}
		j := k + 1
		for j < len(st) && st[j].IsWord("if", "not", "exists") {
			j++
		}
		if j == len(st) || st[j].IsWord(databaseAlterWords...) {
			return -1
		}
		return j
	}
	return -1
}

// showAcrossDatabases adds what a SHOW that lists objects of every database at once names:
// SHOW PROCEDURE | FUNCTION | PACKAGE [BODY] STATUS (every database's routines, their names,
// definers, comments), SHOW OPEN TABLES without FROM (every database's open tables), MariaDB's
// SHOW TABLE_STATISTICS and INDEX_STATISTICS. Its LIKE filters names, not databases: it names
// every database (catalogAll), unless its WHERE pins one, the column of databases (Db, or
// Database) equal to a literal, or to DATABASE() (the session's), and nothing ORed with it.
func showAcrossDatabases(st []sqltok.Token, add func(string)) {
	column, rest := "", -1
	switch {
	case len(st) > 2 && st[1].IsWord("procedure", "function", "package") && st[2].IsWord("status"):
		column, rest = "db", 3
	case len(st) > 3 && st[1].IsWord("package") && st[2].IsWord("body") && st[3].IsWord("status"):
		column, rest = "db", 4
	case len(st) > 2 && st[1].IsWord("open") && st[2].IsWord("tables"):
		if len(st) > 3 && st[3].IsWord("from", "in") {
			return // FROM db: the database is named (scanStatement)
		}
		column, rest = "database", 3
	case len(st) > 1 && st[1].IsWord("table_statistics", "index_statistics"):
		add(catalogAll)
		return
	default:
		return
	}
	if db, ok := pinnedDatabase(st[rest:], column); ok {
		if db != "" {
			add(db)
		}
		return
	}
	add(catalogAll)
}

// pinnedDatabase reads a SHOW's filter, st from its LIKE or WHERE: the database a WHERE pins its
// column of databases to ("" for DATABASE(), the session's), with ok; ok false for no filter, a
// LIKE, or a WHERE that may let other databases through (an OR, XOR or ||, a literal with a
// backslash, which readings with and without escapes take apart).
func pinnedDatabase(st []sqltok.Token, column string) (string, bool) {
	if len(st) < 4 || !st[0].IsWord("where") {
		return "", false
	}
	for _, t := range st[1:] {
		if t.IsWord("or", "xor") || t.Kind == sqltok.Operator && strings.Contains(t.Text, "||") {
			return "", false
		}
	}
	isColumn := func(t sqltok.Token) bool {
		name, ok := namePart(t)
		return ok && strings.EqualFold(name, column)
	}
	value := func(at int) (string, int, bool) {
		t := st[at]
		switch {
		case t.Kind == sqltok.String && !t.Unterminated && t.Text[0] == '\'' && !strings.Contains(t.Text, `\`):
			return sqltok.MySQLStringValue(t.Text), at + 1, true
		case t.IsWord("database", "schema") && at+2 < len(st) && st[at+1].Text == "(" && st[at+2].Text == ")":
			return "", at + 3, true
		}
		return "", at, false
	}
	isEq := func(t sqltok.Token) bool { return t.Kind == sqltok.Operator && t.Text == "=" }
	var db string
	var end int
	var ok bool
	switch {
	case isColumn(st[1]) && isEq(st[2]):
		db, end, ok = value(3)
	case isEq(st[2]) && isColumn(st[3]):
		db, _, ok = value(1)
		end = 4
	}
	if !ok || end < len(st) && !st[end].IsWord("and") {
		return "", false
	}
	return db, true
}

// showListsTables reports whether the SHOW statement st lists a database's tables, triggers or
// events, so that the one name after its FROM / IN is a database.
func showListsTables(st []sqltok.Token) bool {
	for _, t := range st[1:] {
		if t.IsWord("from", "in") {
			return false
		}
		if t.IsWord("tables", "status", "triggers", "events") {
			return true
		}
	}
	return false
}

// nameAt reads the name (its parts, unquoted) that starts at st[i]: name ("." name)*.
func nameAt(st []sqltok.Token, i int) ([]string, bool) {
	first, ok := namePart(st[i])
	if !ok || i > 0 && st[i-1].Kind == sqltok.Punct && st[i-1].Text == "." {
		return nil, false
	}
	parts := []string{first}
	for j := i + 1; j+1 < len(st) && st[j].Kind == sqltok.Punct && st[j].Text == "."; j += 2 {
		p, ok := namePart(st[j+1])
		if !ok {
			if st[j+1].Kind == sqltok.Operator && st[j+1].Text == "*" {
				parts = append(parts, "*") // db.* and db.t.*
				continue
			}
			break
		}
		parts = append(parts, p)
	}
	return parts, true
}

// namePart is the identifier t stands for as a part of a name: a word, a `quoted` name, or
// "quoted" (a name under ANSI_QUOTES).
func namePart(t sqltok.Token) (string, bool) {
	switch {
	case t.Kind == sqltok.Word:
		return t.Text, true
	case t.Kind == sqltok.QuotedIdent && !t.Unterminated && len(t.Text) >= 2:
		q := t.Text[:1]
		return strings.ReplaceAll(t.Text[1:len(t.Text)-1], q+q, q), true
	case t.Kind == sqltok.String && !t.Unterminated && t.Text[0] == '"':
		return sqltok.MySQLStringValue(t.Text), true
	}
	return "", false
}
