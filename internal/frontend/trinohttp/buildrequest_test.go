package trinohttp

import (
	"net/http"
	"reflect"
	"strings"
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
		if got, want := buildRequest(r, "u", sql), lookedUp(r, "u", sql); !reflect.DeepEqual(got, want) {
			rt.Fatalf("header %v:\n got %+v\nwant %+v", h, got, want)
		}
	})
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
