//go:build !linux

package main

import (
	"fmt"
	"net"
	"os"
)

// runURing and runHybrid need io_uring: Linux only.
func runURing(net.Listener, string, bool, bool, uint32, int) {
	fmt.Fprintln(os.Stderr, "benchrelay: -uring needs Linux")
	os.Exit(1)
}

func runHybrid(net.Listener, string, bool) {
	fmt.Fprintln(os.Stderr, "benchrelay: -hybrid needs Linux")
	os.Exit(1)
}
