package forward

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/node/workerapi"
)

// TestProofFieldsDoNotRunTogether: the proof's MAC covers each field apart, so moving
// characters across a field boundary (the client address and the bind are partly the
// client's to choose) makes another proof. Each pair below runs together to the same bytes.
func TestProofFieldsDoNotRunTogether(t *testing.T) {
	type fields struct {
		owner, ts, addr string
		tls             bool
		bind            string
	}
	mac := func(f fields) string {
		return proofMAC("s3cret", f.owner, f.bind, "10.0.0.9:8080", f.addr, f.tls, f.ts)
	}
	for name, pair := range map[string][2]fields{
		"owner and date":   {{"owner", "1700000000", "10.0.0.1:5", false, "b"}, {"owner1", "700000000", "10.0.0.1:5", false, "b"}},
		"date and address": {{"owner", "1700000000", "10.0.0.1:5", false, "b"}, {"owner", "170000000", "010.0.0.1:5", false, "b"}},
		"address, TLS and bind": {{"owner", "1700000000", "10.0.0.1:5", false, "truex"},
			{"owner", "1700000000", "10.0.0.1:5false", true, "x"}},
	} {
		if mac(pair[0]) == mac(pair[1]) {
			t.Errorf("%s: %+v and %+v sign alike", name, pair[0], pair[1])
		}
	}
}

// failingDirectory has no peers and cannot reach the control plane.
type failingDirectory struct{ asked int }

func (*failingDirectory) Peers() []workerapi.Peer { return nil }
func (d *failingDirectory) RefreshPeers(context.Context) error {
	d.asked++
	return errors.New("control plane unreachable")
}

// refreshingDirectory learns of its peers only when asked again.
type refreshingDirectory struct {
	list      peers
	refreshed bool
}

func (d *refreshingDirectory) Peers() []workerapi.Peer {
	if d.refreshed {
		return d.list
	}
	return nil
}
func (d *refreshingDirectory) RefreshPeers(context.Context) error { d.refreshed = true; return nil }

