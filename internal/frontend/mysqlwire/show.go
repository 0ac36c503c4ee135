package mysqlwire

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// SHOW VARIABLES, SHOW COLLATION and SHOW CHARACTER SET are answered here, whatever engine the
// client's statements go to: the variables are the session's own (what SELECT @@name answers,
// variable), and the proxy speaks utf8mb4 to every client. ORMs ask them at connect
// (SQLAlchemy: SHOW VARIABLES LIKE 'sql_mode' and 'lower_case_table_names', SHOW COLLATION;
// Connector/J 5: SHOW VARIABLES WHERE Variable_name = ... OR ...), and an engine that is not
// MySQL has no answer (DuckDB's parser error, PostgreSQL's unknown parameter).

// variableNames are the variables SHOW VARIABLES lists, sorted (MySQL's order).
var variableNames = []string{
	"auto_increment_increment", "auto_increment_offset", "autocommit", "character_set_client",
	"character_set_connection", "character_set_database", "character_set_results", "character_set_server",
	"collation_connection", "collation_database", "collation_server", "default_storage_engine", "error_count",
	"init_connect", "interactive_timeout", "license", "lower_case_table_names", "max_allowed_packet",
	"net_read_timeout", "net_write_timeout", "performance_schema", "query_cache_size", "query_cache_type",
	"sql_auto_is_null", "sql_mode", "sql_select_limit", "system_time_zone", "time_zone", "transaction_isolation",
	"transaction_read_only", "tx_isolation", "tx_read_only", "version", "version_comment", "wait_timeout",
	"warning_count",
}

// collations and charsets are SHOW COLLATION's and SHOW CHARACTER SET's rows: the character
// set results go out in, and binary.
var (
	collations = [][]any{
		{"binary", "binary", int64(63), "Yes", "Yes", int64(1)},
		{"utf8mb4_bin", "utf8mb4", int64(46), "", "Yes", int64(1)},
		{"utf8mb4_general_ci", "utf8mb4", int64(45), "Yes", "Yes", int64(1)},
	}
	charsets = [][]any{
		{"binary", "Binary pseudo charset", "binary", int64(1)},
		{"utf8mb4", "UTF-8 Unicode", "utf8mb4_general_ci", int64(4)},
	}
)

// showLocal answers SHOW [GLOBAL|SESSION|LOCAL] {VARIABLES|STATUS}, SHOW COLLATION and SHOW
// {CHARACTER SET|CHARSET}, each with an optional LIKE 'pattern' or WHERE on its first column; ok is false
// for any other statement. A WHERE this cannot read (anything but first-column = 'x', LIKE
// 'x' and IN ('x', ...), joined by OR) is refused with 1235.
func (h *session) showLocal(sql string) (res *mysql.Result, err error, ok bool) {
	if !sqltok.FirstKeywordIs(sql, sqltok.MySQL, "show") {
		return nil, nil, false
	}
	toks := sqltok.SignificantTokens(sql, sqltok.MySQL)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	if err := h.createDatabaseKnown(toks); err != nil {
		return nil, err, true
	}
	i := 1
	global := i < len(toks) && toks[i].IsWord("global")
	if i < len(toks) && toks[i].IsWord("global", "session", "local") {
		i++
	}
	var names []string
	var rows [][]any
	variables := false
	switch {
	case i < len(toks) && toks[i].IsWord("variables"):
		i++
		names, variables = []string{"Variable_name", "Value"}, true
		for _, n := range h.variablesShown() {
			rows = append(rows, []any{n, nil})
		}
	case i < len(toks) && toks[i].IsWord("status"):
		i++
		names, rows = []string{"Variable_name", "Value"}, h.statusRows(global)
	case i == 1 && i < len(toks) && toks[i].IsWord("collation"):
		i++
		names, rows = []string{"Collation", "Charset", "Id", "Default", "Compiled", "Sortlen"}, collations
	case i == 1 && i < len(toks) && toks[i].IsWord("charset"):
		i++
		names, rows = []string{"Charset", "Description", "Default collation", "Maxlen"}, charsets
	case i == 1 && i+1 < len(toks) && toks[i].IsWord("character") && toks[i+1].IsWord("set"):
		i += 2
		names, rows = []string{"Charset", "Description", "Default collation", "Maxlen"}, charsets
	default:
		return nil, nil, false
	}
	keep, err := rowFilter(toks[i:], names[0])
	if err != nil {
		return nil, err, true
	}
	var kept [][]any
	for _, r := range rows {
		if keep(r[0].(string)) {
			if variables {
				r = []any{r[0], h.shownValue(r[0].(string))}
			}
			kept = append(kept, r)
		}
	}
	return mysql.NewResult(textResultset(names, kept)), nil, true
}

