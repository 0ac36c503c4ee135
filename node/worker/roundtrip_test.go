package worker

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// failPath is a transport that fails every request to path (with err) and sends the rest on.
type failPath struct {
	path string
	err  error
	body *closeCounter
}

func (rt failPath) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Path == rt.path {
		rt.body.ReadCloser = req.Body
		req.Body = rt.body
		return nil, rt.err
	}
	return http.DefaultTransport.RoundTrip(req)
}

type closeCounter struct {
	io.ReadCloser
	closed int
}

func (c *closeCounter) Close() error {
	c.closed++
	return c.ReadCloser.Close()
}

// A request that fails on the way is a *url.Error naming the method and the URL, wrapping the
// transport's error, as http.Client.Do wrapped it (the proxy tells an unreachable control plane
// by the type), and its body is closed.
func TestFailedRequestIsAURLError(t *testing.T) {
	f := newFleet(t)
	w := f.worker("w1", nil, nil)
	boom := errors.New("boom")
	body := &closeCounter{}
	w.client = &http.Client{Transport: failPath{path: "/worker/echo", err: boom, body: body}}
	_, err := w.Post(f.ctx, "/worker/echo", "application/x-test", []byte("payload"))
	var ue *url.Error
	if !errors.As(err, &ue) || !errors.Is(err, boom) {
		t.Fatalf("error %v (%T), want a *url.Error wrapping the transport's", err, err)
	}
	if want := f.srv.URL + "/worker/echo"; ue.Op != "Post" || ue.URL != want {
		t.Fatalf("url.Error Op %q URL %q, want Post %q", ue.Op, ue.URL, want)
	}
	if body.closed == 0 {
		t.Fatal("the failed request's body was never closed")
	}
	if !strings.Contains(err.Error(), "boom") {
		t.Fatalf("error text %q lost the cause", err)
	}
}

// cannedOK answers every request 200 with an empty body, allocating nothing itself.
type cannedOK struct{ resp *http.Response }

func (rt cannedOK) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return rt.resp, nil
}

// A request costs the worker only its own pieces: Post with a session already held allocates
// what building the request takes, not http.Client.Do's copy of the header for redirects and
// its cancel wiring (14 allocations with Do, 9 without), nor header values and a body reader
// wrapper of its own (6 with the worker's shared values and postBody), nor a header map of its
// own (5 with the header shared per media type and token). The control plane's heartbeats and
// capacity requests, thousands a second in a simulated fleet, go this way.
func TestPostAllocatesOnlyItsRequest(t *testing.T) {
	f := newFleet(t)
	w := f.worker("w1", nil, nil)
	if _, err := w.session(f.ctx, ""); err != nil {
		t.Fatal(err)
	}
	resp := &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}
	w.client = &http.Client{Transport: cannedOK{resp}}
	body := []byte("payload")
	allocs := testing.AllocsPerRun(100, func() {
		r, err := w.Post(f.ctx, "/worker/echo", "application/x-test", body)
		if err != nil || r != resp {
			t.Fatalf("Post: %v", err)
		}
	})
	if allocs > postAllocsMax {
		t.Fatalf("Post allocated %.0f times, want at most %d", allocs, postAllocsMax)
	}
}

const postAllocsMax = 5

// headerSeen records each request's Content-Type and Authorization and answers 200.
type headerSeen struct{ seen *[]string }

func (rt headerSeen) RoundTrip(req *http.Request) (*http.Response, error) {
	*rt.seen = append(*rt.seen, req.Header.Get("Content-Type")+" "+req.Header.Get("Authorization"))
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
}

// Post's shared header values are the request's own media type and the current token's.
func TestPostHeadersAreEachRequestsOwn(t *testing.T) {
	f := newFleet(t)
	w := f.worker("w1", nil, nil)
	token, err := w.session(f.ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	w.client = &http.Client{Transport: headerSeen{&seen}}
	for _, mt := range []string{"a/x", "b/y", "a/x"} {
		if _, err := w.Post(f.ctx, "/worker/echo", mt, nil); err != nil {
			t.Fatal(err)
		}
	}
	w.mu.Lock()
	w.token = "other"
	w.mu.Unlock()
	if _, err := w.Post(f.ctx, "/worker/echo", "b/y", nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"a/x Bearer " + token, "b/y Bearer " + token, "a/x Bearer " + token, "b/y Bearer other"}
	if strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Fatalf("headers %q, want %q", seen, want)
	}
}
