package mysqlwire

import (
	"regexp"
	"strconv"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
)

// Warnings and errors are the client's own: a statement's warnings are read from the engine
// connection it ran on before that connection serves anyone else, kept with the session, and
// SHOW WARNINGS, SHOW ERRORS, SHOW COUNT(*) WARNINGS and @@warning_count answer from them,
// never from whichever pooled connection a SHOW would land on.

// diagnostic is one row of SHOW WARNINGS.
type diagnostic = mysqlengine.Warning

func (h *session) noteError(me *mysql.MyError) {
	h.diag = []diagnostic{{Level: "Error", Code: me.Code, Message: me.Message}}
}

var (
	showDiag      = regexp.MustCompile(`(?is)^show\s+(warnings|errors)(?:\s+limit\s+(\d+)(?:\s*,\s*(\d+))?)?\s*;?\s*$`)
	showDiagCount = regexp.MustCompile(`(?is)^show\s+count\s*\(\s*\*\s*\)\s+(warnings|errors)\s*;?\s*$`)
)

// showDiagnostics answers SHOW WARNINGS/ERRORS [LIMIT [offset,] n] and SHOW COUNT(*) ...; ok is
// false for other statements.
func (h *session) showDiagnostics(sql string) (*mysql.Result, bool) {
	if m := showDiagCount.FindStringSubmatch(sql); m != nil {
		n := len(h.diagnostics(m[1]))
		rs, err := mysql.BuildSimpleTextResultset([]string{"@@session." + map[bool]string{true: "error_count", false: "warning_count"}[m[1][0]|0x20 == 'e']}, [][]any{{int64(n)}})
		if err != nil {
			panic("mysqlwire: building a count resultset: " + err.Error())
		}
		return mysql.NewResult(rs), true
	}
	m := showDiag.FindStringSubmatch(sql)
	if m == nil {
		return nil, false
	}
	rows := h.diagnostics(m[1])
	if m[2] != "" {
		offset, limit := 0, atoiMax(m[2])
		if m[3] != "" {
			offset, limit = limit, atoiMax(m[3])
		}
		rows = rows[min(offset, len(rows)):]
		rows = rows[:min(limit, len(rows))]
	}
	values := make([][]any, len(rows))
	for i, d := range rows {
		values[i] = []any{d.Level, uint64(d.Code), d.Message}
	}
	rs, err := mysql.BuildSimpleTextResultset([]string{"Level", "Code", "Message"}, values)
	if err != nil {
		panic("mysqlwire: building a warnings resultset: " + err.Error())
	}
	if len(values) == 0 { // no row to take the types from: MySQL's own
		rs.Fields[0].Type, rs.Fields[1].Type, rs.Fields[2].Type = mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_VAR_STRING
		rs.Fields[1].Flag |= mysql.UNSIGNED_FLAG
	}
	return mysql.NewResult(rs), true
}

// diagnostics are the last statement's errors ("errors") or all its conditions ("warnings").
func (h *session) diagnostics(which string) []diagnostic {
	if which[0]|0x20 == 'w' {
		return h.diag
	}
	var errs []diagnostic
	for _, d := range h.diag {
		if d.Level == "Error" {
			errs = append(errs, d)
		}
	}
	return errs
}

func atoiMax(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return int(^uint(0) >> 1)
	}
	return n
}
