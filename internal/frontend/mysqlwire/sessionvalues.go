package mysqlwire

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// Session values in a statement: what MySQL answers from the client's own connection is
// answered by this frontend, whatever engine runs the statement, by writing the value into the
// statement as a literal before it is routed:
//
//   - @@name (@@session.name, @@global.name) of a variable the frontend answers (variable):
//     SELECT @@version alone is answered without an engine (selectVars); this covers the rest,
//     such as Connector/J's start-up SELECT (a comment first) or SELECT VERSION(), @@version,
//     which DuckDB cannot parse;
//   - VERSION(): the version @@version and the handshake announce (not DuckDB's own);
//   - CONNECTION_ID(): the client connection's id, which KILL takes; a pooled client
//     connection holds no engine connection whose id could stand in for it;
//   - USER(), SESSION_USER(), SYSTEM_USER(), CURRENT_USER[()]: the client's user@host as MySQL
//     shows them (not DuckDB's "duckdb", nor the cluster's account a relayed engine would name).
//
// A value that is a whole select item keeps the item's text as its column's name, as MySQL
// names it (`@@version`, `VERSION()`). Strings, quoted names and comments are left alone,
// and so is a name qualified by a database (db.version() is a stored function).

// mayHoldSessionValue reports cheaply whether sql may name a session value: it holds @@, a
// word of sessionFuncs right before a "(", or current_user. One pass, no allocation: every
// statement of a MySQL client pays it.
func mayHoldSessionValue(sql string) bool {
	if strings.Contains(sql, "@@") {
		return true
	}
	for i := 0; i < len(sql); i++ {
		switch sql[i] {
		case '(':
			j := i
			for j > 0 && (sql[j-1]|0x20 >= 'a' && sql[j-1]|0x20 <= 'z' || sql[j-1] == '_') {
				j--
			}
			if i-j >= 4 && i-j <= len("connection_id") && sessionFuncs[strings.ToLower(sql[j:i])] {
				return true
			}
		case 'c', 'C':
			if len(sql)-i >= len("current_user") && strings.EqualFold(sql[i:i+len("current_user")], "current_user") {
				return true
			}
		}
	}
	return false
}

// sessionFuncs are the functions answered here, by lower-case name.
var sessionFuncs = map[string]bool{"version": true, "connection_id": true, "user": true, "session_user": true,
	"system_user": true, "current_user": true}

// withSessionValues is sql with the session values it names written as literals (sql itself
// when it names none).
func (h *session) withSessionValues(sql string) string {
	if !mayHoldSessionValue(sql) || isSetStatement(sql) {
		return sql
	}
	toks := sqltok.Tokenize(sql, sqltok.MySQL)
	var b strings.Builder
	changed := false
	depth := 0
	selectList := []bool{false} // per parenthesis depth: in a SELECT's list of items
	prev := sqltok.Token{}      // the last significant token written
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		value, end := h.sessionValueAt(toks, i, prev)
		if end < 0 {
			b.WriteString(t.Text)
			if t.Significant() {
				switch {
				case t.Text == "(":
					depth++
					selectList = append(selectList, false)
				case t.Text == ")" && depth > 0:
					depth--
					selectList = selectList[:depth+1]
				case t.IsWord("select"):
					selectList[depth] = true
				case t.IsWord("from", "where", "into", "group", "order", "limit", "having", "union", "window", "for"):
					selectList[depth] = false
				}
				prev = t
			}
			continue
		}
		b.WriteString(value)
		next := nextSignificant(toks, end+1)
		if selectList[depth] && (prev.IsWord("select", "distinct") || prev.Text == ",") && endsSelectItem(toks, next) {
			b.WriteString(" AS `" + strings.ReplaceAll(sql[t.Pos:toks[end].Pos+len(toks[end].Text)], "`", "``") + "`")
		}
		prev = sqltok.Token{Kind: sqltok.String, Text: value}
		i = end
		changed = true
	}
	if !changed {
		return sql
	}
	return b.String()
}

// endsSelectItem reports whether toks[i] (len(toks): the end) ends a select item.
func endsSelectItem(toks []sqltok.Token, i int) bool {
	if i >= len(toks) {
		return true
	}
	t := toks[i]
	return t.Text == "," || t.Text == ")" || t.Text == ";" ||
		t.IsWord("from", "into", "union", "order", "limit", "where", "group", "having", "for", "lock")
}

func nextSignificant(toks []sqltok.Token, i int) int {
	for i < len(toks) && !toks[i].Significant() {
		i++
	}
	return i
}

// sessionValueAt reads a session value at toks[i] (prev: the significant token before it): its
// literal, and the index of its last token; end is -1 when there is none.
func (h *session) sessionValueAt(toks []sqltok.Token, i int, prev sqltok.Token) (value string, end int) {
	t := toks[i]
	if prev.Text == "." {
		return "", -1
	}
	if t.Kind == sqltok.Operator && t.Text == "@@" {
		end := i + 1
		if end >= len(toks) || toks[end].Kind != sqltok.Word {
			return "", -1
		}
		name := toks[end].Text
		if toks[end].IsWord("session", "global", "local") && end+2 < len(toks) && toks[end+1].Text == "." && toks[end+2].Kind == sqltok.Word {
			end += 2
			name += "." + toks[end].Text
		}
		v, ok := h.variable("@@" + name)
		if !ok {
			return "", -1
		}
		return literal(v), end
	}
	if t.Kind != sqltok.Word || !sessionFuncs[strings.ToLower(t.Text)] {
		return "", -1
	}
	name := strings.ToLower(t.Text)
	end = i
	if open := i + 1; open < len(toks) && toks[open].Text == "(" {
		closing := nextSignificant(toks, open+1)
		if closing >= len(toks) || toks[closing].Text != ")" {
			return "", -1
		}
		end = closing
	} else if name != "current_user" {
		return "", -1 // a column or table of that name
	}
	switch name {
	case "version":
		return literal(h.s.opts.ServerVersion), end
	case "connection_id":
		return strconv.FormatUint(uint64(h.conn.ConnectionID()), 10), end
	default:
		return literal(h.user + "@" + h.clientHost()), end
	}
}

// clientHost is the client's address without its port, as MySQL's USER() shows it.
func (h *session) clientHost() string {
	host, _, err := net.SplitHostPort(h.remote)
	if err != nil {
		return h.remote
	}
	return host
}

// literal writes v as a MySQL literal (each engine's translation reads MySQL's literals).
func literal(v any) string {
	switch v := v.(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case string:
		return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(v) + "'"
	}
	panic(fmt.Sprintf("mysqlwire: a session value of type %T", v))
}
