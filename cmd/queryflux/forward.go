package main

// Forwarding between workers: a worker names itself in the query ids and tickets it issues,
// registers where its Trino and Flight SQL frontends take forwarded requests (the control plane
// lists them to peers), and sends follow-ups for other workers' queries to them
// (internal/forward).

import (
	"fmt"
	"maps"
	"net"
	"os"

	"github.com/queryflux/queryflux/internal/forward"
)

// workerEndpoints turns the frontends' bound addresses, and the ops listener's address opsAddr
// (which takes whole queries from peers), into the endpoints a worker registers:
// --advertise-host (else the listener's host, else the host name) with each bound port, over
// TLS when the worker has its own certificate (queryflux.tls). An ops listener on port 0 has no
// known port yet and is not registered.
func workerEndpoints(d *Daemon, opsAddr string) func(addrs map[string]string) (map[string]string, error) {
	secure := d.Config.QueryFlux.TLS.CertFile != ""
	return func(frontends map[string]string) (map[string]string, error) {
		addrs := map[string]string{}
		maps.Copy(addrs, frontends)
		if _, port, err := net.SplitHostPort(opsAddr); err == nil && port != "0" {
			addrs[forward.Query] = opsAddr
		}
		schemes := map[string][2]string{forward.Trino: {"http", "https"}, forward.FlightSQL: {"grpc+tcp", "grpc+tls"}, forward.Query: {"http", "https"}}
		endpoints := map[string]string{}
		for protocol, scheme := range schemes { //determinism:ok each key written once, order irrelevant
			addr, ok := addrs[protocol]
			if !ok {
				continue
			}
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, fmt.Errorf("frontend %s address %q: %w", protocol, addr, err)
			}
			if d.AdvertiseHost != "" {
				host = d.AdvertiseHost
			} else if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
				if host, err = os.Hostname(); err != nil {
					return nil, fmt.Errorf("--advertise-host not given and no host name: %w", err)
				}
			}
			s := scheme[0]
			if secure {
				s = scheme[1]
			}
			endpoints[protocol] = s + "://" + net.JoinHostPort(host, port)
		}
		return endpoints, nil
	}
}
