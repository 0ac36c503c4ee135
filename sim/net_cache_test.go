package sim

import (
	"net/http"
	"net/url"
	"testing"
)

// The per-Net caches must give exactly what they stand for, whatever the sequence of requests.
func TestNetCachesMatchTheirSources(t *testing.T) {
	nt := newNet(New(Opts{Seed: 1}))
	urls := []string{"http://a/x", "http://a/x", "http://a/x?q=1", "http://a/y", "http://a/x",
		"http://a/%2Fx", "http://a/x?", "http://a/x", "mailto:z", "http://a/x", "http://b/x",
		"http://u:p@b/x", "http://u:q@b/x", "http://b/x#f", "http://b/x", "http://b/x?q=1"}
	methods := []string{http.MethodPost, http.MethodGet}
	for i, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := nt.requestURI(u), u.RequestURI(); got != want {
			t.Errorf("requestURI(%s) = %q, want %q", raw, got, want)
		}
		if got, want := nt.urlString(u), u.String(); got != want {
			t.Errorf("urlString(%s) = %q, want %q", raw, got, want)
		}
		req := &http.Request{Method: methods[i%2], URL: u}
		if got, want := nt.taskName(req), "http "+req.Method+" "+u.Path; got != want {
			t.Errorf("taskName(%s %s) = %q, want %q", req.Method, raw, got, want)
		}
	}
}
