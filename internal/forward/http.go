package forward

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"time"
)

// HeaderOwnerProof is an owner's answer to a forwarded request whose proof it found true: a MAC,
// keyed by the worker secret, over its owner id and that proof. A forwarder hands the client's
// credentials only to an owner that sent it (ProxyHTTP).
const HeaderOwnerProof = "X-Queryflux-Owner-Proof"

// credentialHeaders are what a client sends to prove who it is: forwarded only to an owner
// proven by HeaderOwnerProof.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "X-Trino-Extra-Credential"}

// ProxyHTTP sends r to the owner's endpoint for protocol and streams the owner's answer back
// as it comes. The forwarded request keeps the client's Host (so links the owner builds point
// at the address the client used) and carries the hop headers. The client's credentials are
// kept back: a request is sent first without them, and sent again with them only when the
// owner answers 401. What the client asked (method, path, headers, body) travels sealed
// (sealRequest), and an answer is passed on only when it carries HeaderOwnerProof (the owner
// holds the worker secret and took the proof): any other answer, a request for credentials
// included, gets the client 502 saying why. An owner that refuses the proof for its date and
// tells its clock is asked again once, dated by that clock. When the owner is unknown or does
// not answer, ProxyHTTP writes nothing and returns the error: the caller answers as for an
// unknown query.
func (f *Forwarder) ProxyHTTP(w http.ResponseWriter, r *http.Request, protocol, owner string) error {
	start := f.opts.Env.Now()
	base, err := f.Endpoint(r.Context(), owner, protocol)
	if err != nil {
		f.Observe(protocol, OutcomeUnknown, 0)
		return err
	}
	target, err := url.Parse(base)
	if err != nil {
		f.Observe(protocol, OutcomeUnknown, 0)
		return fmt.Errorf("forward: owner endpoint %q: %w", base, err)
	}
	x := &exchange{f: f, r: r, protocol: protocol, owner: owner, target: target, start: start, withheld: hasCredentials(r)}
	if r.Body != nil && r.Body != http.NoBody {
		// Sealed whole (and so sendable again): a Trino statement's body is bounded at 16 MiB.
		if x.body, err = io.ReadAll(io.LimitReader(r.Body, forwardedBodyMax+1)); err != nil || len(x.body) > forwardedBodyMax {
			f.Observe(protocol, OutcomeUnreachable, 0)
			return fmt.Errorf("forward: the client's body unread or larger than %d bytes: %v", forwardedBodyMax, err)
		}
		r.Body, r.ContentLength, r.GetBody = http.NoBody, 0, nil
	}
	for attempt := 0; attempt < 3; attempt++ {
		switch x.once(w) {
		case sentAgain:
			continue
		case unproven:
			f.Observe(protocol, OutcomeUnproven, 0)
			http.Error(w, fmt.Sprintf("the worker owning this query (at %s) did not prove it holds the fleet's worker secret: "+
				"its answer was not passed on, and your credentials were not forwarded to it", target.Host), http.StatusBadGateway)
			return nil
		case unanswered:
			f.Observe(protocol, OutcomeUnreachable, 0)
			return errors.Join(errors.New("forward: the owning worker did not answer"), x.failed)
		}
		return nil
	}
	return nil
}

// exchange is one request forwarded to its owner, over up to three sends.
type exchange struct {
	f                *Forwarder
	r                *http.Request
	protocol, owner  string
	target           *url.URL
	start            time.Time
	body             []byte // the client's request body, sealed into every send
	withheld         bool   // the client's credentials are not sent (yet)
	clockRetried     bool
	credentialsAsked bool
	failed           error
}

type sendResult int

const (
	answered   sendResult = iota // the owner's answer went to the client
	sentAgain                    // send once more
	unproven                     // the owner asked for credentials without proving the secret
	unanswered                   // x.failed says why
)

// errHeldBack stops an owner's answer that is not the client's from reaching it.
var errHeldBack = errors.New("forward: the owner's answer is not passed on")

