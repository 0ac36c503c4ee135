package forward

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/proxy"
)

// relay answers at an address peers still list for w2 (its old address, taken over) and passes
// every request on to w2's real address, keeping what it saw of each request and answer. With
// rewrite, it also names w2's real address as the one dialed, as a relay that knows the scheme
// would.
type relay struct {
	mu      sync.Mutex
	reqs    []http.Header
	bodies  []string
	answers []http.Header
	srv     *httptest.Server
}

func newRelay(t *testing.T, to string, rewrite bool) *relay {
	target, _ := url.Parse(to)
	rl := &relay{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			if rewrite {
				pr.Out.Header.Set(HeaderPeerAddr, DialedAddress(to))
			}
		},
		ModifyResponse: func(resp *http.Response) error {
			rl.mu.Lock()
			rl.answers = append(rl.answers, resp.Header.Clone())
			rl.mu.Unlock()
			return nil
		},
	}
	rl.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rl.mu.Lock()
		rl.reqs = append(rl.reqs, r.Header.Clone())
		rl.bodies = append(rl.bodies, string(body))
		rl.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(rl.srv.Close)
	return rl
}

// leaked is what the relay got that it must not: the client's credentials, an owner proof.
func (rl *relay) leaked() []string {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	var out []string
	for _, h := range rl.reqs {
		for _, c := range credentialHeaders {
			if h.Get(c) != "" {
				out = append(out, "request "+c)
			}
		}
	}
	for _, h := range rl.answers {
		if h.Get(HeaderOwnerProof) != "" {
			out = append(out, "answer "+HeaderOwnerProof)
		}
	}
	return out
}

// trinoOwner serves forwarded Trino follow-ups as trinohttp does: the hop checked (403 with
// TellClock), a kill needs credentials (401), a poll answers rows.
func trinoOwner(f *Forwarder) http.Handler {
	return f.Unsealing(f.Vouching(BindTrino, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := f.Inbound(r.Header.Get, BindTrino); err != nil {
			TellClock(w.Header(), err)
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		user, _, ok := r.BasicAuth()
		if r.Method == http.MethodDelete && !ok {
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, r.Method+" rows as "+user)
	})))
}

