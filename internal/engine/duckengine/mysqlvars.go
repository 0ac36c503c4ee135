package duckengine

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's variables, as MariaDB keeps them for its session: user variables (@v) and
// the session variables that mysqldump and mariadb-dump files set and set back
// (`SET @OLD_UNIQUE_CHECKS=@@UNIQUE_CHECKS, UNIQUE_CHECKS=0` ... `SET
// UNIQUE_CHECKS=@OLD_UNIQUE_CHECKS`). They are DuckDB variables of the connection (SET
// VARIABLE, getvariable): @v is qf_uv_v, a session variable qf_sv_name. The MySQL frontend
// sends a statement that names a user variable to a connection it holds for the client until
// the client disconnects, then closes rather than pools (a SET leaves the connection unclean,
// statement.clean), so a session's variables are its own and no other client sees them.
//
//   - @v in any statement reads getvariable('qf_uv_v'): NULL when never set, as in MariaDB;
//     names are compared without case, as MariaDB's.
//   - @@name (@@session.name) of a variable below reads the session's value, else its default
//     (the value the MySQL frontend reports for it); other names are DuckDB's to refuse.
//   - SET assigns each item in order: @v = expr (or :=), [SESSION] name = expr, @@name = expr,
//     NAMES / CHARACTER SET of UTF-8. A session variable is one of mysqlSessionVars; a switch
//     takes ON/OFF/1/0/TRUE/FALSE (else MariaDB's 1231); time_zone only a UTC spelling (the
//     proxy's zone), character sets and collations only UTF-8; anything else, and GLOBAL, is
//     refused. UNIQUE_CHECKS and SQL_NOTES are kept and read back but change nothing (UNIQUE
//     keys are checked all the same); FOREIGN_KEY_CHECKS=0 defers foreign keys (mysqlfkchecks.go).
//
// Not here: an assignment inside another statement (SELECT @v := 1, SELECT ... INTO @v).

// mysqlSessionVar is a session variable SET may assign on DuckDB: its default (what the MySQL
// frontend reports) and how a value is read.
type mysqlSessionVar struct {
	def  string // a DuckDB literal
	kind varKind
}

type varKind int

const (
	varSwitch    varKind = iota // 0 or 1: ON/OFF/TRUE/FALSE/0/1
	varText                     // any text, kept in upper case (sql_mode)
	varZone                     // a UTC spelling only
	varCharset                  // a UTF-8 character set (utf8, utf8mb3, utf8mb4)
	varCollation                // a UTF-8 collation
	varSeconds                  // a whole number of seconds, 0 to 100000000 (innodb_lock_wait_timeout)
)

var mysqlSessionVars = map[string]mysqlSessionVar{
	"unique_checks":            {"1", varSwitch},
	"foreign_key_checks":       {"1", varSwitch},
	"sql_notes":                {"1", varSwitch},
	"sql_quote_show_create":    {"1", varSwitch},
	"sql_mode":                 {sqltok.StandardString(mariadbSQLModeDefault), varText},
	"note_verbosity":           {"'basic,explain'", varText},
	"time_zone":                {"'SYSTEM'", varZone},
	"character_set_client":     {"'utf8mb4'", varCharset},
	"character_set_connection": {"'utf8mb4'", varCharset},
	"character_set_results":    {"'utf8mb4'", varCharset},
	"collation_connection":     {"'utf8mb4_general_ci'", varCollation},
	"innodb_lock_wait_timeout": {"50", varSeconds}, // mysqlwritelock.go
}

// userVarRef is DuckDB's read of the user variable name.
func userVarRef(name string) string {
	return "getvariable(" + sqltok.StandardString("qf_uv_"+strings.ToLower(name)) + ")"
}

// sessionVarRef is DuckDB's read of the session variable name (lower case, one of mysqlSessionVars).
func sessionVarRef(name string) string {
	return "coalesce(getvariable(" + sqltok.StandardString("qf_sv_"+name) + "), " + mysqlSessionVars[name].def + ")"
}