// once sends the request and passes the owner's answer on, unless it is one ProxyHTTP acts on.
func (x *exchange) once(w http.ResponseWriter) sendResult {
	var sent string
	result := answered
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(x.target)
			pr.Out.Host = pr.In.Host
			for k, v := range x.f.Outbound(x.owner, x.target.String(), x.protocol, x.r.RemoteAddr, x.r.TLS != nil) { //determinism:ok sets headers
				pr.Out.Header.Set(k, v)
			}
			if x.withheld {
				for _, h := range credentialHeaders {
					pr.Out.Header.Del(h)
				}
			}
			sent = pr.Out.Header.Get(HeaderSecret)
			// Nothing the client asked is readable on the way: what answers at the owner's
			// address may not be the owner.
			x.f.sealRequest(pr.Out, x.owner, DialedAddress(x.target.String()), x.body)
		},
		Transport:     x.f.opts.Client.Transport,
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			if result = x.judge(resp, sent); result != answered {
				return errHeldBack
			}
			x.f.Observe(x.protocol, OutcomeOK, x.f.opts.Env.Now().Sub(x.start))
			return nil
		},
		ErrorHandler: func(_ http.ResponseWriter, _ *http.Request, err error) {
			if result == answered {
				result, x.failed = unanswered, err
			}
		},
	}
	rp.ServeHTTP(w, x.r)
	return result
}

// judge decides on the owner's answer to a request that carried proof sent: pass it on, send
// again (dated by the owner's clock; with the credentials, to a proven owner that asked for
// them), or refuse to send credentials to an owner that asked without proof.
func (x *exchange) judge(resp *http.Response, sent string) sendResult {
	switch {
	case !x.f.vouched(x.owner, sent, resp.Header.Get(HeaderOwnerProof)):
		// Not the owner's answer (a host at a stale address, or the owner refusing a relay): not
		// the client's either.
		return unproven
	case resp.StatusCode == http.StatusForbidden && !x.clockRetried &&
		x.f.learnClock(x.owner, sent, resp.Header.Get(HeaderPeerTime)):
		x.clockRetried = true
		return sentAgain
	case resp.StatusCode == http.StatusUnauthorized && x.withheld && !x.credentialsAsked:
		x.withheld, x.credentialsAsked = false, true
		return sentAgain
	}
	return answered
}

// hasCredentials reports whether r carries any of credentialHeaders.
func hasCredentials(r *http.Request) bool {
	for _, h := range credentialHeaders {
		if r.Header.Get(h) != "" {
			return true
		}
	}
	return false
}

// ownerMAC is the owner's proof of the secret, bound to the forwarder's proof it answers.
func ownerMAC(secret, owner, proof string) string {
	m := hmac.New(sha256.New, []byte(secret))
	for _, part := range []string{"queryflux forward owner v1", owner, proof} {
		m.Write([]byte(part))
		m.Write([]byte{0})
	}
	return hex.EncodeToString(m.Sum(nil))
}

// vouched reports whether got is owner's proof of the secret for the proof sent.
func (f *Forwarder) vouched(owner, sent, got string) bool {
	return got != "" && hmac.Equal([]byte(got), []byte(ownerMAC(f.opts.Secret, owner, sent)))
}

// Vouching wraps an owner's handler of forwarded requests that ask bind: the answer to one whose
// proof is true and names an address this worker advertises (dated in time or not) carries
// HeaderOwnerProof, so that its forwarder may send
// the client's credentials. Other requests pass untouched.
func (f *Forwarder) Vouching(bind string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token := r.Header.Get(HeaderSecret); token != "" && r.Header.Get(HeaderHop) != "" {
			tlsOn, _ := strconv.ParseBool(r.Header.Get(HeaderClientTLS))
			var ce *ClockError
			if err := f.proven(token, bind, r.Header.Get(HeaderPeerAddr), r.Header.Get(HeaderClientAddr), tlsOn); err == nil || errors.As(err, &ce) {
				w.Header().Set(HeaderOwnerProof, ownerMAC(f.opts.Secret, f.self, token))
			}
		}
		next.ServeHTTP(w, r)
	})
}

// OwnerProof is this worker's answer to a forwarded call whose proof (token) it took: a caller
// that does not answer HTTP (Flight SQL's DoGet) sends it back in its own headers.
func (f *Forwarder) OwnerProof(token string) string { return ownerMAC(f.opts.Secret, f.self, token) }

// Vouched reports whether got is owner's proof of the secret for the proof sent (OwnerProof).
func (f *Forwarder) Vouched(owner, sent, got string) bool { return f.vouched(owner, sent, got) }
