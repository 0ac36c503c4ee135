package trinohttp

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// A path pollPath reads is one the server's mux routes to the poll handler with the same
// values; the paths it leaves alone are the mux's (odd segments, escapes, other methods).
func TestPollPathsAreRoutedAsTheMuxRoutesThem(t *testing.T) {
	var got followUp
	var routed bool
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/statement/{phase}/{id}/{slug}/{token}", func(w http.ResponseWriter, r *http.Request) {
		got, routed = pathOf(r), true
	})
	segment := rapid.SampledFrom([]string{"executing", "queued", "20261203_140000_00001_abcdef", "y0123", "1", "0",
		"", ".", "..", "a%2Fb", "a b", "%41", "é", "x.y"})
	rapid.Check(t, func(rt *rapid.T) {
		segs := rapid.SliceOfN(segment, 2, 6).Draw(rt, "segments")
		method := rapid.SampledFrom([]string{"GET", "GET", "HEAD", "DELETE", "POST"}).Draw(rt, "method")
		path := "/v1/statement/" + strings.Join(segs, "/") + rapid.SampledFrom([]string{"", "", "/", "?x=1"}).Draw(rt, "tail")
		r := httptest.NewRequest(method, "http://h"+strings.ReplaceAll(path, " ", "%20"), nil)
		f, ok := pollPath(r)
		if !ok {
			return
		}
		got, routed = followUp{}, false
		mux.ServeHTTP(httptest.NewRecorder(), r)
		if !routed || got != f {
			rt.Fatalf("%s %s: pollPath read %+v, the mux routed %v with %+v", method, r.URL, f, routed, got)
		}
	})
	for _, path := range []string{"/v1/statement/executing/q_1/y0/1", "/v1/statement/queued/q/s/0"} {
		if _, ok := pollPath(httptest.NewRequest("GET", path, nil)); !ok {
			t.Fatalf("a poll of %s is left to the mux", path)
		}
	}
}

// Every request isSubmit takes, the mux routes to the statement's POST handler: any drawn
// method, path form and query.
func TestSubmitsAreRoutedAsTheMuxRoutesThem(t *testing.T) {
	routed := false
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/statement", func(http.ResponseWriter, *http.Request) { routed = true })
	rapid.Check(t, func(rt *rapid.T) {
		method := rapid.SampledFrom([]string{"POST", "POST", "GET", "PUT", "HEAD", "post"}).Draw(rt, "method")
		path := rapid.SampledFrom([]string{"/v1/statement", "/v1/statement/", "/v1//statement", "/v1/./statement",
			"/v1/%73tatement", "/V1/statement", "/v1/statement/x", "/v1/statemen"}).Draw(rt, "path")
		r := httptest.NewRequest(method, "http://h"+path+rapid.SampledFrom([]string{"", "?x=1"}).Draw(rt, "query"), nil)
		if !isSubmit(r) {
			return
		}
		routed = false
		mux.ServeHTTP(httptest.NewRecorder(), r)
		if !routed {
			rt.Fatalf("%s %s: isSubmit took it, the mux did not route it to the POST of a statement", method, r.URL)
		}
	})
	if !isSubmit(httptest.NewRequest("POST", "/v1/statement", nil)) {
		t.Fatal("a statement's POST is left to the mux")
	}
}
