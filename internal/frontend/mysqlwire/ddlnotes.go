package mysqlwire

import (
	"context"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// MariaDB answers a DDL statement whose IF EXISTS or IF NOT EXISTS left it nothing to do with
// a Note: DROP TABLE IF EXISTS of a missing table 1051 "Unknown table 'db.t'", CREATE TABLE IF
// NOT EXISTS of one that exists 1050, DROP VIEW IF EXISTS 4092 (a database's are
// databaseddl.go's): the OK packet's warning count is 1, SHOW WARNINGS lists
// the note, and drivers show it (mysql2's warningStatus, PyMySQL's warnings, migration tools
// that log them). PostgreSQL's NOTICE and DuckDB's silence gave the client none. On an engine
// that is not MySQL's, the proxy asks the engine (SHOW TABLES, SHOW DATABASES, as a client
// would) whether each object named exists before such a statement runs, and notes what
// MariaDB would once it succeeded: one round trip per name, for these statements only.

// ddlNote is what MariaDB notes for one kind of IF [NOT] EXISTS statement.
type ddlNote struct {
	code   uint16
	exists bool // noted for the names that exist (IF NOT EXISTS), else for those missing
	names  []ddlName
}

// ddlName is a table's (or view's) schema as written ("" for the session's) and name.
type ddlName struct{ schema, name string }

// parseDDLNote is the note sql's IF [NOT] EXISTS may earn, nil for any other statement.
func parseDDLNote(sql string) *ddlNote {
	if !sqltok.FirstKeywordIs(sql, sqltok.MySQL, "drop", "create") {
		return nil
	}
	toks := sqltok.SignificantTokens(sql, sqltok.MySQL)
	if len(toks) > 0 && toks[len(toks)-1].Text == ";" {
		toks = toks[:len(toks)-1]
	}
	drop := toks[0].IsWord("drop")
	i := 1
	if i < len(toks) && toks[i].IsWord("temporary") {
		i++
	}
	if i >= len(toks) {
		return nil
	}
	n := &ddlNote{}
	switch {
	case toks[i].IsWord("table", "tables") && drop:
		n.code = mysql.ER_BAD_TABLE_ERROR // 1051
	case toks[i].IsWord("view") && drop:
		n.code = erUnknownView
	case toks[i].IsWord("table", "view") && !drop:
		n.code, n.exists = mysql.ER_TABLE_EXISTS_ERROR, true // 1050
	default:
		return nil
	}
	i++
	if i+1 >= len(toks) || !toks[i].IsWord("if") {
		return nil
	}
	if !drop {
		if !toks[i+1].IsWord("not") {
			return nil
		}
		i++
	}
	if i+1 >= len(toks) || !toks[i+1].IsWord("exists") {
		return nil
	}
	rest := toks[i+2:]
	for len(rest) > 0 {
		name, after, ok := ddlNameAt(rest, true)
		if !ok {
			return nil
		}
		n.names = append(n.names, name)
		if !drop || len(after) == 0 || after[0].Text != "," {
			if drop && len(after) > 0 && !after[0].IsWord("restrict", "cascade") {
				return nil
			}
			return n
		}
		rest = after[1:]
	}
	return nil
}

// erUnknownView is MariaDB's ER_UNKNOWN_VIEW, "Unknown VIEW: 'db.v'" (go-mysql has no name
// for it).
const erUnknownView = 4092

// ddlNameAt reads a name (schema.name when qualified) at the start of toks.
func ddlNameAt(toks []sqltok.Token, qualified bool) (ddlName, []sqltok.Token, bool) {
	ident := func(t sqltok.Token) bool {
		return t.Kind == sqltok.Word || t.Kind == sqltok.QuotedIdent && t.Text[0] == '`'
	}
	if len(toks) == 0 || !ident(toks[0]) {
		return ddlName{}, nil, false
	}
	if qualified && len(toks) > 2 && toks[1].Text == "." && ident(toks[2]) {
		return ddlName{schema: sqltok.MySQLIdent(toks[0]), name: sqltok.MySQLIdent(toks[2])}, toks[3:], true
	}
	return ddlName{name: sqltok.MySQLIdent(toks[0])}, toks[1:], true
}

// ddlNotes is what MariaDB would note for sql, asked of the engine before sql runs: nil when
// sql earns none, the session's statements go to a MySQL engine (which notes them itself), or
// the engine could not say.
func (h *session) ddlNotes(ctx context.Context, sql string) []diagnostic {
	n := parseDDLNote(sql)
	if n == nil || h.routesToMySQL() {
		return nil
	}
	var noted []string
	for _, name := range n.names {
		show := "SHOW FULL TABLES"
		if name.schema != "" {
			show += " FROM `" + strings.ReplaceAll(name.schema, "`", "``") + "`"
		}
		exists, err := h.listsOnSession(ctx, show+" LIKE "+mysqlQuote(name.name), name.name)
		if err != nil {
			return nil
		}
		if exists != n.exists {
			continue
		}
		if n.exists {
			return []diagnostic{{Level: "Note", Code: n.code, Message: "Table '" + name.name + "' already exists"}}
		}
		schema := name.schema
		if schema == "" {
			schema = h.currentDatabase()
		}
		noted = append(noted, schema+"."+name.name)
	}
	if len(noted) == 0 {
		return nil
	}
	what := "Unknown table '"
	if n.code == erUnknownView {
		what = "Unknown VIEW: '"
	}
	return []diagnostic{{Level: "Note", Code: n.code, Message: what + strings.Join(noted, ",") + "'"}}
}

// listsOnSession runs show (a SHOW listing names) where the session's statements run (its
// pinned connection, guarded, or the engine) and reports whether it lists name.
func (h *session) listsOnSession(ctx context.Context, show, name string) (bool, error) {
	execute := h.s.backend.Execute
	if h.pinned != nil {
		execute = h.pinned.Execute
		defer h.settleStatement(h.guardStatement(ctx, show), show, 0)
	}
	return listsDatabase(ctx, execute, h.request(show, nil), name)
}

// currentDatabase is the session's database, or the one the engine says the session is in
// (a PostgreSQL engine's schema) when the client chose none.
func (h *session) currentDatabase() string {
	if h.db != "" {
		return h.db
	}
	v, _ := h.engineValue("SELECT DATABASE()", 0)
	return v
}
