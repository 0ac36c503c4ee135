package chaos

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"
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

func init() { toxics.Register("qfsniff", new(sniffToxic)) }

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
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	l := &link{name: name, log: &tokenLog{clock: clock}, applied: map[string]bool{}}
	sniffMu.Lock()
	sniffers[name] = l.log
	sniffMu.Unlock()
	l.proxy = toxiproxy.NewProxy(proxyServer, name, addr, upstream)
	if err := l.proxy.Start(); err != nil {
		return nil, fmt.Errorf("proxy %s: %w", name, err)
	}
	if err := l.addSniffer(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *link) addr() string { return l.proxy.Listen }

func (l *link) close() {
	l.proxy.Stop()
	sniffMu.Lock()
	delete(sniffers, l.name)
	sniffMu.Unlock()
}

// apply makes the proxy match the wanted faults: a two-way partition closes the proxy (new
// connections refused, open ones cut); a one-way one stalls that direction (timeout toxic with
// no timeout); latency is a latency toxic per direction.
func (l *link) apply() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cutUp && l.cutDown {
		l.proxy.Stop()
		return nil
	}
	if !l.proxy.Enabled {
		if err := l.proxy.Start(); err != nil {
			return err
		}
	}
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
