// Package forward sends a request that reached a worker other than the one owning its query
// (a Trino follow-up, a Flight SQL ticket) to the owner, and picks a preferred worker for a
// cache key. Owners are named by OwnerID, a short hash of the worker name that query ids and
// tickets carry; the registry (the control plane's peer list) resolves it to the owner's
// endpoints.
//
// A forwarded request carries HeaderHop: its receiver serves it or answers "unknown", and never
// forwards it again, so a request crosses at most one hop and loops cannot form. It also carries
// a proof of the shared worker secret (checked by Inbound), never the secret itself, and the
// original client's address and TLS state, which the owner uses in place of the forwarder's.
// The proof is an HMAC keyed by the secret over the owner, the time, the address the forwarder
// dialed, the client's address and TLS state and what the request asks (Bind*): whoever answers
// at an owner's address (a stale peer entry, a host that took it over) learns nothing it can
// present to another worker, with another client address, for another query or user, or after
// ProofAgeMax. Nor can it relay the request to the owner's real address: the owner takes only a
// proof naming one of the endpoints it advertises (Options.Advertised), so the relay gets no
// answer, no owner proof and so none of the client's credentials.
//
// It touches time and tasks only through the Env it is given and the network only through the
// HTTP client it is given, so the simulator runs the preferred-worker path (Locality and
// QueryHandler) over its simulated network; NewClient is the production client.
package forward

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

// Headers of a forwarded request (HTTP headers, or gRPC metadata in lower case).
const (
	HeaderHop        = "X-Queryflux-Hop"         // "1"
	HeaderSecret     = "X-Queryflux-Peer-Secret" // proof of the shared worker secret (see proof)
	HeaderClientAddr = "X-Queryflux-Client-Addr" // the client's address as the first worker saw it
	HeaderClientTLS  = "X-Queryflux-Client-Tls"  // "true" when the client used TLS
	// HeaderPeerTime answers a true proof refused for its date: the refusing worker's clock
	// (unix seconds) and a MAC, keyed by the secret, over that time and the refused proof. The
	// forwarder dates its retry by it (Forwarder.learnClock); without the secret nobody can make
	// it date proofs ahead, to be replayed later.
	HeaderPeerTime = "X-Queryflux-Peer-Time"
	// HeaderPeerAddr is the address (host:port, as DialedAddress gives it) the forwarder dialed,
	// which its proof binds: the owner refuses an address it does not advertise.
	HeaderPeerAddr = "X-Queryflux-Peer-Addr"
)

// Protocols, as endpoints are keyed.
const (
	Trino     = "trino"
	FlightSQL = "flightsql"
	// Query keys the worker API listener's endpoint, where a worker takes whole queries from
	// peers (PathQuery) when it has no Trino listener.
	Query = "query"
)

// OwnerIDLength is the length of an OwnerID.
const OwnerIDLength = 8

// OwnerID is the stable id of the worker named name: 8 lower-case hex digits.
func OwnerID(name string) string {
	return fmt.Sprintf("%08x", uint32(xxhash.Sum64String(name)>>32))
}

