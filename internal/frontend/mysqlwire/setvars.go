package mysqlwire

import (
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Session variables. Statements run on whichever pooled engine connection is free,
// and a transaction's pinned connection goes back to the pool at its end, so a SET cannot
// reach "this client's session": on an engine connection it would change the connection for
// other clients, and the client's next statement would not see it. So this frontend answers a
// SET itself: one that keeps what the proxy reports (SET NAMES utf8mb4 or another carried
// charset, charset.go; autocommit=1, time_zone
// '+00:00', isolation REPEATABLE READ: what drivers send at connect) is a no-op OK; any other
// is refused with ER_NOT_SUPPORTED_YET, naming the variable: other session and GLOBAL
// variables, user variables (@v) and SET TRANSACTION (it would apply to the next transaction,
// on another connection). MariaDB's SET STATEMENT ... FOR <statement> only lasts its statement
// and runs on the engine. Not detected: variables set by a statement other than SET (SELECT
// @v := 1, SELECT ... INTO @v).
//
// User variables live on the engine, for a backend that can pin connections: a statement that
// names one (SET @v, CALL p(@out), SELECT ... INTO @v, SELECT @v) pins a connection and holds
// it until the client disconnects (session.go, pinFor), as a named lock does, so the client's
// statements after it read them there; it is closed then rather than pooled (it left session
// state), so no other client sees them. PyMySQL's and mysqlclient's callproc (SET @_p_0 = ...,
// CALL p(@_p_0, ...), SELECT @_p_0) works so. The session's statements then all take the
// Arrow path, on that connection. A SET that names a user variable goes there whole, with the
// session variables it sets (a dump's SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='...', and at its
// end SET SQL_MODE=@OLD_SQL_MODE): the engine keeps or refuses them (the DuckDB engine keeps
// those a dump sets, duckengine/mysqlvars.go). So does a SET of the session variables dump
// and migration tools set (engineVariables: SET @@SQL_MODE='', SET FOREIGN_KEY_CHECKS=0).
//
// SET autocommit=0 is carried, not sent: PyMySQL and mysqlclient send it at connect. The
// session then starts a pinned transaction before its next statement (session.go, pinFor), so
// every statement runs inside one until COMMIT or ROLLBACK, as on MySQL. A backend that cannot
// pin a connection (no engine.SessionOpener) refuses it.
//
// The session's isolation level is carried too (Django sends SET SESSION TRANSACTION ISOLATION
// LEVEL READ COMMITTED at connect; also SET [SESSION] transaction_isolation / tx_isolation =
// 'READ-COMMITTED'): the session remembers it and sends SET TRANSACTION ISOLATION LEVEL on the
// pinned connection right before each transaction starts there, explicit or implicit (pinFor).
// That form lasts one transaction, so the pooled connection keeps its default afterwards.
// Statements outside a transaction (autocommit single statements on pooled connections) run
// at the engine's default level. REPEATABLE READ is taken for the engine's default, as the
// proxy reports it. SET TRANSACTION without SESSION (the next transaction only) and GLOBAL stay
// refused unless they keep the default; a backend that cannot pin refuses other levels.

// setEffect is what a SET statement does to the session's carried settings.
type setEffect struct {
	autocommit autocommitSet
	isolation  string   // the level set ("READ COMMITTED"), "" if not assigned
	setsNames  bool     // SET NAMES or CHARACTER SET of a carried collation (charset.go)
	collation  uint8    // that collation, 0 for the default
	charsetVar bool     // a character_set_* or collation_connection variable of its own (charset.go)
	engineVars []string // the other engineVariables it sets (sql_mode, foreign_key_checks, ...), read past refusals only
	timeZone   string   // time_zone as MariaDB reads it back ("+00:00", "SYSTEM"), "" if not assigned
}

// changesIsolation: the SET assigns a level other than the engine's default (REPEATABLE READ,
// as the proxy reports it).
func (e setEffect) changesIsolation() bool {
	return e.isolation != "" && e.isolation != "REPEATABLE READ"
}

// autocommitSet is what a SET statement does to autocommit.
type autocommitSet int

const (
	autocommitKept autocommitSet = iota // not assigned
	autocommitOn
	autocommitOff
)

// readSet reads a SET statement (one whose first word is SET): what it does to autocommit and
// the isolation level, or the refusal when it sets anything else the client could see (a SET
// keeping what the proxy reports is answered OK here).
func readSet(sql string) (setEffect, error) {
	return readSetItems(sql, true)
}

// readSetItems is readSet; refusing false reads past what the proxy would refuse (a SET that
// goes to the engine whole, setsEngineVariables, and carries autocommit=1 or NAMES with it).
func readSetItems(sql string, refusing bool) (setEffect, error) {
	toks := significantMySQL(sql)
	eff := setEffect{}
	for _, item := range setItems(toks[1:]) {
		name, v, ok := keepsReported(item)
		switch {
		case name == "transaction" && v != "": // SESSION TRANSACTION ISOLATION LEVEL
			eff.isolation = v
		case isIsolationVar(name) && isolationLevel(v) != "":
			eff.isolation = isolationLevel(v)
		case name == "time_zone" && ok:
			eff.timeZone = timeZoneValue(v)
		case name == "autocommit" && ok:
			eff.autocommit = autocommitOn
		case name == "autocommit" && isOff(v):
			eff.autocommit = autocommitOff
		case (name == "NAMES" || name == "CHARACTER SET") && ok:
			id, _ := strconv.Atoi(v)
			eff.setsNames, eff.collation = true, uint8(id)
		case charsetVariables[name]:
			eff.charsetVar = true
			if !ok && refusing {
				return eff, refuseSet(name)
			}
		case engineVariables[name] && !refusing:
			eff.engineVars = append(eff.engineVars, name)
		case name == "sql_mode" && refusing && readingMode(v) != "":
			return eff, &mysql.MyError{Code: mysql.ER_WRONG_VALUE_FOR_VAR, State: "42000",
				Message: "Variable 'sql_mode' can't be set to the value of '" + readingMode(v) + "': queryflux reads statements as MariaDB's default sql_mode does"}
		case !ok && refusing:
			return eff, refuseSet(name)
		}
	}
	return eff, nil
}

// setRefusal is readSet's refusal for a backend that cannot pin sessions: there
// autocommit=0 and isolation levels other than the default are refused too.
func setRefusal(sql string) error {
	eff, err := readSet(sql)
	switch {
	case err != nil:
		return err
	case eff.autocommit == autocommitOff:
		return refuseSet("autocommit")
	case eff.changesIsolation():
		return refuseSet("transaction")
	}
	return nil
}

// checkSet returns the refusal a SET statement gets on this client connection, without applying the
// statement (COM_STMT_PREPARE checks it this way).
func (h *session) checkSet(sql string) error {
	if h.canPin() {
		_, err := readSet(sql)
		return err
	}
	return setRefusal(sql)
}

// followEngineSet carries into the session what a SET the engine ran (answersSet false) set
// among the values the session keeps: Connector/J's "set autocommit=1, sql_mode = ..." at
// connect, or the same from a client whose autocommit is off, which turns it on (the engine's
// own autocommit is on: its START TRANSACTION of the session's is committed here, as MySQL
// commits an open transaction when autocommit is turned on); NAMES, the isolation level, and
// that the engine now answers the character set variables (charset.go).
func (h *session) followEngineSet(sql string) error {
	eff, _ := readSetItems(sql, false)
	h.charsetOnEngine = h.charsetOnEngine || eff.charsetVar
	for _, name := range eff.engineVars {
		if h.onEngine == nil {
			h.onEngine = map[string]bool{}
		}
		h.onEngine[name] = true
	}
	return h.apply(eff)
}

// engineSetText is the text of a SET the engine runs (answersSet false): sql without the
// assignments the session carries itself (autocommit, the isolation level), which would
// otherwise turn the held connection's own autocommit off or change its level for good; the
// session applies them (followEngineSet) as it does a SET it answers. sql itself when it has
// none.
func engineSetText(sql string) string {
	items := setItems(significantMySQL(sql)[1:])
	kept := make([]string, 0, len(items))
	for _, item := range items {
		if len(item) > 0 && !carriedBySession(item) {
			last := item[len(item)-1]
			kept = append(kept, sql[item[0].Pos:last.Pos+len(last.Text)])
		}
	}
	if len(kept) == len(items) || len(kept) == 0 {
		return sql
	}
	return "SET " + strings.Join(kept, ", ")
}

// carriedBySession: a SET's assignment is one of autocommit or the isolation level to a value
// the session keeps (readSetItems).
func carriedBySession(item []sqltok.Token) bool {
	name, v, ok := keepsReported(item)
	return name == "autocommit" && (ok || isOff(v)) || isIsolationVar(name) && isolationLevel(v) != ""
}

// set answers a SET statement: the session keeps autocommit (turning it on commits an open
// transaction, as MySQL does) and the isolation level (for its next transactions); anything
// else the client could see is refused.
func (h *session) set(sql string) error {
	if err := h.checkSet(sql); err != nil {
		return err
	}
	eff, _ := readSet(sql) // refused above if erroneous
	return h.apply(eff)
}

// apply keeps what a SET set (its effect): the collation, the isolation level, autocommit.
func (h *session) apply(eff setEffect) error {
	if eff.setsNames && h.charsetOnEngine {
		h.charsetOnEngine = false // all three set together again, as the session's collation
		h.collation = eff.collation
	} else if eff.setsNames && eff.collation != h.collation {
		// A pinned connection was opened in the old set: it is set anew, and the SET leaves it
		// closed rather than pooled when the session gives it up (mysqlengine's dirty).
		if h.pinned != nil {
			c := collationOf(eff.collation)
			if err := h.execPinned(h.ctx, "SET NAMES "+c.Charset+" COLLATE "+c.Name); err != nil {
				return err
			}
		}
		h.collation = eff.collation
	}
	if eff.timeZone != "" {
		h.timeZone = eff.timeZone
	}
	var err error
	if eff.isolation != "" {
		h.isolation = eff.isolation
		if !eff.changesIsolation() {
			h.isolation = "" // the engine's default
		}
	}
	switch ac := eff.autocommit; {
	case ac == autocommitOff:
		h.autocommitOff = true
	case ac == autocommitOn && h.autocommitOff:
		h.autocommitOff = false
		if h.pinned != nil && h.pinned.TxStatus() != 'I' {
			if err = h.execPinned(h.ctx, "COMMIT"); err != nil {
				h.unpin() // nothing is left open either: Close rolls back
			}
		} // a held connection stays (syncTx gives up one that is not)
	}
	h.syncTx()
	return err
}

// trackedSet is the OK of a SET the session answered, for a client that tracks session state
// (CLIENT_SESSION_TRACK): the system variables it changed among those MariaDB tracks by default
// (session_track_system_variables: autocommit, character_set_client, _connection, _results),
// as MariaDB's OK names them. mysql2 reads character_set_client there to encode what it sends
// next. nil (go-mysql's plain OK) when nothing tracked changed.
func (h *session) trackedSet(collation uint8, autocommitOff bool, err error) *mysql.Result {
	if err != nil || !h.conn.HasCapability(mysql.CLIENT_SESSION_TRACK) ||
		h.collation == collation && h.autocommitOff == autocommitOff {
		return nil
	}
	vars := map[string]string{}
	if h.collation != collation {
		set := collationOf(h.collation).Charset
		vars["character_set_client"], vars["character_set_connection"], vars["character_set_results"] = set, set, set
	}
	if h.autocommitOff != autocommitOff {
		vars["autocommit"] = map[bool]string{true: "OFF", false: "ON"}[h.autocommitOff]
	}
	return &mysql.Result{Status: mysql.SERVER_SESSION_STATE_CHANGED, SessionTracking: &mysql.SessionTrackingInfo{Variables: vars}}
}

// namesUserVariable reports whether sql names a user variable (@v, @`v`, @'v'; not @@v):
// one pass over its tokens when it holds an @ at all.
func namesUserVariable(sql string) bool {
	if !strings.Contains(sql, "@") {
		return false
	}
	toks := sqltok.SignificantTokens(sql, sqltok.MySQL)
	for i, t := range toks[:max(len(toks)-1, 0)] {
		if t.Kind == sqltok.Operator && strings.HasSuffix(t.Text, "@") && !strings.HasSuffix(t.Text, "@@") {
			switch toks[i+1].Kind {
			case sqltok.Word, sqltok.QuotedIdent, sqltok.String:
				return true
			}
		}
	}
	return false
}

// answersSet reports whether sql is a SET this frontend answers itself (set): every SET but,
// on a backend that can pin, one naming user variables or setting engineVariables, which runs
// on the engine, on a connection held for the session (pinFor), by text and prepared (SET @v = ?).
func (h *session) answersSet(sql string) bool {
	if !isSetStatement(sql) || !h.canPin() {
		return isSetStatement(sql)
	}
	if namesUserVariable(sql) || setsEngineVariables(sql) {
		return false
	}
	if h.charsetOnEngine { // the engine's are the session's character sets now: it answers them
		eff, _ := readSetItems(sql, false)
		return !eff.charsetVar && !eff.setsNames
	}
	return true
}

// engineVariables are the session variables that dump tools and migration tools set
// (mysqldump's and mariadb-dump's SET @@SQL_MODE=”, SQL_QUOTE_SHOW_CREATE=1, their
// character_set_results = 'binary' around SHOW CREATE TABLE; Django's and Laravel's
// FOREIGN_KEY_CHECKS=0): a SET of them goes to the engine on a held connection, as a user
// variable's does, where the backend can pin one.
var engineVariables = map[string]bool{"sql_mode": true, "sql_quote_show_create": true, "foreign_key_checks": true,
	"unique_checks": true, "sql_notes": true, "note_verbosity": true, "character_set_results": true,
	"character_set_client": true, "character_set_connection": true, "collation_connection": true,
	"innodb_lock_wait_timeout": true}

// setsEngineVariables reports whether sql is a SET of engineVariables (and of values the
// proxy reports, or autocommit and the isolation level, which the session carries), at least one of them to a value the proxy does not report; not a sql_mode
// that changes how statements are read (ANSI_QUOTES, NO_BACKSLASH_ESCAPES, PIPES_AS_CONCAT:
// the proxy reads them too).
func setsEngineVariables(sql string) bool {
	if !isSetStatement(sql) {
		return false
	}
	some := false
	for _, item := range setItems(significantMySQL(sql)[1:]) {
		name, v, ok := keepsReported(item)
		switch {
		case ok, carriedBySession(item): // SET autocommit=0, sql_mode=... goes to the engine without its autocommit
		case name == "sql_mode" && (strings.Contains(v, "ansi") || strings.Contains(v, "no_backslash_escapes") || strings.Contains(v, "pipes_as_concat")):
			return false // modes that change how statements are read, which the proxy reads too
		case engineVariables[name]:
			some = true
		default:
			return false
		}
	}
	return some
}

// readingMode is the first mode v (a SET's value, lower case) names that changes how
// statements are read (setsEngineVariables), upper case; "" for none.
func readingMode(v string) string {
	for _, m := range []string{"ansi_quotes", "pipes_as_concat", "no_backslash_escapes", "ansi"} {
		if strings.Contains(v, m) {
			return strings.ToUpper(m)
		}
	}
	return ""
}

func (h *session) canPin() bool {
	_, ok := h.s.backend.(engine.SessionOpener)
	return ok
}

func isOff(v string) bool { return v == "0" || v == "off" || v == "false" }

// isSetStatement: sql's first word, after blanks and comments, is SET, but not MariaDB's SET
// STATEMENT ... FOR, which lasts one statement and goes to the engine. It reads two tokens at
// most and allocates nothing: this runs on every statement.
func isSetStatement(sql string) bool {
	s := sqltok.NewScanner(sql, sqltok.MySQL)
	first, ok := s.NextSignificant()
	if !ok || first.Kind != sqltok.Word || !strings.EqualFold(first.Text, "set") {
		return false
	}
	second, ok := s.NextSignificant()
	return !ok || !strings.EqualFold(second.Text, "statement")
}

func refuseSet(name string) error {
	instead := "set it on the engine (the user's or server's defaults) or in the cluster's connection options"
	switch name {
	case "autocommit":
		instead = "use START TRANSACTION ... COMMIT (drivers: connect with autocommit on)"
	case "user variable":
		instead = "pass the value as a statement parameter"
	case "transaction":
		instead = "use START TRANSACTION READ ONLY / WITH CONSISTENT SNAPSHOT, or set the engine's default isolation"
	}
	return mysql.NewError(mysql.ER_NOT_SUPPORTED_YET, "SET "+name+" is not supported by queryflux: statements run on pooled engine connections, "+
		"so a session setting would not carry to your next statement and would change the connection for other clients; "+instead)
}

// significantMySQL is sql's tokens without blanks, comments and semicolons.
func significantMySQL(sql string) []sqltok.Token {
	all := sqltok.SignificantTokens(sql, sqltok.MySQL)
	toks := all[:0]
	for _, t := range all {
		if t.Text != ";" {
			toks = append(toks, t)
		}
	}
	return toks
}

// setItems are SET's assignments; SET [scope] TRANSACTION is one, whose commas separate
// characteristics.
func setItems(toks []sqltok.Token) [][]sqltok.Token {
	for i := 0; i < len(toks) && i < 2; i++ {
		if toks[i].Kind == sqltok.Word && strings.EqualFold(toks[i].Text, "transaction") {
			return [][]sqltok.Token{toks}
		}
	}
	return sqltok.SplitAtCommas(toks)
}

// keepsReported reads one assignment and reports whether it keeps the value the proxy reports
// (variable); name is what it sets, v the value assigned to a plain variable (for SET SESSION
// TRANSACTION ISOLATION LEVEL, the level).
func keepsReported(item []sqltok.Token) (name, v string, ok bool) {
	w := func(i int) string {
		if i < len(item) && (item[i].Kind == sqltok.Word || item[i].Kind == sqltok.QuotedIdent) {
			return strings.ToLower(strings.Trim(item[i].Text, "`"))
		}
		return ""
	}
	i := 0
	switch w(0) {
	case "global", "persist", "persist_only":
		return "GLOBAL " + w(1), "", false
	case "session", "local":
		i = 1
	}
	switch {
	case w(i) == "names":
		id, ok := namesCollation(value(item[i+1:]))
		return "NAMES", strconv.Itoa(int(id)), ok
	case w(i) == "charset", w(i) == "character" && w(i+1) == "set":
		id, ok := namesCollation(value(item[len(item)-1:]))
		return "CHARACTER SET", strconv.Itoa(int(id)), ok
	case w(i) == "transaction":
		if level := sessionIsolation(item[i+1:]); i == 1 && level != "" {
			return "transaction", level, true
		}
		return "transaction", "", isDefaultTransaction(item[i+1:])
	case i < len(item) && item[i].Text == "@":
		return "user variable", "", false
	case i < len(item) && item[i].Text == "@@":
		i++
		if s := w(i); (s == "session" || s == "local" || s == "global") && i+1 < len(item) && item[i+1].Text == "." {
			if s == "global" {
				return "GLOBAL " + w(i+2), "", false
			}
			i += 2
		}
	}
	name = w(i)
	if i+1 < len(item) && (item[i+1].Text == "=" || item[i+1].Text == ":=") {
		v = value(item[i+2:])
		return name, v, reportedValue(name, v)
	}
	return name, "", false
}

// value is an assignment's value in lower case: one literal unquoted, else the tokens' text.
func value(toks []sqltok.Token) string {
	if len(toks) == 1 && toks[0].Kind == sqltok.String {
		t := toks[0].Text
		return strings.ToLower(t[1 : len(t)-1])
	}
	texts := make([]string, len(toks))
	for i, t := range toks {
		texts[i] = t.Text
	}
	return strings.ToLower(strings.Join(texts, " "))
}

// reportedValue: v is the value variable(name) reports, in one of its spellings.
func reportedValue(name, v string) bool {
	switch name {
	case "autocommit":
		return v == "1" || v == "on" || v == "true"
	case "character_set_client", "character_set_connection":
		return isUTF8(v)
	case "character_set_results":
		return isUTF8(v) || v == "null" // NULL: results as stored, which is utf8mb4 here
	case "collation_connection":
		return strings.HasPrefix(v, "utf8mb4_") || strings.HasPrefix(v, "utf8_") || strings.HasPrefix(v, "utf8mb3_")
	case "time_zone":
		return timeZoneValue(v) != ""
	case "transaction_isolation", "tx_isolation":
		return v == "repeatable-read"
	case "transaction_read_only", "tx_read_only":
		return v == "0" || v == "off" || v == "false"
	case "sql_select_limit": // Connector/J resets it so after a setMaxRows
		return v == "default" || v == sqlSelectLimitDefault
	case "sql_auto_is_null": // Django turns it off when it is on
		return v == "0" || v == "off" || v == "false"
	}
	return false
}

// timeZoneValue is @@time_zone as MariaDB reads back a SET of v (lower case), for the zones the
// proxy's connections keep (UTC, which is also the system's zone it reports); "" for another.
func timeZoneValue(v string) string {
	switch v {
	case "+00:00", "+0:00":
		return "+00:00"
	case "system", "default":
		return timeZoneDefault
	case "utc":
		return "UTC"
	}
	return ""
}

// timeZoneDefault is MariaDB's @@time_zone before any SET: the system's, which the proxy's
// @@system_time_zone says is UTC.
const timeZoneDefault = "SYSTEM"

// sqlSelectLimitDefault is MySQL's @@sql_select_limit when no limit is set (2^64-1).
const sqlSelectLimitDefault = "18446744073709551615"

func isUTF8(charset string) bool {
	charset, _, _ = strings.Cut(charset, " collate")
	charset = strings.Trim(charset, "'\"")
	return charset == "utf8mb4" || charset == "utf8" || charset == "utf8mb3"
}

// isDefaultTransaction: SET [SESSION] TRANSACTION's characteristics are REPEATABLE READ and/or
// READ WRITE, what the proxy reports.
func isDefaultTransaction(toks []sqltok.Token) bool {
	words := characteristics(toks)
	s := strings.ReplaceAll(words, " isolation level repeatable read ", " ")
	s = strings.ReplaceAll(s, " read write ", " ")
	return strings.TrimSpace(s) == "" && strings.TrimSpace(words) != ""
}

// characteristics is SET TRANSACTION's characteristics as lower-case words between spaces
// (" isolation level read committed read write "), commas dropped.
func characteristics(toks []sqltok.Token) string {
	var words []string
	for _, t := range toks {
		if t.Text != "," {
			words = append(words, strings.ToLower(t.Text))
		}
	}
	return " " + strings.Join(words, " ") + " "
}

// isolationLevels maps SET TRANSACTION's level words to the level's SQL spelling.
var isolationLevels = map[string]string{
	"read uncommitted": "READ UNCOMMITTED", "read committed": "READ COMMITTED",
	"repeatable read": "REPEATABLE READ", "serializable": "SERIALIZABLE",
}

// sessionIsolation is the level SET SESSION TRANSACTION's characteristics set (ISOLATION LEVEL
// x, optionally with READ WRITE), "" for any other characteristics.
func sessionIsolation(toks []sqltok.Token) string {
	s := strings.TrimSpace(strings.ReplaceAll(characteristics(toks), " read write ", " "))
	if rest, ok := strings.CutPrefix(s, "isolation level "); ok {
		return isolationLevels[rest]
	}
	return ""
}

func isIsolationVar(name string) bool {
	return name == "transaction_isolation" || name == "tx_isolation"
}

// isolationLevel reads a transaction_isolation value ('read-committed'): the level's SQL
// spelling, "" if v is none.
func isolationLevel(v string) string {
	return isolationLevels[strings.ReplaceAll(v, "-", " ")]
}
