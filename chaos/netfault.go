package chaos

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"

	"github.com/queryflux/queryflux/internal/freeport"
)

// tokenLog is what the sniffer saw on one worker's link: each new session token a heartbeat
// carried towards the control plane, and when (scenario time). Tokens never leave this package.
type tokenLog struct {
	mu     sync.Mutex
	clock  func() time.Duration
	tokens []string
	at     []time.Duration
}

func (l *tokenLog) saw(token string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.tokens); n > 0 && l.tokens[n-1] == token {
		return
	}
	l.tokens = append(l.tokens, token)
	l.at = append(l.at, l.clock())
}

// last is the latest token seen at or before t.
func (l *tokenLog) last(t time.Duration) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	tok := ""
	for i, at := range l.at {
		if at <= t {
			tok = l.tokens[i]
		}
	}
	return tok
}

func (l *tokenLog) times() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Duration(nil), l.at...)
}

// sniffers maps a link name to its token log; the toxic finds it by its `link` attribute.
var (
	sniffMu  sync.Mutex
	sniffers = map[string]*tokenLog{}
)

func init() {
	toxics.Register("qfsniff", new(sniffToxic))
	toxics.Register("qffault", new(faultToxic))
}

// sniffToxic passes every byte through and notes the bearer token of heartbeat requests.
type sniffToxic struct {
	Link string `json:"link"`
}

var (
	heartbeatLine = []byte("POST /worker/heartbeat ")
	bearerHeader  = []byte("Authorization: Bearer ")
)

func (t *sniffToxic) Pipe(stub *toxics.ToxicStub) {
	sniffMu.Lock()
	log := sniffers[t.Link]
	sniffMu.Unlock()
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			if log != nil && bytes.Contains(c.Data, heartbeatLine) {
				if i := bytes.Index(c.Data, bearerHeader); i >= 0 {
					rest := c.Data[i+len(bearerHeader):]
					if j := bytes.IndexAny(rest, "\r\n"); j > 0 {
						log.saw(string(rest[:j]))
					}
				}
			}
			stub.Output <- c
		}
	}
}

// link is one worker's proxied connection to its control plane and the faults on it.
type link struct {
	name  string
	proxy *toxiproxy.Proxy
	log   *tokenLog

	up, down *dirFault // hold and drop, per direction (the qffault toxics read them)

	mu             sync.Mutex
	cutUp, cutDown bool // partitioned worker→control plane, control plane→worker
	latUp, latDown time.Duration
	jitUp, jitDown time.Duration
	applied        map[string]bool
}

var (
	proxyServerOnce sync.Once
	proxyServer     *toxiproxy.ApiServer
)

func newLink(name, upstream string, clock func() time.Duration) (*link, error) {
	proxyServerOnce.Do(func() {
		proxyServer = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	})
	addr, err := freeport.Loopback()
	if err != nil {
		return nil, err
	}
	l := &link{name: name, log: &tokenLog{clock: clock}, applied: map[string]bool{}, up: newDirFault(), down: newDirFault()}
	sniffMu.Lock()
	sniffers[name] = l.log
	faults[name+"/upstream"], faults[name+"/downstream"] = l.up, l.down
	sniffMu.Unlock()
	l.proxy = toxiproxy.NewProxy(proxyServer, name, addr, upstream)
	if err := l.proxy.Start(); err != nil {
		return nil, fmt.Errorf("proxy %s: %w", name, err)
	}
	// The fault toxics go first in the chain, before anything apply adds: what they hold back
	// or lose meets no other fault and is never seen by the sniffer.
	for _, stream := range []string{"upstream", "downstream"} {
		js := fmt.Sprintf(`{"name":"fault_%s","type":"qffault","stream":%q,"attributes":{"link":%q}}`, stream, stream, name+"/"+stream)
		if _, err := l.proxy.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
			return nil, fmt.Errorf("proxy %s: fault toxic: %w", name, err)
		}
	}
	if err := l.addSniffer(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *link) addr() string { return l.proxy.Listen }

func (l *link) close() {
	l.proxy.Stop()
	for _, f := range []*dirFault{l.up, l.down} {
		f.setHeld(false)
		f.setDrop(0)
	}
	sniffMu.Lock()
	delete(sniffers, l.name)
	delete(faults, l.name+"/upstream")
	delete(faults, l.name+"/downstream")
	sniffMu.Unlock()
}

// apply makes the proxy match the wanted faults: a partition stalls its direction (timeout
// toxic with no timeout), both directions for a two-way one, so a request waits out its
// timeout as one the simulator's partition swallows does (a refused connection would be a
// down process, and makes clients retry at once); latency is a latency toxic per direction.
func (l *link) apply() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	want := map[string]string{}
	if l.cutUp {
		want["cut_up"] = `{"name":"cut_up","type":"timeout","stream":"upstream","attributes":{"timeout":0}}`
	}
	if l.cutDown {
		want["cut_down"] = `{"name":"cut_down","type":"timeout","stream":"downstream","attributes":{"timeout":0}}`
	}
	if l.latUp > 0 {
		name := fmt.Sprintf("lat_up_%d_%d", l.latUp, l.jitUp)
		want[name] = latencyToxic(name, "upstream", l.latUp, l.jitUp)
	}
	if l.latDown > 0 {
		name := fmt.Sprintf("lat_down_%d_%d", l.latDown, l.jitDown)
		want[name] = latencyToxic(name, "downstream", l.latDown, l.jitDown)
	}
	for name := range l.applied {
		if _, keep := want[name]; !keep {
			_ = l.proxy.Toxics.RemoveToxic(context.Background(), name)
			delete(l.applied, name)
		}
	}
	added := false
	for name, js := range want {
		if l.applied[name] {
			continue
		}
		if _, err := l.proxy.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
			return fmt.Errorf("proxy %s: toxic %s: %w", l.name, name, err)
		}
		l.applied[name] = true
		added = true
	}
	if added {
		// The sniffer goes last in the chain: it must see only what passed the faults.
		_ = l.proxy.Toxics.RemoveToxic(context.Background(), "sniff")
		return l.addSniffer()
	}
	return nil
}

