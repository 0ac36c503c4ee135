package worker

import (
	"crypto/tls"
	"net/http"
)

// idleConnsPerControlPlane is how many idle keep-alive connections a worker keeps to its
// control plane. Every query's lease acquire is one request, often several at once: Go's
// default of 2 would close the other connections after each burst and dial new ones (a TCP
// handshake on the query's path, and a new connection for the control plane to accept).
const idleConnsPerControlPlane = 256

// NewControlPlaneClient returns the *http.Client a worker talks to its control plane with,
// verifying an https control plane with tlsConfig (nil: the system's roots). It never sets
// Client.Timeout: deadlines come from env.WithTimeout contexts.
func NewControlPlaneClient(tlsConfig *tls.Config) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone() //determinism:ok the daemon's client; the simulator gives simnet's
	if tlsConfig != nil {
		t.TLSClientConfig = tlsConfig
	}
	t.MaxIdleConns = max(t.MaxIdleConns, idleConnsPerControlPlane)
	t.MaxIdleConnsPerHost = idleConnsPerControlPlane
	return &http.Client{Transport: t}
}
