package httplite

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"
	"pgregory.net/rapid"
)

// buffered is a reader holding all of raw in its buffer, as a connection's reader holds a
// request that arrived in one segment.
func buffered(t testing.TB, raw string) *bufio.Reader {
	br := bufio.NewReaderSize(strings.NewReader(raw), 64<<10)
	if _, err := br.Peek(len(raw)); err != nil {
		t.Fatal(err)
	}
	return br
}

// The heads clients send this port are read without http.ReadRequest, and as it reads them.
func TestPlainHeadsAreParsedAsReadRequestParsesThem(t *testing.T) {
	for _, raw := range []string{
		"POST /v1/statement HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: 8\r\nX-Trino-Source: benchtrino\r\nX-Trino-User: postgres\r\n\r\nSELECT 1",
		"GET /v1/statement/executing/20261203_140000_00001_abcdef/y0123/1 HTTP/1.1\r\nHost: h\r\nX-Trino-User: postgres\r\n\r\n",
		"POST /v1/statement HTTP/1.1\r\nhost: h\r\nx-trino-user: a\r\nconnection: keep-alive\r\ncontent-length: 3\r\naccept: application/json, text/plain, */*\r\n\r\nabcGET /next HTTP/1.1\r\n",
		"DELETE /v1/query/q HTTP/1.1\r\nHost: h\r\nConnection: close\r\nX-Trino-Client-Tags: a, b\r\nX-Trino-Client-Tags: c\r\n\r\n",
		"GET / HTTP/1.1\r\nHost:\t h \t\r\nX-Trino-User: \t\tpostgres \t \r\nX-A:\t\r\nX-B:  \r\nX-C:\ta\tb\t\r\n\r\n", // blanks around values
	} {
		fast, _, ok := parseHead(buffered(t, raw), 1<<20, &http.Request{}, nil)
		if !ok {
			t.Fatalf("not read without http.ReadRequest: %q", raw)
		}
		sameRequest(t, raw, fast)
	}
}

// Heads with what a plain one has not: parseHead leaves each to http.ReadRequest, or reads it
// as that does.
func TestOddHeadsAreReadAsReadRequestReadsThem(t *testing.T) {
	for _, raw := range []string{
		"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\ncontent-length: 3\r\n\r\nabc",
		"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 2\r\n\r\nabc",
		"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabcGET / HTTP/1.1\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nPragma: no-cache\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nX: a\x01b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nX: a\nY: b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nHost: i\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nBad Name: x\r\n\r\n", // a field name read up to its colon, not to its first odd byte
		"GET / HTTP/1.1\r\nHost : h\r\n\r\n",
		"GET / HTTP/1.1\r\nX-Y\r\n\r\n",
		"GET / HTTP/1.1\r\n: x\r\n\r\n",
		"GET /a\nb HTTP/1.1\r\nHost: h\r\n\r\n", // a bare LF in the request line
		"GET / HTTP/1.1\nHost: h\r\n\r\n",
	} {
		br := buffered(t, raw)
		if fast, _, ok := parseHead(br, 1<<20, &http.Request{}, nil); ok {
			sameRequest(t, raw, fast)
		} else if br.Buffered() != len(raw) {
			t.Fatalf("declined %q, consuming %d bytes", raw, len(raw)-br.Buffered())
		}
	}
}

// Any head parseHead reads, it reads as http.ReadRequest does (the request, its body, and where
// the next request starts); any other it leaves whole for http.ReadRequest.
func TestHeadsAreReadAsReadRequestReadsThem(t *testing.T) {
	// pick draws one of good, or now and then one of bad: most heads drawn are plain, the
	// kind parseHead reads, each with a flaw or an oddity at times.
	pick := func(rt *rapid.T, label string, good, bad []string) string {
		xs := good
		if rapid.IntRange(0, 11).Draw(rt, label+"Odd") == 0 {
			xs = bad
		}
		return xs[rapid.IntRange(0, len(xs)-1).Draw(rt, label)]
	}
	some := func(xs ...string) []string { return xs }
	rapid.Check(t, func(rt *rapid.T) {
		var b strings.Builder
		eol := func(label string) string { return pick(rt, label, some("\r\n"), some("\n", "\r", "\r\r\n")) }
		b.WriteString(pick(rt, "method", some("GET", "POST", "DELETE", "HEAD"), some("get", "G T", "", "PRI", "CONNECT", "GET\r")))
		b.WriteString(pick(rt, "sp1", some(" "), some("  ", "\t")))
		b.WriteString(pick(rt, "target", some("/v1/statement", "/v1/statement/queued/q/s/0", "/a?b=c&d", "/%41%2F", "//x", "/a#f"),
			some("/%zz", "*", "http://h/x", "/a\x01", "", "/é", "/a\nb")))
		b.WriteString(pick(rt, "sp2", some(" "), some("  ", "", "\t")))
		b.WriteString(pick(rt, "proto", some("HTTP/1.1"), some("HTTP/1.0", "HTTP/2.0", "http/1.1", "HTTP/1.1 ", "HTTP/1.10")))
		b.WriteString(eol("eol"))
		fields := rapid.IntRange(0, 7).Draw(rt, "fields")
		for range fields {
			b.WriteString(pick(rt, "lead", some(""), some(" ", "\t")))
			b.WriteString(pick(rt, "name", some("Host", "host", "X-Trino-User", "x-trino-USER", "Content-Length", "content-length",
				"Connection", "Expect", "X_Y", "Cache-Control", "Accept"),
				some("Transfer-Encoding", "Pragma", "Trailer", "Bad Name", "", "é", "X:Y")))
			b.WriteString(pick(rt, "colon", some(":", ": ", ":  "), some(" :", "", ":\t")))
			b.WriteString(pick(rt, "value", some("x", "x ", " x\t", "close", "keep-alive, Close", "3", "0", "05", "", "a b"),
				some("+3", "-1", "99999999999999999999", "chunked", "no-cache", "a\x01b", "a\x7fb", "é", "a\rb", "100-continue")))
			b.WriteString(eol("fieldEOL"))
		}
		b.WriteString(eol("endEOL"))
		b.WriteString(pick(rt, "body", some("", "abc", "SELECT 1", "GET / HTTP/1.1\r\n"), some("abcdef")))
		raw := b.String()

		br := buffered(t, raw)
		fast, _, ok := parseHead(br, rapid.IntRange(16, 1<<10).Draw(rt, "sizeMax"), &http.Request{}, nil)
		if !ok {
			if br.Buffered() != len(raw) {
				rt.Fatalf("declined %q, consuming %d bytes", raw, len(raw)-br.Buffered())
			}
			return
		}
		sameRequest(rt, raw, fast)
	})
}