// variableAt reads a variable reference at toks[i], an operator ending in @ (the tokenizer
// joins `=@v` into one): what to write for it (the operator's other characters first) and
// the index of its last token; end < 0 when toks[i] is no variable (user@host in a DEFINER
// clause, @@ of a variable not kept here).
func variableAt(toks []sqltok.Token, i int) (text string, end int) {
	t := toks[i]
	next := i + 1
	if next >= len(toks) || toks[next].Pos != t.Pos+len(t.Text) {
		return "", -1
	}
	if system, ok := strings.CutSuffix(t.Text, "@@"); ok {
		name, end := systemVarName(toks, next)
		if _, known := mysqlSessionVars[name]; !known || end < 0 {
			return "", -1
		}
		return system + sessionVarRef(name), end
	}
	prefix := strings.TrimSuffix(t.Text, "@")
	if prefix == "" && i > 0 && (toks[i-1].Kind == sqltok.String || toks[i-1].Kind == sqltok.QuotedIdent) {
		return "", -1 // 'user'@'host'
	}
	name, ok := userVarName(toks[next])
	if !ok {
		return "", -1
	}
	return prefix + userVarRef(name), next
}

// userVarName is the name a user variable's token spells: v, `v`, 'v' or "v".
func userVarName(t sqltok.Token) (string, bool) {
	switch {
	case t.Kind == sqltok.Word:
		return t.Text, true
	case t.Kind == sqltok.QuotedIdent && !t.Unterminated:
		return identText(t), true
	case t.Kind == sqltok.String && !t.Unterminated:
		return sqltok.MySQLStringValue(t.Text), true
	}
	return "", false
}

// systemVarName reads [session. | local.]name from toks[i] (after @@): the name in lower case
// and the index of its token; end < 0 for @@global.name (not kept per session) or no name.
func systemVarName(toks []sqltok.Token, i int) (name string, end int) {
	if i >= len(toks) || toks[i].Kind != sqltok.Word {
		return "", -1
	}
	if i+2 < len(toks) && toks[i+1].Text == "." && toks[i+2].Kind == sqltok.Word {
		if !toks[i].IsWord("session", "local") {
			return "", -1
		}
		i += 2
	}
	return strings.ToLower(toks[i].Text), i
}

// mayNameVariable reports cheaply whether a MySQL client's statement may name a variable.
func mayNameVariable(sqlText string) bool { return strings.IndexByte(sqlText, '@') >= 0 }

// setItem is one assignment of a MySQL SET statement.
type setItem struct {
	user bool   // @name
	name string // the variable, lower case for a session variable
	expr string // the value's MySQL text
}