// IsOwnerID reports whether s has the shape of an OwnerID.
func IsOwnerID(s string) bool {
	if len(s) != OwnerIDLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Directory is the fleet as a worker knows it from the control plane.
type Directory interface {
	// Peers is the last known list of online workers with endpoints (this one included).
	Peers() []workerapi.Peer
	// RefreshPeers asks the control plane again (rate-limited by the implementation).
	RefreshPeers(ctx context.Context) error
}

// Options configure a Forwarder.
type Options struct {
	Env       env.Env
	Name      string // this worker's name
	Secret    string // the shared worker secret: presented to owners, required from forwarders
	Directory Directory
	// Client carries requests to owners (NewClient); it must give up on an owner that does not
	// accept a connection within seconds, so that the client gets its unknown-query error
	// rather than a hang.
	Client     *http.Client
	Registerer prometheus.Registerer
	// Advertised is the endpoints this worker registered, by protocol (worker.Advertised): a
	// forwarded request is taken only when its proof names one of their addresses as the one its
	// forwarder dialed, so that a host answering at an address peers still list for this worker
	// cannot relay their requests here. Nil (or none yet): every forwarded request is refused.
	Advertised func() map[string]string
}

// Forwarder carries requests to their owners. Its methods are safe for concurrent use.
type Forwarder struct {
	opts    Options
	self    string
	metrics *metrics

	mu      sync.Mutex
	offsets map[string]time.Duration // an owner's clock less this worker's, told by its refusals
}

// New returns a Forwarder for the worker opts.Name.
func New(opts Options) (*Forwarder, error) {
	if opts.Env == nil || opts.Name == "" || opts.Secret == "" || opts.Directory == nil || opts.Client == nil {
		return nil, errors.New("forward: an Env, a worker name, the shared worker secret, a directory and a client are required")
	}
	return &Forwarder{opts: opts, self: OwnerID(opts.Name), metrics: newMetrics(opts.Registerer)}, nil
}

// DialTimeout bounds connecting to an owner through NewClient.
const DialTimeout = 3 * time.Second

// NewClient is the client between workers: tlsConfig verifies owners' certificates (and
// presents this worker's) on https and grpc+tls endpoints (nil: the system roots), and an owner
// that does not accept a connection within DialTimeout counts as gone.
//
//determinism:production production's client between workers; roles are given theirs
func NewClient(tlsConfig *tls.Config) *http.Client {
	dialer := &net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second}
	// A copy: an HTTP/2 transport sharing tlsConfig (the control plane's client) adds "h2" to
	// its ALPN protocols on first use, and this HTTP/1.1 transport would then speak HTTP/1.1 on
	// connections the owner negotiated as HTTP/2.
	return &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext, TLSClientConfig: tlsConfig.Clone(),
		MaxIdleConnsPerHost: 32, IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: DialTimeout}}
}

// Self is this worker's OwnerID.
func (f *Forwarder) Self() string { return f.self }

// TLS is the client TLS configuration towards owners.
func (f *Forwarder) TLS() *tls.Config {
	if t, ok := f.opts.Client.Transport.(*http.Transport); ok {
		return t.TLSClientConfig
	}
	return nil
}

// ErrOwnerUnknown means no online worker has the owner id (it is gone, or was never there).
var ErrOwnerUnknown = errors.New("forward: the owning worker is not in the registry")

// Endpoint resolves owner to its endpoint for protocol, asking the control plane again when the
// last peer list does not have it.
func (f *Forwarder) Endpoint(ctx context.Context, owner, protocol string) (string, error) {
	if ep, ok := f.lookup(owner, protocol); ok {
		return ep, nil
	}
	if err := f.opts.Directory.RefreshPeers(ctx); err != nil {
		return "", fmt.Errorf("%w (peer list: %v)", ErrOwnerUnknown, err)
	}
	if ep, ok := f.lookup(owner, protocol); ok {
		return ep, nil
	}
	return "", ErrOwnerUnknown
}

func (f *Forwarder) lookup(owner, protocol string) (string, bool) {
	found := ""
	for _, p := range f.opts.Directory.Peers() {
		if OwnerID(p.Name) != owner {
			continue
		}
		if found != "" { // two names with one id: neither can be told apart
			return "", false
		}
		found = p.Endpoints[protocol]
	}
	return found, found != ""
}

// Hop is what a request says about having been forwarded.
type Hop struct {
	Forwarded  bool
	ClientAddr string // the original client's address (only when Forwarded)
	ClientTLS  bool
}

// ErrBadHop is a request that claims to be forwarded without proof of the shared worker secret.
var ErrBadHop = errors.New("a forwarded request needs the shared worker secret")

// ProofAgeMax is how far a forwarding proof's time may be from the receiver's clock, either way
// (workers' clocks drift; a forwarded request is sent at once).
const ProofAgeMax = 2 * time.Minute

// What a forwarded request asks, as its proof binds it.
const (
	BindTrino = "trino" // a follow-up of a Trino query (its id names the owner)
)

// BindQuery binds a whole query sent to PathQuery: its body (SQL, user, protocol, session).
func BindQuery(body []byte) string {
	sum := sha256.Sum256(body)
	return "query " + hex.EncodeToString(sum[:])
}

// BindFlightSQL binds a Flight SQL call forwarded for user.
func BindFlightSQL(user string) string { return "flightsql " + user }

// proofPrefix marks a proof; "qff1." proofs (before the dialed address was bound) are refused.
const proofPrefix = "qff2."

// proof is the forwarding proof of the worker secret for a request to owner at the address
// dialed, sent at at.
func proof(secret, owner, bind, dialed, clientAddr string, clientTLS bool, at time.Time) string {
	ts := strconv.FormatInt(at.Unix(), 10)
	return proofPrefix + ts + "." + proofMAC(secret, owner, bind, dialed, clientAddr, clientTLS, ts)
}

