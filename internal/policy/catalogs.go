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
//   - a database DDL names (CREATE / DROP / ALTER DATABASE db, SHOW CREATE DATABASE db), and
//     db.object where routines, triggers, events, sequences and grants name objects
//     (objectPosition);
//   - the text PREPARE and EXECUTE IMMEDIATE run, and MySQL's executable comments, read the same way.
// Two-part names elsewhere are table.column, whose table the statement's own table list names.

// mysqlServerVersion is the version executable comments are expanded for: every one runs.
const mysqlServerVersion = 999999

// catalogTextDepthMax bounds how deep in text run as SQL the scan reads (PREPARE of text that
// PREPAREs...); deeper text is taken as naming catalogUnreadable.
const catalogTextDepthMax = 3

// catalogUnreadable stands for the catalogs of text too deep to read: no rule lists it, so a
// rule with catalogs does not match such a statement.
const catalogUnreadable = "(text run as SQL too deep to read)"

// tablePositionWords are the words a table name follows.
var tablePositionWords = []string{"from", "join", "straight_join", "update", "into", "table", "tables", "describe", "desc",
	"explain", "replace", "insert", "delete", "handler", "using", "view", "truncate"}

// clauseWords end a table list.
var clauseWords = []string{"select", "where", "on", "set", "group", "order", "having", "limit", "union", "values", "value",
	"window", "returning", "for", "lock", "except", "intersect", "partition", "use", "ignore", "force", "natural"}

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

func scanMySQLCatalogs(sql string, depth int, add func(string)) {
	if depth > catalogTextDepthMax {
		add(catalogUnreadable)
		return
	}
	toks := significantTokens(sqltok.Tokenize(sqltok.ExpandExecutableComments(sql, mysqlServerVersion), sqltok.MySQL))
	for _, st := range splitAtSemicolons(toks) {
		scanStatement(st, add)
		if st[0].IsWord("prepare", "execute") {
			for _, t := range st {
				if t.Kind == sqltok.String && !t.Unterminated {
					scanMySQLCatalogs(sqltok.MySQLStringValue(t.Text), depth+1, add)
				}
			}
		}
	}
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
	for i := 0; i < len(st); i++ {
		t := st[i]
		switch {
		case t.Kind == sqltok.Punct && t.Text == "(":
			depth++
			tableList[depth] = false
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
		tablePosition := i > 0 && tablePositionAfter(st, i-1) || prev.Kind == sqltok.Punct && prev.Text == "," && tableList[depth]
		next := i + 2*len(parts) - 1
		switch {
		case len(parts) >= 3:
			add(parts[0])
		case len(parts) == 2 && next < len(st) && st[next].Kind == sqltok.Punct && st[next].Text == "(":
			add(parts[0])
		case len(parts) == 2 && (tablePosition || objectPosition(st, i)):
			add(parts[0])
		case len(parts) == 1 && databasePosition(st, i):
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

// databasePosition reports whether the name at st[i] is a database by its place: after
// DATABASE or SCHEMA (IF [NOT] EXISTS) in CREATE, DROP, ALTER and SHOW CREATE.
func databasePosition(st []sqltok.Token, i int) bool {
	if !st[0].IsWord("create", "drop", "alter", "show") {
		return false
	}
	j := i - 1
	for j > 0 && st[j].IsWord("if", "not", "exists") {
		j--
	}
	return j > 0 && st[j].IsWord("database", "schema") && !(i+1 < len(st) && st[i+1].Kind == sqltok.Punct && st[i+1].Text == "(")
}

// objectPosition reports whether a two-part name at st[i] is db.object by its place outside the
// table positions: a routine, trigger, event or sequence a DDL, SHOW CREATE, GRANT or REVOKE
// names; the object of GRANT / REVOKE ... ON; the table CREATE TABLE ... LIKE copies; a
// sequence (NEXT / PREVIOUS VALUE FOR, nextval(), lastval(), setval()); CACHE INDEX and LOAD
// INDEX INTO CACHE.
func objectPosition(st []sqltok.Token, i int) bool {
	prev := st[i-1]
	ddl := st[0].IsWord("create", "drop", "alter", "show", "grant", "revoke")
	kind := i - 1
	for kind > 0 && st[kind].IsWord("if", "not", "exists") {
		kind-- // DROP TABLE IF EXISTS db.t
	}
	switch {
	case ddl && st[kind].IsWord("procedure", "function", "trigger", "event", "sequence", "package", "table", "view"):
		return true
	case st[0].IsWord("grant", "revoke") && prev.IsWord("on"):
		return true
	case st[0].IsWord("create") && prev.IsWord("like") && !wordBefore(st, i, "select"):
		return true
	case prev.IsWord("for") && i >= 2 && st[i-2].IsWord("value"):
		return true
	case prev.Kind == sqltok.Punct && prev.Text == "(" && i >= 2 && st[i-2].IsWord("nextval", "lastval", "setval"):
		return true
	case st[0].IsWord("cache") && prev.IsWord("index"), st[0].IsWord("load") && prev.IsWord("cache"):
		return true
	}
	return false
}

// wordBefore reports whether one of words comes before st[i].
func wordBefore(st []sqltok.Token, i int, words ...string) bool {
	for _, t := range st[:i] {
		if t.IsWord(words...) {
			return true
		}
	}
	return false
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