func TestEndpointAsksAgainAndSaysWhyItFailed(t *testing.T) {
	d := &refreshingDirectory{list: peers{{Name: "w9", Endpoints: map[string]string{Trino: "http://w9"}}}}
	f, err := New(Options{Env: testEnv, Name: "w1", Secret: "s", Directory: d, Client: NewClient(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if ep, err := f.Endpoint(context.Background(), OwnerID("w9"), Trino); err != nil || ep != "http://w9" {
		t.Fatalf("an owner the first peer list lacks, found after asking again: %q %v", ep, err)
	}
	fd := &failingDirectory{}
	f, _ = New(Options{Env: testEnv, Name: "w1", Secret: "s", Directory: fd, Client: NewClient(nil)})
	_, err = f.Endpoint(context.Background(), OwnerID("w9"), Trino)
	if !errors.Is(err, ErrOwnerUnknown) || fd.asked != 1 {
		t.Fatalf("an unknown owner with the control plane down: %v (asked %d), want ErrOwnerUnknown", err, fd.asked)
	}
	if want := "control plane unreachable"; !strings.Contains(err.Error(), want) {
		t.Fatalf("the error %q does not say why the peer list could not be had (%q)", err, want)
	}
}

// TestTwoNamesWithOneOwnerIDResolveToNeither: an owner id is a hash of the name; should two
// names share one, a request cannot be told to which it belongs, so it goes to neither.
func TestTwoNamesWithOneOwnerIDResolveToNeither(t *testing.T) {
	list := peers{{Name: "w2", Endpoints: map[string]string{Trino: "http://a"}}, {Name: "w2", Endpoints: map[string]string{Trino: "http://b"}}}
	f, _ := New(Options{Env: testEnv, Name: "w1", Secret: "s", Directory: list, Client: NewClient(nil)})
	if ep, err := f.Endpoint(context.Background(), OwnerID("w2"), Trino); err == nil {
		t.Fatalf("an owner id two peers share resolved to %q", ep)
	}
}

func TestNewRefusesAnIncompleteForwarder(t *testing.T) {
	full := Options{Env: testEnv, Name: "w1", Secret: "s", Directory: peers{}, Client: NewClient(nil)}
	for name, o := range map[string]Options{
		"no Env": {Name: "w1", Secret: "s", Directory: peers{}, Client: NewClient(nil)}, "no name": {Env: testEnv, Secret: "s", Directory: peers{}, Client: NewClient(nil)},
		"no secret": {Env: testEnv, Name: "w1", Directory: peers{}, Client: NewClient(nil)}, "no directory": {Env: testEnv, Name: "w1", Secret: "s", Client: NewClient(nil)},
		"no client": {Env: testEnv, Name: "w1", Secret: "s", Directory: peers{}},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := New(full); err != nil {
		t.Fatal(err)
	}
}

// TestForwardMetricsCountEachOutcome: an operator tells a forged hop from a stepped clock and
// from a good one by queryflux_forwards_received_total, and sees forwards by outcome.
func TestForwardMetricsCountEachOutcome(t *testing.T) {
	reg := prometheus.NewRegistry()
	const secret = "s3cret"
	f, err := New(Options{Env: testEnv, Name: "w2", Secret: secret, Directory: peers{}, Client: NewClient(nil), Registerer: reg,
		Advertised: func() map[string]string { return map[string]string{Trino: "http://w2.example:8080"} }})
	if err != nil {
		t.Fatal(err)
	}
	now := testEnv.Now()
	const at = "w2.example:8080"
	send := func(token, dialed string) {
		h := map[string]string{HeaderHop: "1", HeaderSecret: token, HeaderPeerAddr: dialed, HeaderClientAddr: "10.0.0.1:1", HeaderClientTLS: "false"}
		f.Inbound(func(k string) string { return h[k] }, BindTrino)
	}
	send(proof(secret, f.Self(), BindTrino, at, "10.0.0.1:1", false, now), at)
	send(proof(secret, f.Self(), BindTrino, at, "10.0.0.1:1", false, now), at)
	send(proof("guess", f.Self(), BindTrino, at, "10.0.0.1:1", false, now), at)
	send("the secret itself, guessed", at)
	send(proof(secret, f.Self(), BindTrino, at, "10.0.0.1:1", false, now.Add(-time.Hour)), at)
	send(proof(secret, f.Self(), BindTrino, "relay.example:8080", "10.0.0.1:1", false, now), "relay.example:8080")
	for result, want := range map[string]float64{"ok": 2, "refused": 2, "refused_clock": 1, "refused_address": 1} {
		if got := testutil.ToFloat64(f.metrics.received.WithLabelValues(result)); got != want {
			t.Errorf("received %s = %v, want %v", result, got, want)
		}
	}
	f.Observe(Trino, OutcomeOK, 3*time.Millisecond)
	f.Observe(Trino, OutcomeOK, 4*time.Millisecond)
	f.Observe(Trino, OutcomeUnreachable, time.Second)
	for outcome, want := range map[string]float64{OutcomeOK: 2, OutcomeUnreachable: 1} {
		if got := testutil.ToFloat64(f.metrics.forwards.WithLabelValues(Trino, outcome)); got != want {
			t.Errorf("forwards %s = %v, want %v", outcome, got, want)
		}
	}
	// Only a forward the owner answered times its answer.
	if got := histogramCount(t, reg, "queryflux_forward_seconds"); got != 2 {
		t.Errorf("queryflux_forward_seconds observed %d forwards, want the 2 answered", got)
	}
}

func histogramCount(t *testing.T, reg *prometheus.Registry, name string) uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() == name {
			var n uint64
			for _, m := range mf.GetMetric() {
				n += m.GetHistogram().GetSampleCount()
			}
			return n
		}
	}
	return 0
}