// variablesShown are the variables SHOW VARIABLES lists: the proxy's own, and those the client
// set on its held connection (onEngine), sorted.
func (h *session) variablesShown() []string {
	names := variableNames
	for n := range h.onEngine {
		if !slices.Contains(variableNames, n) {
			names = append(slices.Clip(names), n)
		}
	}
	if len(names) != len(variableNames) {
		slices.Sort(names)
	}
	return names
}

// shownValue is SHOW VARIABLES' value of the variable name: the session's (variable), ON or OFF
// for a boolean, as MariaDB shows them; or the held connection's for one the engine answers.
func (h *session) shownValue(name string) string {
	v, ok := h.variable(name)
	if !ok {
		return h.engineVariable(name)
	}
	if iv, isInt := v.(int64); isInt {
		if shownOnOff[name] {
			return map[bool]string{true: "ON", false: "OFF"}[iv != 0]
		}
		return strconv.FormatInt(iv, 10)
	}
	return v.(string)
}

// shownOnOff are the boolean variables of variableNames, which SHOW VARIABLES shows as ON or OFF
// (SELECT @@name answers 1 or 0).
var shownOnOff = map[string]bool{"autocommit": true, "sql_auto_is_null": true, "transaction_read_only": true,
	"tx_read_only": true, "performance_schema": true}

// engineVariable is SHOW VARIABLES' value of the session variable name the engine answers:
// the engine's own SHOW (a MySQL engine's ON and OFF), else its SELECT @@name; "" when it is
// NULL or the engine tells neither.
func (h *session) engineVariable(name string) string {
	if v, ok := h.engineValue("SHOW SESSION VARIABLES LIKE '"+name+"'", 1); ok {
		return v
	}
	v, _ := h.engineValue("SELECT @@session."+name, 0)
	return v
}

// engineValue runs sql on the held connection (on a pooled one without it) and reads its first
// row's column col ("" for NULL); ok is false when the engine refused it or answered no such
// value.
func (h *session) engineValue(sql string, col int) (v string, ok bool) {
	execute := h.s.backend.Execute
	if h.pinned != nil {
		execute = h.pinned.Execute
		defer h.settleStatement(h.guardStatement(h.ctx, sql), sql, 0) // a refusal leaves the transaction as it was
	}
	rows, err := execute(h.ctx, h.request(sql, nil))
	if err != nil {
		return "", false
	}
	defer rows.Close()
	batch, err := rows.Next(h.ctx)
	if err != nil || batch.NumRows() == 0 || int(batch.NumCols()) <= col {
		return "", false
	}
	if a := batch.Column(col); !a.IsNull(0) {
		v = a.ValueStr(0)
	}
	for err == nil { // the rest of the answer, so the connection is ready for the next statement
		_, err = rows.Next(h.ctx)
	}
	return v, true
}

// textResultset is a resultset of the proxy's own: a column of int64 values is a BIGINT, any
// other a utf8mb4 string (go-mysql's BuildSimpleTextResultset sends an empty string as NULL,
// which @@sql_mode is not).
func textResultset(names []string, rows [][]any) *mysql.Resultset {
	rs := &mysql.Resultset{Fields: make([]*mysql.Field, len(names))}
	for i, n := range names {
		f := &mysql.Field{Name: []byte(n), Type: mysql.MYSQL_TYPE_VAR_STRING, Charset: charsetUTF8MB4, ColumnLength: 1024}
		if len(rows) > 0 {
			if _, isInt := rows[0][i].(int64); isInt {
				f.Type, f.Charset, f.ColumnLength, f.Flag = mysql.MYSQL_TYPE_LONGLONG, charsetBinary, 21, mysql.BINARY_FLAG
			}
		}
		rs.Fields[i] = f
	}
	for _, r := range rows {
		var row []byte
		for _, v := range r {
			switch v := v.(type) {
			case int64:
				row = append(row, mysql.PutLengthEncodedString(strconv.AppendInt(nil, v, 10))...)
			case string:
				row = append(row, mysql.PutLengthEncodedString([]byte(v))...)
			default:
				panic(fmt.Sprintf("mysqlwire: a %T in a resultset of the proxy's own", v))
			}
		}
		rs.RowDatas = append(rs.RowDatas, row)
	}
	return rs
}

