//go:build !benchpprof

package main

// startProfiling does nothing: pprof is served only by builds with -tags benchpprof.
func startProfiling() {}
