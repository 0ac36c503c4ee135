package trinohttp

import (
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// parseExecuteImmediate reads the statement Trino clients send for bound parameters,
// EXECUTE IMMEDIATE '<sql>' USING v1, v2, ..., as the inner SQL and its values, so engines get
// real parameters. ok is false (and the statement goes on as written) when it is not of that
// form or a value is not a literal the proxy knows (ARRAY, MAP, INTERVAL, ...).
//
// prepared maps names to statements from X-Trino-Prepared-Statement, for the other form clients
// send: EXECUTE <name> USING v1, ....
func parseExecuteImmediate(stmt string, prepared map[string]string) (sql string, args []any, ok bool) {
	p := &literalParser{s: stmt}
	if !p.keyword("EXECUTE") {
		return "", nil, false
	}
	if p.keyword("IMMEDIATE") {
		if sql, ok = p.quoted(); !ok {
			return "", nil, false
		}
	} else if sql, ok = prepared[p.identifier()]; !ok {
		return "", nil, false
	}
	if p.end() {
		return sql, nil, true
	}
	if !p.keyword("USING") {
		return "", nil, false
	}
	for {
		v, ok := p.literal()
		if !ok {
			return "", nil, false
		}
		args = append(args, v)
		p.space()
		if p.end() {
			return sql, args, true
		}
		if !p.take(',') {
			return "", nil, false
		}
	}
}

type literalParser struct {
	s   string
	pos int
}

// The classes of a statement's bytes as the parser reads them: unicode's of the byte taken as
// a rune (Latin-1), looked up in one table. Every statement's first word is read three times
// (sessionStatement, transactionVerb, parseExecuteImmediate): unicode's calls per byte were
// most of that.
const (
	byteSpace = 1 << iota // unicode.IsSpace
	byteWord              // unicode.IsLetter, or '_'
	byteIdent             // unicode.IsLetter or unicode.IsDigit, or '_'
)

var byteClass = func() (t [256]uint8) {
	for b := range t {
		r := rune(b)
		if unicode.IsSpace(r) {
			t[b] |= byteSpace
		}
		if unicode.IsLetter(r) || r == '_' {
			t[b] |= byteWord | byteIdent
		}
		if unicode.IsDigit(r) {
			t[b] |= byteIdent
		}
	}
	return t
}()

func (p *literalParser) space() {
	for p.pos < len(p.s) && byteClass[p.s[p.pos]]&byteSpace != 0 {
		p.pos++
	}
}

func (p *literalParser) end() bool {
	p.space()
	return p.pos == len(p.s) || strings.TrimSpace(strings.TrimRight(p.s[p.pos:], "; \t\r\n")) == ""
}

func (p *literalParser) take(c byte) bool {
	p.space()
	if p.pos < len(p.s) && p.s[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

func (p *literalParser) word() string {
	p.space()
	start := p.pos
	for p.pos < len(p.s) && byteClass[p.s[p.pos]]&byteWord != 0 {
		p.pos++
	}
	return p.s[start:p.pos]
}

func (p *literalParser) identifier() string {
	p.space()
	start := p.pos
	for p.pos < len(p.s) && byteClass[p.s[p.pos]]&byteIdent != 0 {
		p.pos++
	}
	return p.s[start:p.pos]
}

func (p *literalParser) keyword(k string) bool {
	save := p.pos
	if wordIs(p.word(), k) {
		return true
	}
	p.pos = save
	return false
}

// wordIs is strings.EqualFold(w, k) for a keyword k of ASCII letters, ruling out most words
// without the call: every statement's first word is held up to eight keywords, and a SELECT's
// is none of them. A word that folds to k is at least as long (the letters that fold to ASCII
// ones, as ſ to s and K to k, are longer), and begins with k's first letter in either case or
// with a byte of such a letter.
func wordIs(w, k string) bool {
	if len(w) < len(k) || len(w) == 0 {
		return false
	}
	if c := w[0]; c < utf8.RuneSelf && c|0x20 != k[0]|0x20 {
		return false
	}
	return strings.EqualFold(w, k)
}

// quoted reads a '...' literal with ” escapes.
func (p *literalParser) quoted() (string, bool) {
	if !p.take('\'') {
		return "", false
	}
	var b strings.Builder
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		p.pos++
		if c != '\'' {
			b.WriteByte(c)
			continue
		}
		if p.pos < len(p.s) && p.s[p.pos] == '\'' {
			b.WriteByte('\'')
			p.pos++
			continue
		}
		return b.String(), true
	}
	return "", false
}

func (p *literalParser) literal() (any, bool) {
	p.space()
	if p.pos >= len(p.s) {
		return nil, false
	}
	switch c := p.s[p.pos]; {
	case c == '\'':
		return p.quoted()
	case c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9'):
		return p.number()
	}
	w := strings.ToUpper(p.word())
	switch w {
	case "NULL":
		return nil, true
	case "TRUE", "FALSE":
		return w == "TRUE", true
	case "X":
		s, ok := p.quoted()
		if !ok {
			return nil, false
		}
		b, err := hex.DecodeString(s)
		return b, err == nil
	case "DOUBLE", "REAL":
		s, ok := p.quoted()
		if !ok {
			return nil, false
		}
		f, err := strconv.ParseFloat(s, 64) // accepts NaN, Infinity, -Infinity
		return f, err == nil
	case "DATE", "TIME", "TIMESTAMP", "DECIMAL":
		return p.quoted()
	}
	return nil, false
}

func (p *literalParser) number() (any, bool) {
	start := p.pos
	for p.pos < len(p.s) && strings.IndexByte("+-.0123456789eE", p.s[p.pos]) >= 0 {
		p.pos++
	}
	text := p.s[start:p.pos]
	if n, err := strconv.ParseInt(text, 10, 64); err == nil {
		return n, true
	}
	if n, err := strconv.ParseUint(text, 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(text, 64)
	return f, err == nil
}

// preparedStatements reads X-Trino-Prepared-Statement: name=urlencoded-sql, comma-separated.
func preparedStatements(headers []string) map[string]string {
	out := map[string]string{}
	for _, h := range headers {
		for _, item := range strings.Split(h, ",") {
			name, enc, ok := strings.Cut(strings.TrimSpace(item), "=")
			if !ok {
				continue
			}
			if sql, err := url.QueryUnescape(enc); err == nil {
				out[name] = sql
			}
		}
	}
	return out
}

// sessionStatement reads the statements that change only a client's session, which the proxy
// answers itself: it keeps no session, so, as Trino's protocol has it, the client keeps its
// state and sends it back with every request, told by response headers.
//   - PREPARE name FROM statement: X-Trino-Added-Prepare; the client sends the statement back in
//     X-Trino-Prepared-Statement. DEALLOCATE PREPARE name: X-Trino-Deallocated-Prepare.
//   - SET SESSION [catalog.]name = literal: X-Trino-Set-Session; the client sends X-Trino-Session,
//     which routing rules see like any X-Trino- header. RESET SESSION name: X-Trino-Clear-Session.
//   - USE [catalog.]schema: X-Trino-Set-Catalog and X-Trino-Set-Schema; the client sends them
//     back as X-Trino-Catalog and X-Trino-Schema (useStatement), once the schema is found (use.go).
//   - SET PATH [catalog.]schema[, ...]: X-Trino-Set-Path; the client sends it back as
//     X-Trino-Path (setPathStatement).
//
// ok is false for any other statement, and for a SET SESSION whose value is not a literal;
// err is the statement's failure when it is one of these but cannot be answered.
func sessionStatement(req *query.Request) (update string, header http.Header, ok bool, err error) {
	stmt := req.SQL
	p := &literalParser{s: stmt}
	switch verb := p.word(); { // read once, not once for each case: every statement comes here
	case wordIs(verb, "USE"):
		return useStatement(req)
	case wordIs(verb, "PREPARE"):
		name := p.identifier()
		if name == "" || !p.keyword("FROM") {
			return "", nil, false, nil
		}
		body := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(p.s[p.pos:]), ";"))
		if body == "" {
			return "", nil, false, nil
		}
		return "PREPARE", http.Header{"X-Trino-Added-Prepare": {name + "=" + url.QueryEscape(body)}}, true, nil
	case wordIs(verb, "DEALLOCATE"):
		if !p.keyword("PREPARE") {
			return "", nil, false, nil
		}
		name := p.identifier()
		if name == "" || !p.end() {
			return "", nil, false, nil
		}
		return "DEALLOCATE", http.Header{"X-Trino-Deallocated-Prepare": {name}}, true, nil
	case wordIs(verb, "SET"):
		if p.keyword("PATH") {
			return setPathStatement(req, p)
		}
		if !p.keyword("SESSION") {
			return "", nil, false, nil
		}
		name := p.propertyName()
		if name == "" || !p.take('=') {
			return "", nil, false, nil
		}
		v, ok := p.literal()
		if !ok || !p.end() {
			return "", nil, false, nil
		}
		return "SET SESSION", http.Header{"X-Trino-Set-Session": {name + "=" + url.QueryEscape(literalText(v))}}, true, nil
	case wordIs(verb, "RESET"):
		if !p.keyword("SESSION") {
			return "", nil, false, nil
		}
		name := p.propertyName()
		if name == "" || !p.end() {
			return "", nil, false, nil
		}
		return "RESET SESSION", http.Header{"X-Trino-Clear-Session": {name}}, true, nil
	}
	return "", nil, false, nil
}

// useStatement reads USE [catalog.]schema, its names folded to lower case unless quoted, as
// Trino reads them. Without a catalog it needs the client's (X-Trino-Catalog): Trino's
// MISSING_CATALOG_NAME otherwise.
// Whether the schema exists is the engine's to say (use.go).
func useStatement(req *query.Request) (string, http.Header, bool, error) {
	r := sqltok.NewWalker(sqltok.Tokenize(req.SQL, sqltok.Trino))
	r.Word("use")
	parts := r.NameParts(true)
	r.Punct(";")
	if r.More() || len(parts) == 0 || len(parts) > 2 {
		return "", nil, false, nil
	}
	h := http.Header{"X-Trino-Set-Schema": {parts[len(parts)-1]}}
	switch {
	case len(parts) == 2:
		h["X-Trino-Set-Catalog"] = []string{parts[0]}
	case req.Database == "":
		return "", nil, true, errMissingCatalog
	}
	return "USE", h, true, nil
}

// setPathStatement reads the rest of SET PATH element[, ...] (each element schema or
// catalog.schema) and answers it as Trino's SetPathTask does: X-Trino-Set-Path carries the
// path's text as Trino's parser prints it (each name as written, a quoted one quoted again,
// the elements joined by ", "), which clients keep and send back as X-Trino-Path. Trino
// refuses it to a client that did not declare the PATH capability, and an element without a
// catalog when the client has none; whether a catalog exists is the engine's to say, as for
// USE. A path it cannot read is not answered here (ok false).
func setPathStatement(req *query.Request, p *literalParser) (string, http.Header, bool, error) {
	var b strings.Builder
	withoutCatalog := false
	for {
		name, ok := p.pathName()
		if !ok {
			return "", nil, false, nil
		}
		b.WriteString(name)
		if p.take('.') {
			if name, ok = p.pathName(); !ok {
				return "", nil, false, nil
			}
			b.WriteByte('.')
			b.WriteString(name)
		} else {
			withoutCatalog = true
		}
		if !p.take(',') {
			break
		}
		b.WriteString(", ")
	}
	switch {
	case !p.end():
		return "", nil, false, nil
	case !hasCapability(req.Headers["X-Trino-Client-Capabilities"], "PATH"):
		return "", nil, true, errPathNotSupported
	case withoutCatalog && req.Database == "":
		return "", nil, true, errPathMissingCatalog
	}
	return "SET PATH", http.Header{"X-Trino-Set-Path": {b.String()}}, true, nil
}

// pathName reads one name of a path element as Trino's lexer reads an identifier: ASCII
// letters, digits and '_' not starting with a digit, kept as written; or a "quoted" name (""
// for a quote inside, not empty), printed quoted again as Trino prints a delimited identifier.
func (p *literalParser) pathName() (string, bool) {
	p.space()
	start := p.pos
	if p.pos < len(p.s) && p.s[p.pos] == '"' {
		for p.pos++; p.pos < len(p.s); p.pos++ {
			if p.s[p.pos] != '"' {
				continue
			}
			if p.pos+1 < len(p.s) && p.s[p.pos+1] == '"' {
				p.pos++
				continue
			}
			p.pos++
			return p.s[start:p.pos], p.pos-start > 2
		}
		return "", false
	}
	for ; p.pos < len(p.s); p.pos++ {
		c := p.s[p.pos]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || p.pos > start && '0' <= c && c <= '9') {
			break
		}
	}
	return p.s[start:p.pos], p.pos > start
}