// sameRequest fails unless fast (parseHead's reading of raw, whose reader is spent) is what
// http.ReadRequest reads from raw: the request, its body, and the bytes after it.
func sameRequest(t interface {
	Helper()
	Fatalf(string, ...any)
}, raw string, fast *http.Request) {
	t.Helper()
	slow, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	if err != nil {
		t.Fatalf("%q: read by parseHead, refused by http.ReadRequest: %v", raw, err)
	}
	type view struct {
		Method, URL, RequestURI, Proto, Host string
		Major, Minor                         int
		Header                               http.Header
		Close                                bool
		Length                               int64
		NoBody                               bool
	}
	see := func(r *http.Request) view {
		return view{r.Method, r.URL.String(), r.RequestURI, r.Proto, r.Host, r.ProtoMajor, r.ProtoMinor, r.Header, r.Close,
			r.ContentLength, r.Body == http.NoBody}
	}
	if f, s := see(fast), see(slow); !reflect.DeepEqual(f, s) {
		t.Fatalf("%q:\nparseHead       %+v\nhttp.ReadRequest %+v", raw, f, s)
	}
	// The bodies and what follows them: both readers again, the fast one over the same bytes.
	br := bufio.NewReader(strings.NewReader(raw))
	fast, _ = parseHeadAll(br)
	sbr := bufio.NewReader(strings.NewReader(raw))
	slow, _ = http.ReadRequest(sbr)
	fb, ferr := io.ReadAll(fast.Body)
	sb, serr := io.ReadAll(slow.Body)
	fr, _ := io.ReadAll(br)
	sr, _ := io.ReadAll(sbr)
	if !bytes.Equal(fb, sb) || ferr != serr || !bytes.Equal(fr, sr) {
		t.Fatalf("%q: body %q (%v) then %q, http.ReadRequest's %q (%v) then %q", raw, fb, ferr, fr, sb, serr, sr)
	}
	// A body closed after its first byte: what Close leaves to read, and a read after it.
	br, sbr = bufio.NewReader(strings.NewReader(raw)), bufio.NewReader(strings.NewReader(raw))
	fast, _ = parseHeadAll(br)
	slow, _ = http.ReadRequest(sbr)
	var one [1]byte
	_, _ = fast.Body.Read(one[:])
	_, _ = slow.Body.Read(one[:])
	ferr, serr = fast.Body.Close(), slow.Body.Close()
	_, fafter := fast.Body.Read(one[:])
	_, safter := slow.Body.Read(one[:])
	fr, _ = io.ReadAll(br)
	sr, _ = io.ReadAll(sbr)
	if ferr != serr || fafter != safter || !bytes.Equal(fr, sr) {
		t.Fatalf("%q: closed after a byte: %v, then %v and %q; http.ReadRequest's %v, then %v and %q", raw, ferr, fafter, fr, serr, safter, sr)
	}
}

// parseHeadAll is parseHead on a reader it fills first.
func parseHeadAll(br *bufio.Reader) (*http.Request, bool) {
	_, _ = br.Peek(br.Size())
	req, _, ok := parseHead(br, 1<<20, &http.Request{}, nil)
	return req, ok
}

