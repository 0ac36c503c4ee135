package main

// Forwarding between workers: a worker names itself in the query ids and tickets it issues,
// advertises where its Trino and Flight SQL frontends take forwarded requests (registered with
// the control plane, which lists them to peers), and sends follow-ups for other workers'
// queries to them (internal/forward).

import (
	"fmt"
	"net"
	"os"

	"github.com/queryflux/queryflux/internal/forward"
	"github.com/queryflux/queryflux/node/worker"
)

// newForwarder is a worker's forwarder: the shared worker secret authenticates it to its peers,
// and queryflux.controlPlane.tls verifies them.
func newForwarder(d *Daemon, w *worker.Worker) (*forward.Forwarder, error) {
	q := d.Config.QueryFlux
	clientTLS, err := controlPlaneTLS(q)
	if err != nil {
		return nil, err
	}
	return forward.New(forward.Options{Name: w.Name(), Secret: q.ControlPlane.Secret.Reveal(), Directory: w,
		TLS: clientTLS, Registerer: d.Metrics})
}

// advertiseEndpoints registers where peers reach this worker's Trino and Flight SQL frontends:
// --advertise-host (else the listener's host, else the host name) with each bound port, over
// TLS when the worker has its own certificate (queryflux.tls).
func advertiseEndpoints(d *Daemon, w *worker.Worker, addrs map[string]string) error {
	secure := d.Config.QueryFlux.TLS.CertFile != ""
	schemes := map[string][2]string{forward.Trino: {"http", "https"}, forward.FlightSQL: {"grpc+tcp", "grpc+tls"}}
	endpoints := map[string]string{}
	for protocol, scheme := range schemes {
		addr, ok := addrs[protocol]
		if !ok {
			continue
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return fmt.Errorf("frontend %s address %q: %w", protocol, addr, err)
		}
		if d.AdvertiseHost != "" {
			host = d.AdvertiseHost
		} else if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
			if host, err = os.Hostname(); err != nil {
				return fmt.Errorf("--advertise-host not given and no host name: %w", err)
			}
		}
		s := scheme[0]
		if secure {
			s = scheme[1]
		}
		endpoints[protocol] = s + "://" + net.JoinHostPort(host, port)
	}
	if len(endpoints) == 0 {
		return nil
	}
	return w.SetEndpoints(endpoints)
}