func (l *link) addSniffer() error {
	js := fmt.Sprintf(`{"name":"sniff","type":"qfsniff","stream":"upstream","attributes":{"link":%q}}`, l.name)
	if _, err := l.proxy.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
		return fmt.Errorf("proxy %s: sniffer: %w", l.name, err)
	}
	return nil
}

func latencyToxic(name, stream string, lat, jitter time.Duration) string {
	return fmt.Sprintf(`{"name":%q,"type":"latency","stream":%q,"attributes":{"latency":%d,"jitter":%d}}`,
		name, stream, lat.Milliseconds(), jitter.Milliseconds())
}

// faults maps "link/stream" to that direction's hold and drop; the qffault toxic finds its own
// by its `link` attribute.
var faults = map[string]*dirFault{}

// dirFault is one direction of a link: held (nothing passes until released, as the simulator's
// hold queues messages) and the probability of losing a message.
type dirFault struct {
	mu      sync.Mutex
	held    bool
	drop    float64
	changed chan struct{} // closed and replaced on every change
}

func newDirFault() *dirFault { return &dirFault{changed: make(chan struct{})} }

func (f *dirFault) setHeld(held bool) { f.update(func() { f.held = held }) }
func (f *dirFault) setDrop(p float64) { f.update(func() { f.drop = p }) }

func (f *dirFault) update(change func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change()
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *dirFault) state() (held bool, drop float64, changed chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held, f.drop, f.changed
}

// faultToxic applies a direction's hold and drop to every connection of the link.
//
// Hold: the toxic stops taking bytes, so they wait in the proxy's pipe and the sockets' buffers
// and pass in order on release, the sender's later close included: a request whose client gave
// up while held still reaches the server late, as a held message does in the simulator.
//
// Drop: an HTTP message (a request going up, a response coming down) is lost with the drop
// probability when it starts; that connection then carries nothing more in this direction, so
// the sender waits out its timeout as for a message the simulator's network lost. A TCP proxy
// cannot lose one message and keep the connection.
type faultToxic struct {
	Link string `json:"link"`
}

// lostCloseDelay is how long a connection that lost a message keeps its sender waiting after
// the other end closed: longer than any request timeout of a fleet under test, so the sender
// sees its own timeout, not the close.
const lostCloseDelay = time.Minute

// connFault is one connection's state: whether it lost a message, and when the close that
// followed is passed on.
type connFault struct {
	lost    bool
	closeAt time.Time
}

func (t *faultToxic) NewState() any { return new(connFault) }

var (
	requestStarts = [][]byte{[]byte("GET "), []byte("POST "), []byte("PUT "), []byte("DELETE "), []byte("HEAD "), []byte("PATCH ")}
	responseStart = []byte("HTTP/1.")
)

func startsMessage(data []byte) bool {
	if bytes.HasPrefix(data, responseStart) {
		return true
	}
	for _, p := range requestStarts {
		if bytes.HasPrefix(data, p) {
			return true
		}
	}
	return false
}

func (t *faultToxic) Pipe(stub *toxics.ToxicStub) {
	sniffMu.Lock()
	f := faults[t.Link]
	sniffMu.Unlock()
	conn, _ := stub.State.(*connFault)
	if conn == nil {
		conn = new(connFault)
	}
	for {
		if !conn.closeAt.IsZero() {
			select {
			case <-stub.Interrupt:
				return
			case <-time.After(time.Until(conn.closeAt)):
				stub.Close()
				return
			}
		}
		var held bool
		var drop float64
		var changed chan struct{}
		if f != nil {
			held, drop, changed = f.state()
		}
		if held {
			select {
			case <-stub.Interrupt:
				return
			case <-changed:
				continue
			}
		}
		select {
		case <-stub.Interrupt:
			return
		case <-changed:
			continue
		case c := <-stub.Input:
			if c == nil && conn.lost {
				conn.closeAt = time.Now().Add(lostCloseDelay)
				continue
			}
			if c == nil {
				stub.Close()
				return
			}
			if !conn.lost && drop > 0 && startsMessage(c.Data) && rand.Float64() < drop {
				conn.lost = true
			}
			if conn.lost {
				continue
			}
			stub.Output <- c
		}
	}
}

// fault is the hold and drop of one direction: up (worker→control plane) or down.
func (l *link) fault(up bool) *dirFault {
	if up {
		return l.up
	}
	return l.down
}
