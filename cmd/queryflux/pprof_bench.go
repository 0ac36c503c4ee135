//go:build benchpprof

package main

// Built only with -tags benchpprof (scripts/bench-proxy.sh PROFILE=1): serves net/http/pprof
// on QUERYFLUX_PPROF (a loopback host:port) so the daemon can be profiled under load.

import (
	"net/http"
	_ "net/http/pprof"
	"os"
)

// startProfiling serves pprof when QUERYFLUX_PPROF names an address.
func startProfiling() {
	if addr := os.Getenv("QUERYFLUX_PPROF"); addr != "" {
		go func() { _ = http.ListenAndServe(addr, nil) }()
	}
}
