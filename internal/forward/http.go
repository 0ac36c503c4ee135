package forward

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
)

// ProxyHTTP sends r to the owner's endpoint for protocol and streams the owner's answer back
// as it comes. The forwarded request keeps the client's Host (so links the owner builds point
// at the address the client used) and its credentials, and carries the hop headers. When the
// owner is unknown or does not answer, ProxyHTTP writes nothing and returns the error: the
// caller answers as for an unknown query.
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
	var failed error
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			for k, v := range f.Outbound(owner, protocol, r.RemoteAddr, r.TLS != nil) { //determinism:ok sets headers
				pr.Out.Header.Set(k, v)
			}
		},
		Transport:     f.opts.Client.Transport,
		FlushInterval: -1,
		ModifyResponse: func(*http.Response) error {
			f.Observe(protocol, OutcomeOK, f.opts.Env.Now().Sub(start))
			return nil
		},
		ErrorHandler: func(_ http.ResponseWriter, _ *http.Request, err error) { failed = err },
	}
	rp.ServeHTTP(w, r)
	if failed != nil {
		f.Observe(protocol, OutcomeUnreachable, 0)
		return errors.Join(errors.New("forward: the owning worker did not answer"), failed)
	}
	return nil
}
