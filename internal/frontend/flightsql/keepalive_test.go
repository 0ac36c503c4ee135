package flightsql

import (
	"bytes"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/queryflux/queryflux/internal/netlimit"
)

// TestSilentClientWithACallOpenDropped: a client that opens a call and then goes silent (its
// network drops everything: no FIN, no RST, no answer to anything) keeps a stream open, so
// the idle close never applies; the server pings it and, the ping unanswered, closes the
// connection, ending the call with whatever it held.
func TestSilentClientWithACallOpenDropped(t *testing.T) {
	addr := serveOn(t, Options{Limits: netlimit.Limits{KeepaliveTime: time.Second, KeepaliveTimeout: 300 * time.Millisecond}})
	fr := h2Dial(t, addr)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/arrow.flight.protocol.FlightService/DoGet"},
		{":authority", addr}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
		if err := enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}); err != nil {
			t.Fatal(err)
		}
	}
	// The call's request never comes: its handler waits for the ticket, the stream open.
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	pings := 0
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the server kept the connection of a silent client with a call open (%d pings sent)", pings)
			}
			if pings == 0 {
				t.Fatalf("the connection closed (%v) without a ping first", err)
			}
			return // closed after its ping went unanswered
		}
		switch f := f.(type) {
		case *http2.PingFrame:
			if !f.IsAck() {
				pings++
			}
		case *http2.RSTStreamFrame:
			t.Fatalf("the call was reset (%v) before the client went silent", f.ErrCode)
		case *http2.HeadersFrame:
			if f.StreamEnded() {
				t.Fatal("the call ended before the client went silent")
			}
		}
		// Nothing is answered, not even SETTINGS: a silent network.
	}
}
