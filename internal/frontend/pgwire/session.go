package pgwire

import (
	"regexp"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

// Client-protocol settings drivers send at connect (JDBC: extra_float_digits, application_name;
// others: client_encoding, DateStyle). They describe the wire session, which this frontend owns:
// passing them to a pooled engine would land them on an arbitrary connection, and engines
// such as DuckDB reject them. So they are answered here.
var sessionSettings = map[string]bool{
	"extra_float_digits": true, "application_name": true, "client_encoding": true, "datestyle": true,
	"intervalstyle": true, "client_min_messages": true, "standard_conforming_strings": true, "bytea_output": true,
}

var setRe = regexp.MustCompile(`(?is)^set\s+(?:session\s+)?([a-z_]+)\s*(?:=|\bto\b)\s*(.*?)\s*;?\s*$`)

// localStatement answers sql itself when it only sets a client-protocol setting.
func (c *conn) localStatement(sql string) (query.Rows, bool, error) {
	if !startsWithSet(sql) {
		return nil, false, nil // the hot path: no regexp for statements that are not SETs
	}
	m := setRe.FindStringSubmatch(sql)
	if m == nil {
		return nil, false, nil
	}
	name := strings.ToLower(m[1])
	if !sessionSettings[name] {
		return nil, false, nil
	}
	value := strings.Trim(m[2], `'"`)
	switch name {
	case "client_encoding":
		if v := strings.ToUpper(strings.ReplaceAll(value, "-", "")); v != "UTF8" && v != "UNICODE" {
			return nil, true, &query.Error{Code: "0A000", Message: "only UTF8 client_encoding is supported"}
		}
		c.be.Send(&pgproto3.ParameterStatus{Name: "client_encoding", Value: "UTF8"})
	case "bytea_output":
		if !strings.EqualFold(value, "hex") {
			return nil, true, &query.Error{Code: "0A000", Message: "only hex bytea_output is supported"}
		}
	case "standard_conforming_strings":
		if !strings.EqualFold(value, "on") {
			return nil, true, &query.Error{Code: "0A000", Message: "standard_conforming_strings is always on"}
		}
	case "application_name":
		c.startup["application_name"] = value
		c.headers = nil // requests already made keep their own copy
		c.be.Send(&pgproto3.ParameterStatus{Name: "application_name", Value: value})
	}
	return engine.TagRows("SET"), true, nil
}

// openSessionFor pins an engine connection when req starts a transaction and the backend can
// pin one (engine.SessionOpener); the transaction's statements then all run there.
func (c *conn) openSessionFor(req *query.Request) error {
	if c.session != nil || !beginsTransaction(req.SQL) {
		return nil
	}
	opener, ok := c.srv.backend.(engine.SessionOpener)
	if !ok {
		return nil
	}
	s, err := opener.OpenSession(c.srv.baseCtx, req)
	if err != nil {
		return err
	}
	c.session = s
	return nil
}

// syncTxStatus reads the transaction status from the pinned session once its statements are
// finished, and unpins it when the transaction is over.
func (c *conn) syncTxStatus() {
	if c.session == nil {
		c.txStatus = 'I'
		return
	}
	c.txStatus = c.session.TxStatus()
	if c.txStatus == 'I' {
		_ = c.session.Close()
		c.session = nil
	}
}

func beginsTransaction(sql string) bool {
	// The first whitespace-separated word without trailing semicolons, found without
	// allocating: this runs on every statement.
	sql = strings.TrimLeftFunc(sql, unicode.IsSpace)
	if end := strings.IndexFunc(sql, unicode.IsSpace); end >= 0 {
		sql = sql[:end]
	}
	word := strings.TrimRight(sql, ";")
	return strings.EqualFold(word, "BEGIN") || strings.EqualFold(word, "START")
}

// startsWithSet reports whether sql's first word is SET (any case), cheaply.
func startsWithSet(sql string) bool {
	sql = strings.TrimLeft(sql, " \t\r\n")
	return len(sql) >= 4 && strings.EqualFold(sql[:3], "set") && (sql[3] == ' ' || sql[3] == '\t' || sql[3] == '\n' || sql[3] == '\r')
}