// rowFilter reads what follows a local SHOW's name (nothing, LIKE 'p', or WHERE on column):
// which first-column values it keeps, compared as MySQL's utf8mb4_general_ci does (ignoring
// ASCII case).
func rowFilter(toks []sqltok.Token, column string) (func(string) bool, error) {
	if len(toks) == 0 {
		return func(string) bool { return true }, nil
	}
	if toks[0].IsWord("like") {
		if p, n := literalAt(toks, 1); n == 1 && len(toks) == 2 {
			return func(s string) bool { return likeMatch(p, s) }, nil
		}
	}
	if toks[0].IsWord("where") {
		if keep, ok := whereFilter(toks[1:], column); ok {
			return keep, nil
		}
	}
	what := make([]string, 0, 2)
	for _, t := range toks[:min(2, len(toks))] {
		what = append(what, t.Text)
	}
	return nil, mysql.NewError(mysql.ER_NOT_SUPPORTED_YET, "This version of QueryFlux doesn't yet support '"+strings.Join(what, " ")+
		" ...' here: SHOW VARIABLES, COLLATION and CHARACTER SET take LIKE 'pattern', or WHERE "+column+" = 'x', LIKE 'x' or IN ('x', ...) joined by OR")
}

// whereFilter reads column = 'x' | column LIKE 'x' | column IN ('x', ...), joined by OR.
func whereFilter(toks []sqltok.Token, column string) (func(string) bool, bool) {
	var tests []func(string) bool
	for i := 0; ; {
		if i >= len(toks) || !(toks[i].Kind == sqltok.Word || toks[i].Kind == sqltok.QuotedIdent) ||
			!strings.EqualFold(strings.Trim(toks[i].Text, "`"), column) || i+1 >= len(toks) {
			return nil, false
		}
		i++
		switch op := toks[i]; {
		case op.Text == "=":
			v, n := literalAt(toks, i+1)
			if n == 0 {
				return nil, false
			}
			tests = append(tests, func(s string) bool { return strings.EqualFold(s, v) })
			i += 1 + n
		case op.IsWord("like"):
			v, n := literalAt(toks, i+1)
			if n == 0 {
				return nil, false
			}
			tests = append(tests, func(s string) bool { return likeMatch(v, s) })
			i += 1 + n
		case op.IsWord("in"):
			i++
			if i >= len(toks) || toks[i].Text != "(" {
				return nil, false
			}
			var set []string
			for i++; ; {
				v, n := literalAt(toks, i)
				if n == 0 || i+n >= len(toks) {
					return nil, false
				}
				set, i = append(set, v), i+n
				if toks[i].Text == ")" {
					i++
					break
				}
				if toks[i].Text != "," {
					return nil, false
				}
				i++
			}
			tests = append(tests, func(s string) bool {
				for _, v := range set {
					if strings.EqualFold(s, v) {
						return true
					}
				}
				return false
			})
		default:
			return nil, false
		}
		if i == len(toks) {
			break
		}
		if !toks[i].IsWord("or") {
			return nil, false
		}
		i++
	}
	return func(s string) bool {
		for _, t := range tests {
			if t(s) {
				return true
			}
		}
		return false
	}, true
}

// literalAt is the '...' or "..." string at toks[i] (as MySQL reads it) and how many tokens
// it takes (0: none).
func literalAt(toks []sqltok.Token, i int) (string, int) {
	if i >= len(toks) {
		return "", 0
	}
	t := toks[i]
	if t.Kind != sqltok.String || t.Unterminated || len(t.Text) < 2 || (t.Text[0] != '\'' && t.Text[0] != '"') {
		return "", 0
	}
	return sqltok.MySQLStringValue(t.Text), 1
}

// likeMatch reports whether s matches MySQL LIKE pattern p (% any run, _ one character, \
// escaping the next), ignoring ASCII case.
func likeMatch(p, s string) bool {
	pr, sr := []rune(strings.ToLower(p)), []rune(strings.ToLower(s))
	var match func(pi, si int) bool
	match = func(pi, si int) bool {
		for pi < len(pr) {
			switch c := pr[pi]; {
			case c == '%':
				for pi < len(pr) && pr[pi] == '%' {
					pi++
				}
				if pi == len(pr) {
					return true
				}
				for k := si; k <= len(sr); k++ {
					if match(pi, k) {
						return true
					}
				}
				return false
			case c == '_':
				if si >= len(sr) {
					return false
				}
			default:
				if c == '\\' && pi+1 < len(pr) {
					pi++
					c = pr[pi]
				}
				if si >= len(sr) || sr[si] != c {
					return false
				}
			}
			pi, si = pi+1, si+1
		}
		return si == len(sr)
	}
	return match(0, 0)
}