// A statement's POST head as benchtrino's net/http client sends it, read by parseHead and by
// http.ReadRequest (the body is left unread by both).
//
//	go test -run '^$' -bench ReadHead -benchmem ./internal/httplite/
func BenchmarkReadHead(b *testing.B) {
	const raw = "POST /v1/statement HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: 8\r\n" +
		"X-Trino-Source: benchtrino\r\nX-Trino-User: postgres\r\n\r\nSELECT 1"
	for _, read := range []struct {
		name string
		read func(*bufio.Reader) (*http.Request, error)
	}{
		{"parseHead", func(br *bufio.Reader) (*http.Request, error) {
			if req, _, ok := parseHead(br, 1<<20, &http.Request{}, nil); ok {
				return req, nil
			}
			return nil, io.ErrUnexpectedEOF
		}},
		{"ReadRequest", http.ReadRequest},
	} {
		b.Run(read.name, func(b *testing.B) {
			sr := strings.NewReader(raw)
			br := bufio.NewReader(sr)
			b.ReportAllocs()
			for b.Loop() {
				sr.Reset(raw)
				br.Reset(sr)
				_, _ = br.Peek(1)
				if _, err := read.read(br); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A head of many fields, repeated and not (more names than parseFields tells apart without a
// map), is read as http.ReadRequest reads it: every value of a repeated field, in order.
func TestManyFieldsAreReadAsReadRequestReadsThem(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var b strings.Builder
		b.WriteString("GET /v1/statement HTTP/1.1\r\nHost: h\r\n")
		for i := range rapid.IntRange(0, 60).Draw(rt, "fields") {
			n := rapid.IntRange(0, 29).Draw(rt, "name")
			name := fmt.Sprintf("X-Field-%d", n)
			if rapid.Bool().Draw(rt, "lower") {
				name = strings.ToLower(name)
			}
			fmt.Fprintf(&b, "%s: v%d\r\n", name, i)
		}
		raw := b.String() + "\r\n"
		fast, _, ok := parseHead(buffered(t, raw), 1<<20, &http.Request{}, nil)
		if !ok {
			rt.Fatalf("not read without http.ReadRequest: %q", raw)
		}
		sameRequest(rt, raw, fast)
	})
}

// headEnd finds where bytes.Index finds the blank line, in any bytes (CRs and LFs most).
func TestHeadEndIsIndexOfTheBlankLine(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		buf := rapid.SliceOfN(rapid.SampledFrom([]byte("\r\n\r\nab :")), 0, 40).Draw(rt, "buf")
		if got, want := headEnd(buf), bytes.Index(buf, []byte("\r\n\r\n")); got != want {
			rt.Fatalf("headEnd(%q) = %d, want %d", buf, got, want)
		}
	})
}

// contentLength takes what strconv.ParseInt takes of digits alone, up to int64's bound.
func TestContentLengthIsParseIntOfDigits(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := rapid.OneOf(
			rapid.StringMatching(`[0-9]{0,20}`),
			rapid.StringMatching(`[0-9+\- a/:]{0,4}`),
			rapid.SampledFrom([]string{"9223372036854775807", "9223372036854775808", "9223372036854775810", "09223372036854775807", "18446744073709551616"}),
		).Draw(rt, "s")
		n, err := strconv.ParseInt(s, 10, 64)
		want := err == nil && strings.Trim(s, "0123456789") == ""
		if got, ok := contentLength(s); ok != want || (ok && got != n) {
			rt.Fatalf("contentLength(%q) = %d, %v; want %d, %v", s, got, ok, n, want)
		}
	})
}

// TestTokenFormIsHTTPsAndTextprotos: tokenForm tells a token as httpguts does, and its
// canonical form as textproto writes it, for names of any bytes (a field name's checks).
func TestTokenFormIsHTTPsAndTextprotos(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		alphabet := "aZzA-09_!~" // token bytes, and sometimes others
		if rapid.Bool().Draw(t, "others") {
			alphabet += " :\x80\xff\t\"("
		}
		b := rapid.SliceOfN(rapid.SampledFrom([]byte(alphabet)), 0, 12).Draw(t, "name")
		s := string(b)
		token, canonical := tokenForm(s)
		wantToken := s != ""
		for _, c := range b {
			wantToken = wantToken && httpguts.IsTokenRune(rune(c))
		}
		if token != wantToken || isToken(s) != wantToken {
			t.Fatalf("%q: token %v (isToken %v), httpguts %v", s, token, isToken(s), wantToken)
		}
		if wantToken && canonical != (textproto.CanonicalMIMEHeaderKey(s) == s) {
			t.Fatalf("%q: canonical %v, textproto's form %q", s, canonical, textproto.CanonicalMIMEHeaderKey(s))
		}
	})
}

// TestTokenFormOfFieldNames: the names clients send, canonical or not, and a capital after each
// hyphen.
func TestTokenFormOfFieldNames(t *testing.T) {
	for _, c := range []struct {
		name             string
		token, canonical bool
	}{
		{"X-Trino-User", true, true}, {"x-trino-user", true, false}, {"X-trino-User", true, false}, {"X-TRINO", true, false},
		{"-A", true, true}, {"-a", true, false}, {"A--B", true, true}, {"Content-Length", true, true}, {"A b", false, false}, {"", false, false},
	} {
		if token, canonical := tokenForm(c.name); token != c.token || canonical != c.canonical {
			t.Errorf("tokenForm(%q) = %v, %v; want %v, %v", c.name, token, canonical, c.token, c.canonical)
		}
	}
}
