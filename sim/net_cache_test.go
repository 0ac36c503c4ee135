package sim

import (
	"maps"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/cespare/xxhash/v2"
	"pgregory.net/rapid"
)

// The per-Net caches must give exactly what they stand for, whatever the sequence of requests
// (three rounds: more URLs than the caches hold, some seen again while still held).
func TestNetCachesMatchTheirSources(t *testing.T) {
	nt := newNet(New(Opts{Seed: 1}))
	urls := []string{"http://a/x", "http://a/x", "http://a/x?q=1", "http://a/y", "http://a/x",
		"http://a/%2Fx", "http://a/x?", "http://a/x", "mailto:z", "http://a/x", "http://b/x",
		"http://u:p@b/x", "http://u:q@b/x", "http://b/x#f", "http://b/x", "http://b/x?q=1"}
	methods := []string{http.MethodPost, http.MethodGet}
	for i, raw := range slices.Concat(urls, urls[:5], urls) {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := nt.urlOf(u).requestURI, u.RequestURI(); got != want {
			t.Errorf("urlOf(%s).requestURI = %q, want %q", raw, got, want)
		}
		if got, want := nt.urlOf(u).str, u.String(); got != want {
			t.Errorf("urlOf(%s).str = %q, want %q", raw, got, want)
		}
		req := &http.Request{Method: methods[i%2], URL: u}
		if got, want := nt.taskName(req), "http "+req.Method+" "+u.Path; got != want {
			t.Errorf("taskName(%s %s) = %q, want %q", req.Method, raw, got, want)
		}
	}
}

// headerHash is the digest of the header written piece by piece in sorted key order (what the
// trace hashes recorded so far were made of), whatever the header, and reusing its buffer
// between headers of any size changes nothing.
func TestHeaderHashIsThePiecesDigest(t *testing.T) {
	nt := newNet(New(Opts{Seed: 1}))
	rapid.Check(t, func(t *rapid.T) {
		h := http.Header{}
		for range rapid.IntRange(0, 6).Draw(t, "keys") {
			h[rapid.StringN(0, 12, -1).Draw(t, "key")] = rapid.SliceOfN(rapid.StringN(0, 40, -1), 0, 3).Draw(t, "values")
		}
		var want uint64
		if len(h) > 0 {
			d := xxhash.New()
			for _, k := range slices.Sorted(maps.Keys(h)) {
				_, _ = d.WriteString(k)
				for _, v := range h[k] {
					_, _ = d.WriteString("\x00")
					_, _ = d.WriteString(v)
				}
				_, _ = d.WriteString("\n")
			}
			want = d.Sum64()
		}
		if got := nt.headerHash(h); got != want {
			t.Fatalf("headerHash(%q) = %x, want %x", h, got, want)
		}
	})
}
