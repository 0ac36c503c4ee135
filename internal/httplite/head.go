package httplite

import (
	"bufio"
	"bytes"
	"io"
	"math"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// parseHead reads a request's head from what br has buffered, as http.ReadRequest would read
// it, when it is of the plain kind clients send this port: whole in the buffer, every line
// ended by CRLF, an origin-form target, HTTP/1.1, field names that are tokens, no line
// folding, and no Transfer-Encoding, Trailer, Pragma or second Host or Content-Length field.
// Its keys and values are slices of one string: a statement's POST head costs 7 allocations
// instead of http.ReadRequest's 14 (RESULTS.md, "Trino HTTP (#22, session 19, trino helper)").
// For any other head, or one longer than sizeMax, it reports false and consumes nothing:
// http.ReadRequest reads it, or refuses it. It also returns the request's first Expect value,
// which the server reads twice a request (a header lookup each). into, when not nil, is an
// empty map the request's header is read into (its connection's last one, serveRequest).
func parseHead(br *bufio.Reader, sizeMax int, base *http.Request, into http.Header) (*http.Request, string, bool) {
	buf, _ := br.Peek(br.Buffered())
	end := headEnd(buf)
	if end < 0 || end+4 > sizeMax {
		return nil, "", false
	}
	head := string(buf[:end+2]) // every line with its CRLF
	// The request line is cut by byte searches, not strings.Cut (three calls deep for each of
	// its three cuts). A bare LF before the first CRLF fails it, as it fails http.ReadRequest.
	nl := strings.IndexByte(head, '\n')
	if nl < 1 || head[nl-1] != '\r' {
		return nil, "", false
	}
	line, rest := head[:nl-1], head[nl+1:]
	sp1 := strings.IndexByte(line, ' ')
	if sp1 < 0 {
		return nil, "", false
	}
	method, target := line[:sp1], line[sp1+1:]
	sp2 := strings.IndexByte(target, ' ')
	if sp2 < 0 {
		return nil, "", false
	}
	target, proto := target[:sp2], target[sp2+1:]
	if proto != "HTTP/1.1" || !isToken(method) || !strings.HasPrefix(target, "/") {
		return nil, "", false
	}
	p := new(parsed) // the request, its URL, its body and its answer in one allocation
	if plainPath(target) {
		p.url.Path = target // what url.ParseRequestURI makes of it
	} else if u, err := url.ParseRequestURI(target); err == nil {
		p.url = *u
	} else {
		return nil, "", false
	}
	h, f, ok := parseFields(rest, p.values[:], into)
	if !ok || f.hosts > 1 || f.lengths > 1 {
		return nil, "", false
	}
	// base carries the context its requests are served in (that of their connection), which
	// only WithContext sets otherwise: a copy of the whole request per request.
	p.req = *base
	req := &p.req
	req.Method, req.URL, req.Proto, req.ProtoMajor, req.ProtoMinor, req.Header = method, &p.url, proto, 1, 1, h
	req.Host, req.RequestURI, req.Body = f.host, target, http.NoBody
	req.Close = f.connection && httpguts.HeaderValuesContainsToken(h["Connection"], "close")
	if f.lengths > 0 {
		n, ok := contentLength(f.length)
		if !ok {
			return nil, "", false
		}
		req.ContentLength = n
		if n > 0 {
			p.body = headBody{br: br, left: n, closing: req.Close}
			req.Body = &p.body
		}
	}
	_, _ = br.Discard(end + 4)
	return req, f.expect, true
}

// parsed is what parseHead makes of a head, allocated together.
type parsed struct {
	req  http.Request
	url  url.URL
	body headBody
	// values back the header's first values of a head of up to len(values) lines (a slice
	// of its own was an allocation per request).
	values [8]string
	// resp is the request's answer (serveRequest's, for a request parseHead read: an
	// allocation of its own per request otherwise).
	resp response
}

// plainPath reports whether target is a path url.ParseRequestURI takes as it is (URL{Path:
// target}): a slash, then only letters, digits, "/", "-", ".", "_" and "~" (no escapes, no
// query, nothing its parser reads otherwise).
func plainPath(target string) bool {
	if !strings.HasPrefix(target, "/") || strings.HasPrefix(target, "//") {
		return false
	}
	for i := 0; i < len(target); i++ {
		switch c := target[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '/', c == '-', c == '.', c == '_', c == '~':
		default:
			return false
		}
	}
	return true
}

// framing is what a head's fields say of its request's framing, read as parseFields meets
// them rather than looked up in the header after (a lookup per name and per statement).
type framing struct {
	host       string // the first Host, which is not a field of the header (http.ReadRequest's)
	length     string // the first Content-Length
	hosts      int
	lengths    int
	connection bool   // a Connection field was seen
	expect     string // the first Expect
}

// parseFields reads the field lines of a head (each ended by CRLF) as textproto.ReadMIMEHeader
// would, reporting false for a line it may read otherwise, and for a Transfer-Encoding, Trailer
// or Pragma field (which parseHead leaves to http.ReadRequest). The fields go into into when it
// is not nil (it must be empty), else into a new map.
func parseFields(lines string, backing []string, into http.Header) (http.Header, framing, bool) {
	var f framing
	n := strings.Count(lines, "\n")
	h := into
	if h == nil {
		h = make(http.Header, n)
	}
	values := backing // every field's first value, cut from one slice
	if n > len(values) {
		values = make([]string, n)
	}
	var seen names
	for len(lines) > 0 {
		// Each line is found by one byte search and its name read up to its colon by the
		// token table, one pass (strings.Lines, CutSuffix and Cut were 5 calls a line).
		nl := strings.IndexByte(lines, '\n')
		if nl < 1 || lines[nl-1] != '\r' { // a bare CR fails this, the name's or the value's check
			return nil, f, false
		}
		line := lines[:nl-1]
		lines = lines[nl+1:]
		n, canonical := tokenPrefix(line)
		if n == 0 || n == len(line) || line[n] != ':' {
			return nil, f, false
		}
		name, value := line[:n], trimBlanks(line[n+1:])
		if !valueBytes(value) {
			return nil, f, false
		}
		if !canonical {
			name = textproto.CanonicalMIMEHeaderKey(name)
		}
		switch name {
		case "Host":
			if f.hosts++; f.hosts == 1 {
				f.host = value
			}
			continue
		case "Content-Length":
			if f.lengths++; f.lengths == 1 {
				f.length = value
			}
		case "Connection":
			f.connection = true
		case "Expect":
			if f.expect == "" {
				f.expect = value
			}
		case "Transfer-Encoding", "Trailer", "Pragma":
			return nil, f, false
		}
		if seen.has(name) {
			h[name] = append(h[name], value)
			continue
		}
		values[0] = value
		h[name], values = values[:1:1], values[1:]
	}
	return h, f, true
}

// valueBytes reports whether a field's value has no control byte but tab (none below 0x20 but
// '\t', no 0x7f), eight bytes at a time: a byte at a time was 380 instructions of a statement's
// POST head. A word with a byte below 0x20 (a tab, say) is looked at byte by byte.
func valueBytes(s string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(s) >= 8 {
		x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		// A byte below 0x20 sets its high bit in (x - 0x20 each) &^ x; a byte 0x7f is a zero
		// byte of x ^ 0x7f each, found the same way (below 1).
		del := x ^ (0x7f * ones)
		if ((x-0x20*ones)&^x|(del-ones)&^del)&highs != 0 && !valueBytesOneByOne(s[:8]) {
			return false
		}
		s = s[8:]
	}
	return valueBytesOneByOne(s)
}

func valueBytesOneByOne(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// names are the field names a head gave so far, told apart without a lookup of h per field
// (a map lookup is ~110 instructions; a head names 4-12 fields, each but a repeat once).
type names struct {
	some [16]string
	n    int
	h    map[string]bool // past the first 16
}

// has reports whether name was given before, and counts it given.
func (s *names) has(name string) bool {
	for _, seen := range s.some[:s.n] {
		if seen == name {
			return true
		}
	}
	if s.n < len(s.some) {
		s.some[s.n] = name
		s.n++
		return false
	}
	if s.h[name] {
		return true
	}
	if s.h == nil {
		s.h = map[string]bool{}
	}
	s.h[name] = true
	return false
}

// trimBlanks is strings.Trim(s, " \t"), which makes its set of two bytes at every call (400
// instructions of a statement's POST head).
func trimBlanks(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// Field is h's first value of key, which must be canonical ("X-Trino-User"): h.Get(key)
// without canonicalizing key again at every call, as net/http's server reads its own fields.
// Every key of a request's header is canonical (parseFields and http.ReadRequest make them
// so), and so is every key Header().Set gives an answer.
func Field(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// headEnd is bytes.Index(buf, []byte("\r\n\r\n")), looking only at each line's end: that
// looked at every CR of the head, each line's, and cost 930 instructions of a statement's POST.
func headEnd(buf []byte) int {
	for i := 0; ; {
		n := bytes.IndexByte(buf[i:], '\n')
		if n < 0 {
			return -1
		}
		i += n // buf[i] is LF: the head ends here if CR LF CR LF
		if i >= 1 && i+2 < len(buf) && buf[i-1] == '\r' && buf[i+1] == '\r' && buf[i+2] == '\n' {
			return i - 1
		}
		i++
	}
}

// contentLength parses a Content-Length value as net/http accepts it: digits only, at most
// what an int64 holds (strconv.ParseInt's bound).
func contentLength(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		d := int64(s[i]) - '0'
		if d < 0 || d > 9 || n > (math.MaxInt64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// isToken reports whether s is a non-empty RFC 7230 token (a method, a field name).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if tokenBytes[s[i]] == 0 {
			return false
		}
	}
	return true
}

// tokenForm reports whether s is a non-empty RFC 7230 token, and whether that token is in
// textproto's canonical form (a capital at its start and after each hyphen, small letters
// elsewhere), in one pass over a table: a field name's two checks were a call per byte.
func tokenForm(s string) (token, canonical bool) {
	n, canonical := tokenPrefix(s)
	if n == 0 || n < len(s) {
		return false, false
	}
	return true, canonical
}

// tokenPrefix is the length of s's leading token bytes (up to a field line's colon, say), and
// whether they are in textproto's canonical form (tokenForm).
func tokenPrefix(s string) (n int, canonical bool) {
	canonical, upper := true, true
	for i := 0; i < len(s); i++ {
		k := tokenBytes[s[i]]
		if k == 0 {
			return i, canonical
		}
		if upper && k == tokenLower || !upper && k == tokenUpper {
			canonical = false
		}
		upper = s[i] == '-'
	}
	return len(s), canonical
}

// tokenBytes classes the bytes of tokens: 0 for a byte no token has.
var tokenBytes = func() (t [256]uint8) {
	for b := range t {
		switch {
		case 'a' <= b && b <= 'z':
			t[b] = tokenLower
		case 'A' <= b && b <= 'Z':
			t[b] = tokenUpper
		case httpguts.IsTokenRune(rune(b)):
			t[b] = tokenOther
		}
	}
	return t
}()

const (
	tokenLower = 1 + iota
	tokenUpper
	tokenOther
)

// headBody is the body of a request parseHead read: its Content-Length bytes, as net/http's
// request body reads them (io.ErrUnexpectedEOF when the connection ends short of them, and
// a Close that reads the rest unless the connection closes after this request).
type headBody struct {
	br      *bufio.Reader
	left    int64
	closing bool // the connection ends after this request
	ended   bool // the reads reached the body's end, or the connection's
	closed  bool
}

func (b *headBody) Read(p []byte) (int, error) {
	switch {
	case b.closed:
		return 0, http.ErrBodyReadAfterClose
	case b.ended || b.left == 0:
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.br.Read(p)
	b.left -= int64(n)
	switch {
	case err == io.EOF && b.left > 0:
		b.ended, err = true, io.ErrUnexpectedEOF
	case err == nil && b.left == 0:
		b.ended, err = true, io.EOF
	}
	return n, err
}

func (b *headBody) Close() error {
	var err error
	if !b.closed && !b.closing && !b.ended && b.left > 0 {
		var n int
		n, err = b.br.Discard(int(min(b.left, int64(^uint(0)>>1))))
		b.left -= int64(n)
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
	}
	b.closed = true
	return err
}