func proofMAC(secret, owner, bind, dialed, clientAddr string, clientTLS bool, ts string) string {
	m := hmac.New(sha256.New, []byte(secret))
	for _, part := range []string{"queryflux forward v2", owner, ts, dialed, clientAddr, strconv.FormatBool(clientTLS), bind} {
		m.Write([]byte(part))
		m.Write([]byte{0})
	}
	return hex.EncodeToString(m.Sum(nil))
}

// DialedAddress is the address of endpoint (a URL: http://host:port, grpc+tls://host:port) as
// a proof binds it and an owner compares it with its own: the host lower-cased without a
// trailing dot (a name is not resolved: a relay may answer at any of its addresses), an IP in
// its canonical form (::ffff:10.0.0.1 is 10.0.0.1, 0:0::1 is ::1), the port the scheme implies
// when none is written. "" when endpoint has no host.
func DialedAddress(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return ""
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		host = ip.Unmap().String()
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if port == "" {
		return host
	}
	return net.JoinHostPort(host, port)
}

// AddressError is a true proof naming, as the address its forwarder dialed, one this worker
// does not advertise: a host at an address peers still list for this worker (a stale entry)
// relayed their request here.
type AddressError struct{ Dialed string }

func (e *AddressError) Error() string {
	return fmt.Sprintf("%v: the forwarding worker dialed %q, which is not an address this worker advertises "+
		"(a host at a stale peer address relaying the request?)", ErrBadHop, e.Dialed)
}

func (e *AddressError) Unwrap() error { return ErrBadHop }

// advertises reports whether dialed (a DialedAddress) is the address of one of this worker's
// advertised endpoints.
func (f *Forwarder) advertises(dialed string) bool {
	if dialed == "" || f.opts.Advertised == nil {
		return false
	}
	for _, ep := range f.opts.Advertised() { //determinism:ok a membership test
		if DialedAddress(ep) == dialed {
			return true
		}
	}
	return false
}

// ClockError is a true proof refused for its date: the two workers' clocks differ by more than
// ProofAgeMax. TellClock answers the forwarder with this worker's time.
type ClockError struct {
	Age  time.Duration // the proof's date less this worker's clock, negated
	told string        // HeaderPeerTime's value
}

func (e *ClockError) Error() string {
	return fmt.Sprintf("%v: the peer's proof is dated %v from this worker's clock, more than %v either way: the two workers' clocks differ (a stepped clock?)",
		ErrBadHop, e.Age.Round(time.Second), ProofAgeMax)
}

func (e *ClockError) Unwrap() error { return ErrBadHop }

// TellClock sets HeaderPeerTime on h when err refused a true proof for its date, so that the
// forwarder can retry dated by this worker's clock.
func TellClock(h http.Header, err error) {
	var ce *ClockError
	if errors.As(err, &ce) {
		h.Set(HeaderPeerTime, ce.told)
	}
}

// clockMAC binds a refusing owner's time to the proof it refused.
func clockMAC(secret, owner, ts, refused string) string {
	m := hmac.New(sha256.New, []byte(secret))
	for _, part := range []string{"queryflux forward clock v1", owner, ts, refused} {
		m.Write([]byte(part))
		m.Write([]byte{0})
	}
	return hex.EncodeToString(m.Sum(nil))
}

// proven checks that token proves the worker secret for a request to this worker at the address
// dialed with bind, client address and TLS state: nil, ErrBadHop, an *AddressError for a true
// proof naming an address this worker does not advertise, or a *ClockError for a true proof
// dated too far from this worker's clock (told apart only once the proof is known true, so that
// only a peer learns of the clocks). The secret itself is still taken from workers that predate
// proofs.
func (f *Forwarder) proven(token, bind, dialed, clientAddr string, clientTLS bool) error {
	rest, ok := strings.CutPrefix(token, proofPrefix)
	if !ok {
		if workerapi.TokenEqual(token, f.opts.Secret) {
			return nil
		}
		return ErrBadHop
	}
	ts, mac, ok := strings.Cut(rest, ".")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if !ok || err != nil || !hmac.Equal([]byte(mac), []byte(proofMAC(f.opts.Secret, f.self, bind, dialed, clientAddr, clientTLS, ts))) {
		return ErrBadHop
	}
	if !f.advertises(dialed) {
		return &AddressError{Dialed: dialed}
	}
	now := f.opts.Env.Now()
	if age := now.Sub(time.Unix(sec, 0)); age > ProofAgeMax || age < -ProofAgeMax {
		nowTS := strconv.FormatInt(now.Unix(), 10)
		return &ClockError{Age: age, told: nowTS + "." + clockMAC(f.opts.Secret, f.self, nowTS, token)}
	}
	return nil
}