// mysqlSet reads a MySQL client's SET statement that names a variable kept here (a user
// variable, or one of mysqlSessionVars); ok is false for any other statement.
func mysqlSet(q *query.Request) (ownRun, bool, error) {
	if !sqltok.FirstKeywordIs(q.SQL, sqltok.MySQL, "set") {
		return nil, false, nil
	}
	items, ok, err := readSetItems(q.SQL)
	if !ok {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	return func(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
		// The session variables' values are checked first: a SET with one MariaDB refuses
		// changes nothing.
		values := make([]sessionSet, len(items))
		for i, it := range items {
			if it.user {
				continue
			}
			v, isDefault, err := sessionValue(ctx, conn, it)
			if err != nil {
				return nil, err
			}
			values[i] = sessionSet{v, isDefault}
		}
		// MariaDB evaluates every value before it assigns any (SET @y = 5, @z = @y leaves @z
		// as it was): with more than one user variable, each value is held first.
		held, items := userItems(items) > 1, slices.Clone(items)
		for i, it := range items {
			if it.user && held {
				if _, err := conn.ExecContext(ctx, "SET VARIABLE "+heldValue(i)+" = "+mysqlCompat(it.expr)); err != nil {
					return nil, wrapErr(err)
				}
				items[i].expr = "getvariable('" + heldValue(i) + "')"
			}
		}
		for i, it := range items {
			if err := assign(ctx, conn, it, values[i], inTx); err != nil {
				return nil, err
			}
			if it.user && held {
				if _, err := conn.ExecContext(ctx, "RESET VARIABLE "+heldValue(i)); err != nil {
					return nil, wrapErr(err)
				}
			}
		}
		return engine.TagRows("SET"), nil
	}, true, nil
}

// userItems counts the assignments of user variables.
func userItems(items []setItem) int {
	n := 0
	for _, it := range items {
		if it.user {
			n++
		}
	}
	return n
}

// heldValue names the variable that holds the value of a SET's i-th item until it is assigned.
func heldValue(i int) string { return "qf_set_" + strconv.Itoa(i) }

// sessionSet is a session variable's checked value (DEFAULT: isDefault).
type sessionSet struct {
	v         string
	isDefault bool
}

// readSetItems splits SET's assignments; ok is false when none names a variable kept here
// (SET TRANSACTION, SET VARIABLE, PostgreSQL's SET: DuckDB's to read), err names a variable
// that cannot be set here.
func readSetItems(sqlText string) (items []setItem, ok bool, err error) {
	toks := sqltok.SignificantTokens(sqlText, sqltok.MySQL)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	for _, p := range sqltok.SplitAtCommas(toks[min(1, len(toks)):]) {
		end := 0 // where the part's text ends: its last token's end (the value is trimmed anyway)
		if len(p) > 0 {
			end = p[len(p)-1].Pos + len(p[len(p)-1].Text)
		}
		it, kept, ierr := readSetItem(sqlText, p, end)
		ok = ok || kept
		if !kept && ierr == nil && len(p) > 0 {
			ierr = refusedVariable(strings.ToLower(p[0].Text))
		}
		if ierr != nil && err == nil {
			err = ierr
		}
		items = append(items, it)
	}
	return items, ok, err
}

// readSetItem reads one assignment (its tokens p, its text ending at end in sqlText); kept
// says it names a variable kept here.
func readSetItem(sqlText string, p []sqltok.Token, end int) (it setItem, kept bool, err error) {
	if len(p) == 0 {
		return it, false, nil
	}
	i := 0
	switch {
	case p[0].Text == "@" && len(p) > 1:
		name, ok := userVarName(p[1])
		if !ok {
			return it, false, nil
		}
		it.user, it.name, i = true, name, 2
	case p[0].Text == "@@" && len(p) > 1:
		name, at := systemVarName(p, 1)
		if at < 0 {
			return it, false, refusedVariable("GLOBAL " + strings.ToLower(p[len(p)-1].Text))
		}
		it.name, i = name, at+1
	case p[0].IsWord("global", "persist", "persist_only"):
		return it, false, refusedVariable("GLOBAL " + strings.ToLower(p[min(1, len(p)-1)].Text))
	case p[0].IsWord("names", "charset") || p[0].IsWord("character") && len(p) > 1 && p[1].IsWord("set"):
		return setItem{name: "character_set_client", expr: "'utf8mb4'"}, true, utf8Only(p)
	default:
		if p[0].IsWord("session", "local") {
			i = 1
		}
		if i >= len(p) || p[i].Kind != sqltok.Word {
			return it, false, nil
		}
		it.name, i = strings.ToLower(p[i].Text), i+1
	}
	if !it.user {
		if _, known := mysqlSessionVars[it.name]; !known {
			return it, false, refusedVariable(it.name)
		}
	}
	if i >= len(p) || p[i].Kind != sqltok.Operator {
		return it, false, nil
	}
	op := p[i].Text
	assign := 0
	switch {
	case strings.HasPrefix(op, ":="):
		assign = 2
	case strings.HasPrefix(op, "="):
		assign = 1
	default:
		return it, false, nil
	}
	it.expr = strings.TrimSpace(sqlText[p[i].Pos+assign : end])
	return it, true, nil
}

// utf8Only refuses SET NAMES / CHARACTER SET of anything but UTF-8 (the proxy's strings are).
func utf8Only(p []sqltok.Token) error {
	for _, t := range p[1:] {
		if t.IsWord("set") {
			continue
		}
		if t.IsWord("collate") {
			return nil
		}
		if v := strings.ToLower(strings.Trim(t.Text, "'\"`")); v != "utf8" && v != "utf8mb3" && v != "utf8mb4" && v != "default" {
			return refusedVariable("NAMES " + v)
		}
		return nil
	}
	return nil
}

// refusedVariable is the refusal of a SET of a variable that is not kept here.
func refusedVariable(name string) error {
	return &query.Error{Code: "0A000", Message: "SET " + name + " is not supported by queryflux on DuckDB"}
}

// assign runs one assignment on conn (a session variable's value checked: set).
func assign(ctx context.Context, conn *sql.Conn, it setItem, set sessionSet, inTx bool) error {
	if it.user {
		_, err := conn.ExecContext(ctx, "SET VARIABLE "+quoteIdent("qf_uv_"+strings.ToLower(it.name))+" = "+mysqlCompat(it.expr))
		return wrapErr(err)
	}
	v, isDefault := set.v, set.isDefault
	if it.name == "foreign_key_checks" && (v == "1" || isDefault) {
		if err := applyDeferredKeys(ctx, conn, inTx); err != nil {
			return err
		}
	}
	if isDefault {
		_, err := conn.ExecContext(ctx, "RESET VARIABLE "+quoteIdent("qf_sv_"+it.name))
		return wrapErr(err)
	}
	lit := v
	if k := mysqlSessionVars[it.name].kind; k != varSwitch && k != varSeconds {
		lit = sqltok.StandardString(v)
	}
	_, err := conn.ExecContext(ctx, "SET VARIABLE "+quoteIdent("qf_sv_"+it.name)+" = "+lit)
	return wrapErr(err)
}

// sessionValue evaluates a session variable's new value and checks it: the value as kept
// (a switch's 0 or 1), or isDefault for DEFAULT.
func sessionValue(ctx context.Context, conn *sql.Conn, it setItem) (v string, isDefault bool, err error) {
	toks := sqltok.SignificantTokens(it.expr, sqltok.MySQL)
	switch {
	case len(toks) == 1 && toks[0].IsWord("default"):
		return "", true, nil
	case len(toks) == 1 && toks[0].Kind == sqltok.Word: // SET foreign_key_checks = OFF: a word is its text
		v = toks[0].Text
	default:
		var got sql.NullString
		if err := conn.QueryRowContext(ctx, "SELECT CAST(("+mysqlCompat(it.expr)+") AS VARCHAR)").Scan(&got); err != nil {
			return "", false, wrapErr(err)
		}
		if !got.Valid {
			return "", false, wrongValue(it.name, "NULL")
		}
		v = got.String
	}
	low := strings.ToLower(v)
	switch mysqlSessionVars[it.name].kind {
	case varSwitch:
		switch low {
		case "0", "off", "false":
			return "0", false, nil
		case "1", "on", "true":
			return "1", false, nil
		}
	case varText:
		if it.name == "sql_mode" {
			mode, err := normalSQLMode(v, len(toks) == 1 && toks[0].Kind == sqltok.Number)
			return mode, false, err
		}
		return strings.ToUpper(v), false, nil
	case varZone:
		if low == "+00:00" || low == "+0:00" || low == "utc" || low == "system" {
			return v, false, nil
		}
		return "", false, refusedVariable("time_zone = '" + v + "' (the proxy's zone is UTC)")
	case varCharset:
		// binary results: as stored, which is UTF-8 here (mariadb-dump's around SHOW CREATE TABLE)
		if low == "utf8" || low == "utf8mb3" || low == "utf8mb4" || low == "binary" && it.name == "character_set_results" {
			return v, false, nil
		}
		return "", false, refusedVariable(it.name + " = " + v)
	case varSeconds:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || slices.ContainsFunc(toks, func(t sqltok.Token) bool { return t.Kind == sqltok.String }) {
			return "", false, &query.Error{Code: "42000", Message: "Incorrect argument type to variable '" + it.name + "' (MySQL error 1232)"}
		}
		return strconv.FormatInt(min(max(n, 0), 100000000), 10), false, nil
	case varCollation:
		if strings.HasPrefix(low, "utf8") {
			return v, false, nil
		}
		return "", false, refusedVariable(it.name + " = " + v)
	}
	return "", false, wrongValue(it.name, v)
}

// wrongValue is MariaDB's error 1231 for a value a variable does not take.
func wrongValue(name, v string) error {
	return &query.Error{Code: "42000", Message: "Variable '" + name + "' can't be set to the value of '" + v + "' (MySQL error " + strconv.Itoa(1231) + ")"}
}
