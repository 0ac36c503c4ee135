package trinohttp

import (
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/httplite"
	"github.com/queryflux/queryflux/internal/query"
)

// buildRequest reads a request's header as the lookups it replaced read it (lookedUp): the
// catalog, schema, client tags and prepared statements, and every X-Trino- field but the secret
// X-Trino-Extra-Credential in Headers, whatever fields and values a client sends.
func TestBuildRequestReadsTheHeaderAsLookupsDid(t *testing.T) {
	names := []string{"X-Trino-Catalog", "X-Trino-Schema", "X-Trino-Client-Tags", "X-Trino-Prepared-Statement",
		"X-Trino-Extra-Credential", "X-Trino-Source", "X-Trino-Session", "User-Agent", "X-Other"}
	rapid.Check(t, func(rt *rapid.T) {
		h := http.Header{}
		for _, name := range rapid.SliceOfDistinct(rapid.SampledFrom(names), func(s string) string { return s }).Draw(rt, "names") {
			h[name] = rapid.SliceOfN(rapid.SampledFrom([]string{"", "a", "b, c", "q1=select+1", "x=y"}), 0, 2).Draw(rt, name)
		}
		r := &http.Request{Header: h, RemoteAddr: "127.0.0.1:9"}
		sql := rapid.SampledFrom([]string{"select 1", "execute q1", "execute x using 2"}).Draw(rt, "sql")
		if got, want := buildRequest(r, "u", sql, new(atomic.Pointer[map[string]string])), lookedUp(r, "u", sql); !reflect.DeepEqual(got, want) {
			rt.Fatalf("header %v:\n got %+v\nwant %+v", h, got, want)
		}
	})
}

// Requests built one after another share the last one's Headers only when it holds their own
// fields: each statement of any sequence of headers (names, values, more X-Trino- fields than
// buildRequest keeps aside) reads as the lookups read it, and a request's Headers never changes
// after it was built.
func TestBuildRequestSharesOnlyTheSameHeaders(t *testing.T) {
	few := []string{"X-Trino-Catalog", "X-Trino-Source", "X-Trino-Extra-Credential", "User-Agent"}
	many := []string{"X-Trino-Session"}
	for i := range 9 {
		many = append(many, "X-Trino-F"+strconv.Itoa(i))
	}
	rapid.Check(t, func(rt *rapid.T) {
		var last atomic.Pointer[map[string]string]
		var built []*query.Request
		var wants []map[string]string
		for i := range rapid.IntRange(1, 6).Draw(rt, "requests") {
			names := few // mostly the same few names, the values drawn again
			if rapid.IntRange(0, 3).Draw(rt, "many") == 0 {
				names = append(slices.Clip(few), many...) // more than buildRequest keeps aside
			}
			h := http.Header{}
			for _, name := range rapid.SliceOfDistinct(rapid.SampledFrom(names), func(s string) string { return s }).Draw(rt, "names") {
				h[name] = rapid.SliceOfN(rapid.SampledFrom([]string{"a", "b", ""}), 0, 2).Draw(rt, name)
			}
			r := &http.Request{Header: h, RemoteAddr: "127.0.0.1:9"}
			got, want := buildRequest(r, "u", "select 1", &last), lookedUp(r, "u", "select 1")
			if !reflect.DeepEqual(got, want) {
				rt.Fatalf("request %d, header %v:\n got %+v\nwant %+v", i, h, got, want)
			}
			built, wants = append(built, got), append(wants, want.Headers)
		}
		for i, req := range built {
			if !reflect.DeepEqual(req.Headers, wants[i]) {
				rt.Fatalf("request %d's Headers became %v after later requests, want %v", i, req.Headers, wants[i])
			}
		}
	})
}

// A statement whose fields are the last one's makes no Headers map of its own.
func TestBuildRequestOfTheSameHeadersAllocatesNoMap(t *testing.T) {
	h := http.Header{"X-Trino-User": {"u"}, "X-Trino-Source": {"benchtrino"}, "User-Agent": {"benchtrino/1"}}
	r := &http.Request{Header: h, RemoteAddr: "127.0.0.1:9"}
	var last atomic.Pointer[map[string]string]
	buildRequest(r, "u", "select 1", &last)
	if n := testing.AllocsPerRun(100, func() { buildRequest(r, "u", "select 1", &last) }); n > 1 {
		t.Fatalf("%.2f allocations a request with the last one's fields, want 1 (the request)", n)
	}
}

// lookedUp is buildRequest as it read the header before session 33: a lookup per field it reads.
func lookedUp(r *http.Request, user, sql string) *query.Request {
	req := &query.Request{
		SQL:        sql,
		User:       user,
		Protocol:   query.ProtocolTrino,
		Database:   httplite.Field(r.Header, "X-Trino-Catalog"),
		Schema:     httplite.Field(r.Header, "X-Trino-Schema"),
		Headers:    map[string]string{},
		ClientAddr: r.RemoteAddr,
	}
	for name, values := range r.Header {
		if strings.HasPrefix(name, "X-Trino-") && name != "X-Trino-Extra-Credential" && len(values) > 0 {
			req.Headers[name] = strings.Join(values, ",")
		}
	}
	for tag := range strings.SplitSeq(httplite.Field(r.Header, "X-Trino-Client-Tags"), ",") {
		if tag = strings.TrimSpace(tag); tag != "" {
			req.Tags = append(req.Tags, tag)
		}
	}
	var prepared map[string]string
	if names := r.Header["X-Trino-Prepared-Statement"]; len(names) > 0 {
		prepared = preparedStatements(names)
	}
	if sql, args, ok := parseExecuteImmediate(sql, prepared); ok {
		req.SQL, req.Args = sql, args
	}
	return req
}