// TestARelayAtAStalePeerAddressGetsNothingFromTheOwner: w2 moved; w1's peer list still names its
// old address, where a host now relays whatever it gets to w2's real address (real listeners
// all the way). w1's proof names the address it dialed, and w2 advertises only its real one: a
// poll, a kill carrying alice's credentials and a whole query all reach w2 through the relay and
// are refused there (counted refused_address). The relay sees no owner proof and none of the
// client's credentials; the whole query does not run on w2 (w1 runs it itself). A relay that
// rewrites the dialed address to w2's real one breaks the proof. Through w2's real address, the
// same three go through.
func TestARelayAtAStalePeerAddressGetsNothingFromTheOwner(t *testing.T) {
	const secret = "relay-secret-0123456789"
	w2, advertised := testOwner(testEnv, "w2", secret)
	trinoSrv := httptest.NewServer(trinoOwner(w2))
	t.Cleanup(trinoSrv.Close)
	ran := &recordingBackend{}
	querySrv := httptest.NewServer(w2.QueryHandler(ran))
	t.Cleanup(querySrv.Close)
	advertised.add(trinoSrv.URL)
	advertised.add(querySrv.URL)

	wholeQuery := func(f *Forwarder) error {
		rows, err := f.Locality().Run(context.Background(), &query.Request{SQL: "select salary from payroll", User: "alice",
			Protocol: "trino", ClientAddr: "203.0.113.9:4001"}, "key", func(map[string]string) bool { return true }, 5*time.Second)
		if rows != nil {
			rows.Close()
		}
		return err
	}
	through := func(trinoEP, queryEP string) *Forwarder {
		f, err := New(Options{Env: testEnv, Name: "w1", Secret: secret, Client: NewClient(nil),
			Directory: peers{{Name: "w2", Healthy: true, Endpoints: map[string]string{Trino: trinoEP, Query: queryEP}}}})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}

	for _, rewrite := range []bool{false, true} {
		name := map[bool]string{false: "relay", true: "relay naming w2's real address"}[rewrite]
		trinoRelay, queryRelay := newRelay(t, trinoSrv.URL, rewrite), newRelay(t, querySrv.URL, rewrite)
		w1 := through(trinoRelay.srv.URL, "")
		before := ran.count.Load()
		if rec := followUp(w1, http.MethodGet); rec.Code == http.StatusOK || strings.Contains(rec.Body.String(), "rows") {
			t.Errorf("%s: a poll relayed to w2 got w2's answer: %d %q", name, rec.Code, rec.Body)
		}
		if rec := followUp(w1, http.MethodDelete); rec.Code == http.StatusOK || strings.Contains(rec.Body.String(), "as alice") {
			t.Errorf("%s: a kill relayed to w2 ran: %d %q", name, rec.Code, rec.Body)
		}
		if got := trinoRelay.leaked(); len(got) != 0 {
			t.Errorf("%s: the relay got %v", name, got)
		}
		// The whole query goes to the relay at w2's Query endpoint (no Trino endpoint listed).
		w1q := through("", queryRelay.srv.URL)
		if err := wholeQuery(w1q); !errors.Is(err, proxy.ErrRunHere) {
			t.Errorf("%s: a whole query relayed to w2: %v, want it refused there and run here", name, err)
		}
		if n := ran.count.Load() - before; n != 0 {
			t.Errorf("%s: w2 ran %d queries relayed to it", name, n)
		}
		if len(queryRelay.bodies) == 0 {
			t.Errorf("%s: nothing reached the query relay", name)
		}
	}
	// The poll, the kill and the whole query, from each relay: the rewritten address breaks the MAC.
	for result, want := range map[string]float64{"refused_address": 3, "refused": 3} { //determinism:ok a test's cases
		if got := testutil.ToFloat64(w2.metrics.received.WithLabelValues(result)); got != want {
			t.Errorf("w2 counted %v requests %s, want %v", got, result, want)
		}
	}

	// The real address: the same requests go through.
	w1 := through(trinoSrv.URL, querySrv.URL)
	if rec := followUp(w1, http.MethodGet); rec.Code != http.StatusOK || rec.Body.String() != "GET rows as " {
		t.Fatalf("a poll at w2's real address: %d %q", rec.Code, rec.Body)
	}
	if rec := followUp(w1, http.MethodDelete); rec.Code != http.StatusOK || rec.Body.String() != "DELETE rows as alice" {
		t.Fatalf("a kill at w2's real address: %d %q; want it run as alice", rec.Code, rec.Body)
	}
	before := ran.count.Load()
	if err := wholeQuery(through("", querySrv.URL)); errors.Is(err, proxy.ErrRunHere) || ran.count.Load() != before+1 {
		t.Fatalf("a whole query at w2's real address: %v, ran there %d times", err, ran.count.Load()-before)
	}
}

// TestDialedAddressesCompareAsTheOwnerAdvertisedThem: an owner takes a proof naming the address
// of an endpoint it advertises however the forwarder's copy of it is spelled (case, a trailing
// dot, an IPv6 form, an IPv4-mapped one, a default port), and nothing else: not another port,
// another name for the same host, a host whose name it ends, nor no address at all.
func TestDialedAddressesCompareAsTheOwnerAdvertisedThem(t *testing.T) {
	w2, _ := testOwner(testEnv, "w2", "s", "http://QF-W2.pods.svc.cluster.local.:8080", "grpc+tls://[2001:db8::7]:9443",
		"https://10.0.0.7", "http://[::ffff:10.0.0.8]:8081")
	for dialed, want := range map[string]bool{ //determinism:ok a test's cases
		"http://qf-w2.pods.svc.cluster.local:8080":  true,
		"https://qf-w2.pods.svc.cluster.local:8080": true,
		"grpc+tcp://[2001:db8:0:0:0:0:0:7]:9443":    true,
		"http://10.0.0.7:443":                       true,
		"https://10.0.0.7:443/":                     true,
		"http://10.0.0.8:8081":                      true,
		"http://qf-w2.pods.svc.cluster.local:8081":  false,
		"http://qf-w2:8080":                         false,
		"http://w2.pods.svc.cluster.local:8080":     false,
		"http://10.0.0.7":                           false,
		"grpc+tls://[2001:db8::8]:9443":             false,
		"http://[::ffff:10.0.0.7]:8080":             false,
		"":                                          false,
		"not a url":                                 false,
	} {
		if got := w2.advertises(DialedAddress(dialed)); got != want {
			t.Errorf("%q (%q): taken %v, want %v", dialed, DialedAddress(dialed), got, want)
		}
	}
	none, _ := testOwner(testEnv, "w3", "s")
	if none.advertises(DialedAddress("http://10.0.0.7:80")) {
		t.Error("a worker that advertises nothing takes a forwarded request")
	}
}
