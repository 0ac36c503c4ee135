// Command benchrelay is the floor of a Go proxy for scripts/bench-proxy.sh: it relays bytes
// between each client and the upstream with two goroutines (io.Copy each way) and looks at
// nothing: no protocol, no routing, no pooling. Whatever QueryFlux adds beyond this row is
// its own work; what this row adds over direct is the cost of a Go relay hop on the machine.
//
// determinism: outside the simulator (a benchmark tool)
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	upstream := flag.String("upstream", "127.0.0.1:5432", "address to relay to")
	flag.Parse()
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrelay:", err)
		os.Exit(1)
	}
	for {
		c, err := l.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchrelay:", err)
			os.Exit(1)
		}
		go relay(c, *upstream)
	}
}

func relay(client net.Conn, upstream string) {
	defer client.Close()
	server, err := net.Dial("tcp", upstream)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrelay:", err)
		return
	}
	defer server.Close()
	go func() {
		_, _ = io.Copy(server, client)
		_ = server.Close()
	}()
	_, _ = io.Copy(client, server)
}