// hasCapability reports whether a client's X-Trino-Client-Capabilities (names separated by
// commas) declares name.
func hasCapability(capabilities, name string) bool {
	for c := range strings.SplitSeq(capabilities, ",") {
		if strings.TrimSpace(c) == name {
			return true
		}
	}
	return false
}

// Trino's answers to a SET PATH it refuses.
var (
	errPathNotSupported   = &trinoFailure{codeNotSupported, "SET PATH not supported by client"}
	errPathMissingCatalog = &trinoFailure{trinoCode{56, "MISSING_CATALOG_NAME", "USER_ERROR"}, "Catalog must be specified for each path element when session catalog is not set"}
)

// errMissingCatalog is Trino's answer to USE schema from a client without a catalog.
var errMissingCatalog = &trinoFailure{trinoCode{56, "MISSING_CATALOG_NAME", "USER_ERROR"}, "Catalog must be specified when session catalog is not set"}

// propertyName reads a session property's name: name, or catalog.name.
func (p *literalParser) propertyName() string {
	name := p.identifier()
	if name == "" || p.pos >= len(p.s) || p.s[p.pos] != '.' {
		return name
	}
	p.pos++
	rest := p.identifier()
	if rest == "" {
		return ""
	}
	return name + "." + rest
}

// literalText is a SET SESSION value as Trino passes it on: the text of the literal's value.
func literalText(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case []byte:
		return hex.EncodeToString(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	default:
		return fmt.Sprint(v)
	}
}
