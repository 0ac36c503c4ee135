// Command benchrelay is the floor of a Go proxy for scripts/bench-proxy.sh: it relays bytes
// between each client and the upstream with two goroutines (io.Copy each way) and looks at
// nothing: no protocol, no routing, no pooling. Whatever QueryFlux adds beyond this row is
// its own work; what this row adds over direct is the cost of a Go relay hop on the machine.
// With -loop it relays on an event loop instead (internal/relayloop: one OS thread in epoll,
// framing the server's messages and watching ReadyForQuery), the floor of an event-loop relay;
// -loop -raw frames nothing (bytes unseen, any protocol: the MySQL wire's floor).
// With -sockmap it relays MySQL connections in the kernel instead (internal/sockmap); with
// -sockmap-results it reads each request and splices only the answers.
// With -rtt it instead prints the p50 of a loopback TCP round trip (one byte each way, one
// connection, Go on both ends): the yardstick of the worker-path goal.
//
// determinism: outside the simulator (a benchmark tool)
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/queryflux/queryflux/internal/relayloop"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	upstream := flag.String("upstream", "127.0.0.1:5432", "address to relay to")
	loop := flag.Bool("loop", false, "relay on an event loop (internal/relayloop) instead of goroutines")
	raw := flag.Bool("raw", false, "with -loop: frame nothing (any protocol) instead of PostgreSQL's messages")
	useURing := flag.Bool("uring", false, "relay on one io_uring (multishot receives into provided buffers) instead of goroutines")
	hybrid := flag.Bool("hybrid", false, "relay with epoll for readiness and io_uring for each turn's reads (one enter) and writes (one enter)")
	peek := flag.Bool("peek", false, "with -uring: look for completions without blocking before each blocking wait, as the epoll loop does")
	minWait := flag.Uint("minwait", 0, "with -uring: wait for -batch completions for up to this many µs, then for one (batched wake-ups; kernel 6.12+)")
	batch := flag.Int("batch", 4, "with -uring -minwait: the completions a wait asks for")
	touchKB := flag.Int("touch", 0, "with -uring: write a byte in every cache line of a buffer this many KiB long on each completion (a relay with a larger memory footprint, for measurements)")
	flag.StringVar(&congestion, "cc", "", "with -loop: set this TCP congestion control (TCP_CONGESTION, e.g. reno, cubic) on both TCP sockets of a pair")
	splice := flag.Bool("sockmap", false, "relay MySQL connections in the kernel (internal/sockmap: a sockhash and an sk_skb verdict program; exit status 2 where BPF is refused)")
	results := flag.Bool("sockmap-results", false, "relay MySQL connections reading each request and splicing the answers in the kernel (internal/sockmap; with -loop the requests on the event loop; exit status 2 where BPF is refused)")
	verdictOnly := flag.Bool("sockmap-verdict-only", false, "with -sockmap: no stream parser (the verdict runs from sk_psock_verdict_data_ready)")
	rtt := flag.Duration("rtt", 0, "measure loopback round trips for this long instead, print the p50 in µs")
	spin := flag.Duration("spin", 0, "with -loop: the loop's waits spin for up to this long before they sleep, where the machine has idle CPU, as the daemon's loops do (its bound: QUERYFLUX_SPIN_MICROS, default 200µs); 0: never")
	flag.Parse()
	if *rtt > 0 {
		p50, err := roundTripP50(*rtt)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchrelay:", err)
			os.Exit(1)
		}
		fmt.Println(p50.Microseconds())
		return
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrelay:", err)
		os.Exit(1)
	}
	if *splice {
		runSockmap(l, *upstream, !*verdictOnly)
	}
	if *hybrid {
		runHybrid(l, *upstream, *raw)
	}
	if *useURing {
		touchBuf = make([]byte, *touchKB<<10)
		runURing(l, *upstream, *raw, *peek, uint32(*minWait), *batch)
	}
	var ev *relayloop.Loop
	if *loop {
		if ev, err = relayloop.NewWith(0, relayloop.BackendAuto, *spin); err != nil {
			fmt.Fprintln(os.Stderr, "benchrelay:", err)
			os.Exit(1)
		}
	}
	if *results {
		runSockResults(l, *upstream, ev)
	}
	for {
		c, err := l.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchrelay:", err)
			os.Exit(1)
		}
		if ev != nil {
			go relayOnLoop(ev, c, *upstream, *raw)
			continue
		}
		go relay(c, *upstream)
	}
}

// relayOnLoop hands the client and its upstream connection to the event loop; raw frames
// neither direction.
// An upstream "unix:PATH" is a Unix socket (an engine on the same host: no TCP/IP on that leg).
func relayOnLoop(ev *relayloop.Loop, client net.Conn, upstream string, raw bool) {
	network, addr := "tcp", upstream
	if path, ok := strings.CutPrefix(upstream, "unix:"); ok {
		network, addr = "unix", path
	}
	server, err := net.Dial(network, addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrelay:", err)
		_ = client.Close()
		return
	}
	a, err := relayloop.Detach(client.(syscall.Conn))
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrelay:", err)
		return
	}
	b, err := relayloop.Detach(server.(syscall.Conn))
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrelay:", err)
		_ = unix.Close(a)
		return
	}
	if congestion != "" {
		_ = unix.SetsockoptString(a, unix.IPPROTO_TCP, unix.TCP_CONGESTION, congestion)
		if network == "tcp" {
			_ = unix.SetsockoptString(b, unix.IPPROTO_TCP, unix.TCP_CONGESTION, congestion)
		}
	}
	var txStatus byte
	framing := [2]relayloop.Framer{nil, relayloop.PGWatching('Z')}
	if raw {
		framing[1] = nil
	}
	_, err = ev.Add(relayloop.Pair{A: a, B: b,
		Framing: framing,
		Watch: func(_ relayloop.Direction, msg []byte) relayloop.Verdict {
			txStatus = msg[len(msg)-1]
			return relayloop.Relay
		},
		Done: func(relayloop.Result) { _ = unix.Close(a); _ = unix.Close(b); _ = txStatus }})
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrelay:", err)
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

// roundTripP50 echoes one byte over a loopback connection for d and returns the median.
func roundTripP50(d time.Duration) (time.Duration, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		_, _ = io.Copy(c, c)
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		return 0, err
	}
	defer c.Close()
	var samples []time.Duration
	b := []byte{1}
	for end := time.Now().Add(d); time.Now().Before(end); {
		start := time.Now()
		if _, err := c.Write(b); err != nil {
			return 0, err
		}
		if _, err := io.ReadFull(c, b); err != nil {
			return 0, err
		}
		samples = append(samples, time.Since(start))
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	return samples[len(samples)/2], nil
}

// touchBuf (-touch) is memory the ring relay writes across on each completion: what a relay's
// memory footprint per message costs the processes that share its CPUs' caches.
var touchBuf []byte

// congestion (-cc) is the TCP congestion control -loop sets on a pair's TCP sockets ("": the
// system's default).
var congestion string
