package flightsql

import (
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/queryflux/queryflux/internal/netlimit"
)

// TestSilentHTTP2ConnectionClosed: a client that completes the HTTP/2 handshake and then makes
// no call (an attacker holding connection slots without ever authenticating) is disconnected
// once idle, as an HTTP keep-alive connection is.
func TestSilentHTTP2ConnectionClosed(t *testing.T) {
	addr := serveOn(t, Options{Auth: passwords{"alice": "pw"}, Limits: netlimit.Limits{IdleTimeout: 200 * time.Millisecond}})
	fr := h2Dial(t, addr)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("the server kept a silent HTTP/2 connection open")
			}
			return // closed
		}
		if s, ok := f.(*http2.SettingsFrame); ok && !s.IsAck() {
			if err := fr.WriteSettingsAck(); err != nil {
				return
			}
		}
	}
}

// TestStreamsPerConnectionBounded: the server announces a bound on concurrent calls per
// connection, so one connection cannot open unlimited streams.
func TestStreamsPerConnectionBounded(t *testing.T) {
	addr := serveOn(t, Options{Auth: passwords{"alice": "pw"}})
	fr := h2Dial(t, addr)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := f.(*http2.SettingsFrame); ok && !s.IsAck() {
			v, ok := s.Value(http2.SettingMaxConcurrentStreams)
			if !ok || v > streamsMax {
				t.Fatalf("SETTINGS_MAX_CONCURRENT_STREAMS: %d (announced: %v), want at most %d", v, ok, streamsMax)
			}
			return
		}
	}
}

// h2Dial opens an HTTP/2 connection to addr as a client does (preface, then SETTINGS) and
// returns a framer over it; reads fail after 30 s, a safety net, not a measure. The
// connection closes when the test ends.
func h2Dial(t *testing.T, addr string) *http2.Framer {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	if _, err := io.WriteString(nc, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(nc, nc)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	return fr
}