// learnClock takes an owner's refusal of the proof sent for its date: when told carries the
// owner's time with a MAC over it and sent (so it answers this very proof, from a holder of the
// secret), proofs to owner are dated by that clock from now on, and learnClock reports true
// (retry once). Anything else changes nothing.
func (f *Forwarder) learnClock(owner, sent, told string) bool {
	ts, mac, ok := strings.Cut(told, ".")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if !ok || err != nil || !hmac.Equal([]byte(mac), []byte(clockMAC(f.opts.Secret, owner, ts, sent))) {
		return false
	}
	offset := time.Unix(sec, 0).Sub(f.opts.Env.Now())
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.offsets == nil || len(f.offsets) >= offsetsMax {
		f.offsets = map[string]time.Duration{} // owners are the fleet's workers: only names churned past it
	}
	f.offsets[owner] = offset
	return true
}

// offsetsMax bounds the owners whose clock offsets a worker remembers.
const offsetsMax = 4096

// ownerNow is this worker's reckoning of owner's clock.
func (f *Forwarder) ownerNow(owner string) time.Time {
	f.mu.Lock()
	offset := f.offsets[owner]
	f.mu.Unlock()
	return f.opts.Env.Now().Add(offset)
}

// ClockOffset is what this worker adds to its clock to date proofs for owner (0 until an
// owner's refusal told it otherwise).
func (f *Forwarder) ClockOffset(owner string) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.offsets[owner]
}

// Inbound reads the forwarding headers of a request (get returns one header's value) that asks
// bind: a forwarded request must carry proof of the shared worker secret for this worker and
// bind, or it is refused with ErrBadHop.
func (f *Forwarder) Inbound(get func(name string) string, bind string) (Hop, error) {
	if get(HeaderHop) == "" {
		return Hop{}, nil
	}
	if f == nil {
		return Hop{}, ErrBadHop // no worker secret here: nothing may claim to be a peer
	}
	clientAddr, tlsText := get(HeaderClientAddr), get(HeaderClientTLS)
	tlsOn, _ := strconv.ParseBool(tlsText)
	if err := f.proven(get(HeaderSecret), bind, get(HeaderPeerAddr), clientAddr, tlsOn); err != nil {
		outcome := "refused"
		var ce *ClockError
		var ae *AddressError
		switch {
		case errors.As(err, &ce):
			outcome = "refused_clock"
		case errors.As(err, &ae):
			outcome = "refused_address"
		}
		f.metrics.received.WithLabelValues(outcome).Inc()
		return Hop{}, err
	}
	f.metrics.received.WithLabelValues("ok").Inc()
	return Hop{Forwarded: true, ClientAddr: clientAddr, ClientTLS: tlsOn}, nil
}

// Outbound returns the headers of a request forwarded to owner (an OwnerID) at endpoint (the
// owner's endpoint it is sent to) that asks bind, its proof dated by the owner's clock as far as
// this worker knows it.
func (f *Forwarder) Outbound(owner, endpoint, bind, clientAddr string, clientTLS bool) map[string]string {
	dialed := DialedAddress(endpoint)
	return map[string]string{HeaderHop: "1", HeaderSecret: proof(f.opts.Secret, owner, bind, dialed, clientAddr, clientTLS, f.ownerNow(owner)),
		HeaderPeerAddr: dialed, HeaderClientAddr: clientAddr, HeaderClientTLS: strconv.FormatBool(clientTLS)}
}

// Observe counts one forward of protocol with its outcome and how long
// the owner took to start answering.
func (f *Forwarder) Observe(protocol, outcome string, took time.Duration) {
	f.metrics.forwards.WithLabelValues(protocol, outcome).Inc()
	if outcome == OutcomeOK {
		f.metrics.latency.WithLabelValues(protocol).Observe(took.Seconds())
	}
}

// Outcomes of a forward.
const (
	OutcomeOK          = "ok"
	OutcomeUnknown     = "owner_unknown"     // no online worker has the owner id
	OutcomeUnreachable = "owner_unreachable" // the owner did not answer
	OutcomeUnproven    = "owner_unproven"    // the owner asked for the client's credentials without proving the secret
)
