package forward

// Sealed forwards. A forwarder cannot know, before it sends, that what answers at an owner's
// address is the owner: a peer list names an address a worker had (a stale entry, a host or pod
// IP taken over). So nothing a client asked travels readable between workers: a whole query's
// body (its SQL, user, session), a Trino follow-up's path (the query id, slug and token, which
// are enough to read the rows from the real owner), its headers (session properties, prepared
// statements' SQL) and body are sealed with AES-256-GCM under a key only holders of the worker
// secret derive, for the owner id and the address dialed, with a fresh salt. What answers at a
// stale address reads a salt and ciphertext; relayed to the real owner, the sealed request opens
// there but its proof names the address dialed, which the owner does not advertise (refused, no
// owner proof). And an owner's answer is passed on only with the owner's proof of the secret
// (HeaderOwnerProof), so whoever answers at that address cannot answer in the owner's place.

import (
	"bufio"
	"bytes"
	"crypto/cipher"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/queryflux/queryflux/internal/sealkey"
)

// MediaSealed is the Content-Type of a sealed body: a salt and AES-256-GCM ciphertext.
const MediaSealed = "application/vnd.queryflux.sealed"

// PathSealed is where a sealed follow-up goes (a POST); the owner's Unsealing opens it into the
// client's request.
const PathSealed = "/v1/queryflux/sealed"

// forwardedBodyMax bounds the body of a forwarded follow-up (a Trino statement's, 16 MiB), and
// sealedBytesMax a sealed follow-up: that body and its request.
const (
	forwardedBodyMax = 16 << 20
	sealedBytesMax   = forwardedBodyMax + 1<<20
)

const sealSaltBytes = 16

var sealNonce = make([]byte, 12) // each key is used once (a fresh salt), so one nonce serves

// sealAEAD is the cipher of what is sealed for owner at the address dialed with salt.
func sealAEAD(secret, owner, dialed string, salt []byte) cipher.AEAD {
	return sealkey.AEAD(secret, "queryflux forward seal v1", owner, dialed, string(salt))
}

// seal is plain sealed for owner at the address dialed: a fresh salt, then the ciphertext.
func (f *Forwarder) seal(owner, dialed string, plain []byte) []byte {
	salt := make([]byte, sealSaltBytes, sealSaltBytes+len(plain)+16)
	f.opts.Env.Rand().Read(salt)
	return sealAEAD(f.opts.Secret, owner, dialed, salt).Seal(salt, sealNonce, plain, nil)
}

// errUnsealable is a sealed body not sealed for this worker and the address named with the
// worker secret (or altered on the way).
var errUnsealable = errors.New("a sealed forward that does not open: not sealed for this worker, at the address named, with the fleet's worker secret")

// unseal opens what a forwarder sealed for this worker at the address dialed.
func (f *Forwarder) unseal(dialed string, sealed []byte) ([]byte, error) {
	if len(sealed) < sealSaltBytes+16 {
		return nil, errUnsealable
	}
	plain, err := sealAEAD(f.opts.Secret, f.self, dialed, sealed[:sealSaltBytes]).Open(nil, sealNonce, sealed[sealSaltBytes:], nil)
	if err != nil {
		return nil, errUnsealable
	}
	return plain, nil
}

// Seal seals plain for owner at endpoint (the owner's endpoint it is sent to, as to Outbound):
// what a forward carries outside HTTP (a Flight SQL DoGet's ticket and user) travels only so.
func (f *Forwarder) Seal(owner, endpoint string, plain []byte) []byte {
	return f.seal(owner, DialedAddress(endpoint), plain)
}

// Open opens what a forwarder sealed for this worker at dialed (the request's HeaderPeerAddr);
// an error when it was not sealed for this worker there with the worker secret, or was altered.
func (f *Forwarder) Open(dialed string, sealed []byte) ([]byte, error) {
	return f.unseal(dialed, sealed)
}

// sealedRequest is a follow-up as sealed: the client's request as the owner is to serve it.
type sealedRequest struct {
	Method   string      `json:"method"`
	Path     string      `json:"path"`
	RawPath  string      `json:"rawPath,omitempty"`
	RawQuery string      `json:"rawQuery,omitempty"`
	Header   http.Header `json:"header"`
}

// sealRequest turns out (a request ready for the owner at dialed, with its hop headers) into a
// sealed POST of PathSealed at the same host: what the client asked (method, path, query,
// headers, body) travels only inside it.
func (f *Forwarder) sealRequest(out *http.Request, owner, dialed string, body []byte) {
	meta, _ := json.Marshal(sealedRequest{Method: out.Method, Path: out.URL.Path, RawPath: out.URL.RawPath,
		RawQuery: out.URL.RawQuery, Header: out.Header}) // strings only: it cannot fail
	sealed := f.seal(owner, dialed, append(append(meta, '\n'), body...))
	out.Method = http.MethodPost
	out.URL.Path, out.URL.RawPath, out.URL.RawQuery = PathSealed, "", ""
	out.Header = http.Header{"Content-Type": {MediaSealed}, HeaderHop: {"1"}, HeaderPeerAddr: {dialed}}
	out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(sealed)), int64(len(sealed))
	out.GetBody = nil
}

// Unsealing wraps an owner's handler of forwarded follow-ups: a POST of PathSealed is opened and
// served as the request it seals (whose own proof the handler then checks, as for any forwarded
// request); one that does not open is refused 403. Other requests pass untouched.
func (f *Forwarder) Unsealing(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != PathSealed {
			next.ServeHTTP(w, r)
			return
		}
		inner, err := f.unsealRequest(r)
		if err != nil {
			f.metrics.received.WithLabelValues("refused").Inc()
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, inner)
	})
}

func (f *Forwarder) unsealRequest(r *http.Request) (*http.Request, error) {
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != MediaSealed {
		return nil, fmt.Errorf("a sealed forward is a POST of %s", MediaSealed)
	}
	sealed, err := io.ReadAll(io.LimitReader(r.Body, sealedBytesMax+1))
	if err != nil {
		return nil, fmt.Errorf("a sealed forward unread: %v", err)
	}
	if len(sealed) > sealedBytesMax {
		return nil, fmt.Errorf("a sealed forward larger than %d bytes", sealedBytesMax)
	}
	plain, err := f.unseal(r.Header.Get(HeaderPeerAddr), sealed)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReader(bytes.NewReader(plain))
	line, err := br.ReadBytes('\n')
	var sr sealedRequest
	if err != nil || json.Unmarshal(line, &sr) != nil || sr.Method == "" || sr.Path == "" {
		return nil, errors.New("a sealed forward whose request does not read")
	}
	body := plain[len(line):]
	inner := r.Clone(r.Context())
	inner.Method = sr.Method
	inner.URL.Path, inner.URL.RawPath, inner.URL.RawQuery = sr.Path, sr.RawPath, sr.RawQuery
	inner.RequestURI = inner.URL.RequestURI()
	inner.Header = sr.Header
	if inner.Header == nil {
		inner.Header = http.Header{}
	}
	inner.Body, inner.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	if len(body) == 0 {
		inner.Body = http.NoBody
	}
	return inner, nil
}
