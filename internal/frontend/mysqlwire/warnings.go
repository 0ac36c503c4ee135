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

// noteWarnings keeps a statement's warnings. A statement without any leaves the earlier ones
// unless it uses tables (usesTables), as MySQL clears them only then.
func (h *session) noteWarnings(ws []diagnostic) {
	if len(ws) > 0 {
		h.diag, h.engineNoted = ws, true
	}
}

// tableWords are the keywords that make a statement use tables.
var tableWords = regexp.MustCompile(`(?i)\b(from|into|update|table|join)\b`)

func usesTables(sql string) bool { return tableWords.MatchString(sql) }

// forgetDiagnostics drops the last statement's warnings or error when sql uses tables, as
// MySQL does before it runs; the pattern is looked at only when there is something to drop.
func (h *session) forgetDiagnostics(sql string) {
	if h.diag != nil && usesTables(sql) {
		h.diag = nil
	}
}

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
		name := "@@session.warning_count"
		if m[1][0]|0x20 == 'e' {
			name = "@@session.error_count"
		}
		rs := &mysql.Resultset{
			Fields:   []*mysql.Field{{Name: []byte(name), Type: mysql.MYSQL_TYPE_LONGLONG, Charset: charsetBinary, ColumnLength: 21, Flag: mysql.NOT_NULL_FLAG | mysql.UNSIGNED_FLAG | mysql.BINARY_FLAG}},
			RowDatas: []mysql.RowData{mysql.PutLengthEncodedString(strconv.AppendInt(nil, int64(n), 10))},
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
	rs := &mysql.Resultset{Fields: []*mysql.Field{
		{Name: []byte("Level"), Type: mysql.MYSQL_TYPE_VAR_STRING, Charset: charsetUTF8MB4, ColumnLength: 7 * 4, Flag: mysql.NOT_NULL_FLAG},
		{Name: []byte("Code"), Type: mysql.MYSQL_TYPE_LONG, Charset: charsetBinary, ColumnLength: 4, Flag: mysql.NOT_NULL_FLAG | mysql.UNSIGNED_FLAG | mysql.BINARY_FLAG},
		{Name: []byte("Message"), Type: mysql.MYSQL_TYPE_VAR_STRING, Charset: charsetUTF8MB4, ColumnLength: 512 * 4, Flag: mysql.NOT_NULL_FLAG},
	}}
	for _, d := range rows {
		row := mysql.PutLengthEncodedString([]byte(d.Level))
		row = append(row, mysql.PutLengthEncodedString(strconv.AppendUint(nil, uint64(d.Code), 10))...)
		rs.RowDatas = append(rs.RowDatas, append(row, mysql.PutLengthEncodedString([]byte(d.Message))...))
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
